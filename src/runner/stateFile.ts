// Where the runner keeps its state: one file per daemon. The default is
// `$XDG_STATE_HOME/codex-goal-recovery/state-<12 hex>.json` (else under ~/.local/state), the hex
// a hash of the daemon's address as its leader election names it (src/leader/naming.ts), so two
// Codex homes never share a file. Every snapshot is stamped with that address, and a file stamped
// for another daemon is refused (src/store/jsonFileStore.ts: an explicit `--state` shared by two
// daemons). The file every daemon shared before 0.4.0, `state.json` in the same directory, is
// taken over by each daemon's first runner, for what in it is that daemon's
// (src/store/sharedTakeover.ts).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { daemonHash, electionFor, electionKey } from '../leader/naming';
import { defaultCodexHome } from '../protocol/socketSafety';
import type { TransportTarget } from '../protocol/transport';
import { OtherDaemonError } from '../store/daemonStamp';
import { headOnDisk } from '../store/snapshotHead';
import { JsonFileStore } from '../store/jsonFileStore';
import { SharedTakeoverStore, takeoverText, type Claimant, type Takeover } from '../store/sharedTakeover';
import type { StateStore } from '../store/store';
import type { WriteGuard } from '../store/guard';

/** `$XDG_STATE_HOME/codex-goal-recovery`, else `~/.local/state/codex-goal-recovery`. */
export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME?.trim() || path.join(env.HOME?.trim() || os.homedir(), '.local', 'state');
  return path.join(base, 'codex-goal-recovery');
}

/** The one state file every daemon's runner shared before 0.4.0 (taken over, never written). */
export function sharedStatePath(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(stateDir(env), 'state.json');
}

/**
 * The address a state file is kept for: the election's key (a socket's path, a URL), or for a
 * private stdio child `stdio:` and its Codex home (its threads are that home's).
 */
export function daemonKey(target: TransportTarget): string {
  return electionKey(target) ?? `stdio:${targetHome(target) ?? ''}`;
}

/** The default state file of the daemon `target` reaches. */
export function defaultStatePath(target: TransportTarget, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(stateDir(env), `state-${daemonHash(daemonKey(target))}.json`);
}

/**
 * The Codex home of the daemon `target` reaches, when it can be told: a socket at
 * `<home>/app-server-control/app-server-control.sock`, a stdio child's `CODEX_HOME`; null for a URL.
 */
export function targetHome(target: TransportTarget): string | null {
  switch (target.kind) {
    case 'socket': {
      const dir = path.dirname(path.resolve(target.path));
      return path.basename(target.path) === 'app-server-control.sock' && path.basename(dir) === 'app-server-control'
        ? path.dirname(dir)
        : null;
    }
    case 'stdio':
      return defaultCodexHome(target.env ?? process.env);
    case 'url':
      return null;
  }
}

/** Who takes from the shared file for `target` (see src/store/sharedTakeover.ts). */
export function claimant(target: TransportTarget, env: NodeJS.ProcessEnv = process.env): Claimant {
  const home = targetHome(target);
  const homes = home === null ? [] : [home];
  if (home !== null) {
    try {
      const real = fs.realpathSync(home);
      if (real !== home) homes.push(real);
    } catch {
      // a home that is not there (yet): its rollouts are named by the path as given
    }
  }
  return {
    election: electionFor(target)?.name ?? null,
    homes,
    isDefault: home !== null && path.resolve(home) === defaultCodexHome(env),
  };
}

/**
 * Why `statePath` cannot be this daemon's (its snapshot is stamped for another), or null. Read
 * before the runner joins the election: a follower would find out only when it takes over.
 */
export async function otherDaemonProblem(statePath: string, target: TransportTarget): Promise<string | null> {
  const { daemon } = await headOnDisk(statePath);
  const mine = daemonKey(target);
  return daemon !== null && daemon !== mine ? new OtherDaemonError(statePath, daemon, mine).message : null;
}

export interface RunnerStoreOptions {
  statePath: string;
  /** Whether the path is the default one: only that takes over the shared file. */
  defaultPath: boolean;
  target: TransportTarget;
  guard: WriteGuard;
  /** The takeover's one line, when there is one. */
  onTakeover: (text: string, takeover: Takeover) => void;
}

/** The runner's store for one term: the daemon's file, stamped, taking over the shared file once. */
export function runnerStore(opts: RunnerStoreOptions, env = process.env): StateStore {
  const file = new JsonFileStore(opts.statePath, { guard: opts.guard, daemon: daemonKey(opts.target) });
  if (!opts.defaultPath) return file;
  return new SharedTakeoverStore(file, sharedStatePath(env), claimant(opts.target, env), (t) =>
    opts.onTakeover(takeoverText(t, opts.statePath), t),
  );
}
