// The leader's lease: a leader may act only while it has shown, on its own monotonic clock, that
// it was alive less than LEASE_MS ago. A process that is stopped (SIGSTOP, Ctrl-Z, a debugger, a
// paused VM) or whose event loop is blocked keeps its sockets open, so an open socket proves
// nothing; what the others go by is silence:
//  - the leader renews its lease every RENEW_MS from a timer, and at each renewal sends a beat
//    to every follower (leaderServer.ts) and rewrites its leader file (below);
//  - a follower that has heard nothing from its leader for LEASE_MS (a candidate that got no
//    welcome for LEASE_MS + RENEW_MS) takes the leader as gone and takes its socket over;
//  - the leader asks `check()` right before every set, every save and every announcement: when
//    more than LEASE_MS passed since its last renewal it acts no more (fencing) and steps down.
// A beat is sent when the lease is renewed, so it is received no earlier: a follower's LEASE_MS
// of silence ends no earlier than the leader's own lease. A renewal never revives a lease that
// ran out: the leader steps down instead.
//
// Why 5 s: the engine's longest synchronous stretch measured by `npm run bench` is tens of
// milliseconds (a 10,000-thread load: 22 ms); a timer of the engine fires late by 1.6 ms at the
// 99th percentile; an extension host busy in another extension for a few seconds is not rare.
// 5 s is 4 missed renewals, and keeps the takeover after a stall near 6 s (docs/reliability.md).
//
// The leader file `<name>.leader` ({term, pid, who, socket, renewedAt}) says who leads, since
// when, and when it last renewed (wall clock: for people, never for a decision): `status` and the
// windows name a silent engine with it. A new leader creates it (a temporary file renamed into
// place) with the next term; renewals write into its own file (its inode), so a stale leader's
// late renewal never lands in a newer leader's file.
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { errCode, token } from './files';
import * as z from '../util/zod';

/** How long a leader may go without renewing before the others take over. */
export const LEASE_MS = 5_000;
/** How often the leader renews (and beats). */
export const RENEW_MS = 1_000;

export type MonoClock = () => number;
const mono: MonoClock = () => performance.now();

/** The leader's own view of its lease, on its monotonic clock. */
export class Lease {
  private renewedAt: number;
  private lost: string | null = null;

  constructor(
    readonly leaseMs = LEASE_MS,
    private readonly now: MonoClock = mono,
  ) {
    this.renewedAt = now();
  }

  /** Renews, unless the lease ran out first (then it stays lost, and this returns false). */
  renew(): boolean {
    if (this.check() !== null) return false;
    this.renewedAt = this.now();
    return true;
  }

  /** Milliseconds since the last renewal. */
  sinceRenewalMs(): number {
    return this.now() - this.renewedAt;
  }

  /** Null while the lease holds; else why this engine may not act any more (and never again). */
  check(): string | null {
    if (this.lost !== null) return this.lost;
    const silent = this.sinceRenewalMs();
    if (silent > this.leaseMs) {
      this.lost =
        `this engine did not run for ${seconds(silent)} s, past its ${seconds(this.leaseMs)} s lease ` +
        '(stopped or blocked): another engine may lead now';
    }
    return this.lost;
  }

  /** Ends the lease now (the path was lost, the engine stops). */
  revoke(reason: string): void {
    this.lost ??= reason;
  }
}

export const seconds = (ms: number): string => (ms / 1000).toFixed(ms < 10_000 ? 1 : 0);

export const LeaderFileSchema = z.object({
  term: z.number().check(z.int(), z.nonnegative()),
  pid: z.number().check(z.int()),
  who: z.string().check(z.maxLength(200)),
  /** The leader's socket file (`dev:ino`). */
  socket: z.string(),
  /** When the term began and when it was last renewed (ms since the epoch). */
  since: z.number(),
  renewedAt: z.number(),
});
export type LeaderFile = z.infer<typeof LeaderFileSchema>;

/** Longest leader file read (it is one short JSON object). */
const MAX_LEADER_FILE = 4096;

/** The leader file, or null when there is none or it cannot be read as one. */
export async function readLeaderFile(path: string): Promise<LeaderFile | null> {
  let text: string;
  try {
    const fh = await fsp.open(path, 'r');
    try {
      const buf = Buffer.alloc(MAX_LEADER_FILE);
      const { bytesRead } = await fh.read(buf, 0, MAX_LEADER_FILE, 0);
      text = buf.subarray(0, bytesRead).toString('utf8');
    } finally {
      await fh.close();
    }
  } catch (e) {
    if (errCode(e) === 'ENOENT') return null;
    throw e;
  }
  try {
    // A renewal is written padded with spaces; a reader may see it half-written: null then.
    const parsed = LeaderFileSchema.safeParse(JSON.parse(text)); // JSON.parse skips the padding
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** The leader's own file: created with its term, renewed in place. */
export class LeaderFileWriter {
  private constructor(
    private readonly fh: FileHandle,
    private content: LeaderFile,
    private closed = false,
  ) {}

  get term(): number {
    return this.content.term;
  }

  /** Creates `path` anew (a temporary file renamed into place) for a term. */
  static async create(path: string, content: LeaderFile): Promise<LeaderFileWriter> {
    const tmp = `${path}.${token()}.tmp`;
    const fh = await fsp.open(tmp, 'wx', 0o600);
    try {
      await fh.write(line(content), 0);
      await fsp.rename(tmp, path);
    } catch (e) {
      await fh.close();
      await fsp.unlink(tmp).catch(() => undefined);
      throw e;
    }
    return new LeaderFileWriter(fh, content);
  }

  /** Writes the renewal time into this leader's own file (never another leader's). */
  async renew(at: number): Promise<void> {
    if (this.closed) return;
    this.content = { ...this.content, renewedAt: at };
    await this.fh.write(line(this.content), 0);
  }

  /** Closes the file; closing it again changes nothing (the handle's error is ignored). */
  async close(): Promise<void> {
    this.closed = true;
    await this.fh.close().catch(() => undefined);
  }
}

/**
 * The file's text: one JSON line padded with spaces to at least 512 characters, so a renewal
 * (as long: only `renewedAt` changes, and it keeps its 13 digits) overwrites it whole.
 */
function line(content: LeaderFile): string {
  return JSON.stringify(content).padEnd(512) + '\n';
}
