// The election's options: what its user may set, the defaults of the rest, and what is refused
// before anything runs (Windows, whose named pipes are not supported; a name that is not 1–64 of
// [A-Za-z0-9_-]).
import type { Log } from './emitter';
import { LEASE_MS } from './lease';

export interface LeaderElectionOptions {
  /** Private directory: created 0700 if missing; refused if not ours or group/world-writable. */
  dir: string;
  /** The socket's base name, e.g. a hash of the daemon target: [A-Za-z0-9_-], 1–64 characters. */
  name: string;
  /** Delay before trying again after an inconclusive attempt. Default 1000 ms. */
  retryMs?: number;
  /** How often a leader checks that the socket path is still its own. Default 1000 ms. */
  checkMs?: number;
  /** Timeout of the connect that tells a live leader from a dead one. Default 2000 ms. */
  connectTimeoutMs?: number;
  /** Default timeout of follower commands. Default 30 s. */
  commandTimeoutMs?: number;
  /** Diagnostics (role changes, takeovers, malformed lines). */
  log?: Log;
  /** What kind of engine this is, told to followers in the welcome (e.g. "runner"). */
  who?: string;
  /** The lease (lease.ts). Default LEASE_MS; a test of the lease itself may shorten it, and says why. */
  leaseMs?: number;
}

/** The options with every default filled in (`who` has none). */
export type ElectionSettings = Required<Omit<LeaderElectionOptions, 'who'>> & Pick<LeaderElectionOptions, 'who'>;

/** The settings of `opts`; throws on Windows, and on an invalid name. */
export function electionSettings(opts: LeaderElectionOptions): ElectionSettings {
  if (process.platform === 'win32') {
    throw new Error('leader election: Unix sockets in a private directory are not available on Windows');
  }
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(opts.name)) {
    throw new Error(
      `leader election: invalid name ${JSON.stringify(opts.name)} (use 1–64 of [A-Za-z0-9_-], e.g. a hash)`,
    );
  }
  return {
    ...opts,
    retryMs: opts.retryMs ?? 1000,
    checkMs: opts.checkMs ?? 1000,
    connectTimeoutMs: opts.connectTimeoutMs ?? 2000,
    commandTimeoutMs: opts.commandTimeoutMs ?? 30_000,
    log: opts.log ?? (() => {}),
    leaseMs: opts.leaseMs ?? LEASE_MS,
  };
}
