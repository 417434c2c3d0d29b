// Taking over the runner's state file shared by every daemon (before 0.4.0 the default `--state`
// was one file whatever Codex home was watched). Each daemon now keeps a file of its own
// (src/runner/stateFile.ts); the first time a daemon's file is missing and the old shared file is
// there, the daemon's engine takes from it what is its own, once, and writes its new file at once:
//  - a watched thread is the daemon's when its rollout lies under the daemon's Codex home (that is
//    where Codex writes a thread's rollout); a thread without a known rollout, the disarms of
//    threads not watched and the global pause go with the file's owner;
//  - the owner is the daemon whose engine wrote the file last (the term stamped in its snapshot
//    names that engine's election); a file no elected engine wrote is the default Codex home's;
//  - the global pause also goes to any daemon that takes a thread: both runners showed it.
// The shared file is only read, never changed: nothing in it is lost, and a runner of another
// home takes its own threads from it later. A runner that takes nothing says so too.
import * as nodePath from 'node:path';
import { emptyState, type PersistedState } from '../model/watch';
import { exists } from './aside';
import { headOnDisk } from './snapshotHead';
import { readStateFile, type JsonFileStore } from './jsonFileStore';
import type { LoadResult, StateStore } from './store';

/** The daemon that takes: who it is, and where its threads' rollouts are. */
export interface Claimant {
  /** Its election's name (src/leader/naming.ts), or null (a private stdio daemon has none). */
  election: string | null;
  /** Its Codex home, as given and as its real path; empty when unknown (a daemon named by its URL). */
  homes: string[];
  /** Whether it is the daemon of the default Codex home (`$CODEX_HOME`, else `~/.codex`). */
  isDefault: boolean;
}

export interface Claim {
  /** What the claimant takes: its threads, their disarms, and the pause where it goes with them. */
  state: PersistedState;
  taken: string[];
  /** Watched threads left in the shared file for the daemons they belong to. */
  left: string[];
  /** Whether the claimant is the file's owner (see above). */
  owner: boolean;
}

/** Whether `file` lies inside the directory `dir`. */
function under(file: string, dir: string): boolean {
  const rel = nodePath.relative(dir, file);
  return rel !== '' && !rel.startsWith('..') && !nodePath.isAbsolute(rel);
}

/** What `me` takes of `shared`, whose snapshot names `lastWriter` (an election) as its last writer, or null. Pure. */
export function claimShared(shared: PersistedState, lastWriter: string | null, me: Claimant): Claim {
  const owner = lastWriter !== null ? lastWriter === me.election : me.isDefault;
  const state = emptyState();
  const taken: string[] = [];
  const left: string[] = [];
  for (const [id, w] of Object.entries(shared.watches)) {
    const rollout = w.rolloutPath;
    const mine = rollout !== null ? me.homes.some((home) => under(rollout, home)) : owner;
    if (!mine) {
      left.push(id);
      continue;
    }
    state.watches[id] = structuredClone(w);
    taken.push(id);
    if (Object.hasOwn(shared.disarmed, id)) state.disarmed[id] = shared.disarmed[id];
  }
  if (owner)
    for (const [id, at] of Object.entries(shared.disarmed))
      if (!Object.hasOwn(shared.watches, id)) state.disarmed[id] = at;
  if (owner || taken.length > 0) state.pausedAt = shared.pausedAt;
  return { state, taken, left, owner };
}

/** What a takeover did, for the runner's one line about it. */
export interface Takeover {
  /** The shared file read. */
  from: string;
  taken: string[];
  left: number;
  /** The global pause taken with it (ms since the epoch), or null. */
  pausedAt: number | null;
  /** Why nothing could be taken (the shared file cannot be read), else null. */
  unreadable: string | null;
}

/** The takeover in words. */
export function takeoverText(t: Takeover, to: string): string {
  if (t.unreadable !== null)
    return `state: ${to} is new; the shared state file ${t.from} could not be read (${t.unreadable}): nothing taken from it, and it is left as it is`;
  const took =
    t.taken.length > 0
      ? `took ${t.taken.length} watched thread${t.taken.length === 1 ? '' : 's'} of this daemon`
      : 'took no watched thread (none is of this daemon)';
  const paused = t.pausedAt !== null ? `, and its pause of every recovery (resume to undo)` : '';
  const left =
    t.left > 0 ? `; its ${t.left} other thread${t.left === 1 ? ' stays' : 's stay'} there for their own daemon` : '';
  return `state: ${took} from the shared state file ${t.from} into ${to}${paused}${left} (the shared file is left as it is)`;
}

/**
 * A store that, when its file is new and the shared file exists, starts from what `claimShared`
 * gives this daemon, writes it at once (so this happens once) and tells `onTakeover`.
 */
export class SharedTakeoverStore implements StateStore {
  constructor(
    private readonly inner: JsonFileStore,
    private readonly sharedPath: string,
    private readonly me: Claimant,
    private readonly onTakeover: (t: Takeover) => void,
  ) {}

  get location(): string {
    return this.inner.location;
  }

  async load(): Promise<LoadResult> {
    const fresh = !(await exists(this.inner.path)) && (await exists(this.sharedPath));
    const loaded = await this.inner.load();
    if (!fresh) return loaded;
    const stored = await readStateFile(this.sharedPath).catch((error: Error) => ({
      kind: 'unusable' as const,
      reason: error.message,
    }));
    if (stored.kind !== 'state') {
      await this.inner.save(loaded.state);
      const reason = stored.kind === 'missing' ? 'gone' : stored.reason;
      this.onTakeover({ from: this.sharedPath, taken: [], left: 0, pausedAt: null, unreadable: reason });
      return loaded;
    }
    const claim = claimShared(stored.state, (await headOnDisk(this.sharedPath)).term?.of ?? null, this.me);
    const state = loaded.state;
    for (const id of claim.taken) state.watches[id] ??= claim.state.watches[id];
    for (const [id, at] of Object.entries(claim.state.disarmed)) state.disarmed[id] ??= at;
    state.pausedAt ??= claim.state.pausedAt;
    await this.inner.save(state);
    this.onTakeover({
      from: this.sharedPath,
      taken: claim.taken,
      left: claim.left.length,
      pausedAt: claim.state.pausedAt,
      unreadable: null,
    });
    return { ...loaded, state, changed: claim.taken };
  }

  save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void> {
    return this.inner.save(state, changed);
  }

  async compact(): Promise<void> {
    await this.inner.compact();
  }

  async close(): Promise<void> {
    await this.inner.close();
  }
}
