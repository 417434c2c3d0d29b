// Taking over from a leader: what the new leader knows of the old one's watches.
//
// A follower keeps the latest snapshot the leader pushed. When it becomes the leader, its own
// store may know nothing of those threads (a runner with its own state file, a window whose
// globalState never saw the runner's work), and an engine that first sees a goal already blocked
// never adopts it. So the new leader starts from its store merged with that snapshot: for each
// thread, the copy most recently changed (`updatedAt`; a tie keeps the store's, the durable
// write-ahead record), with the failed turns already recovered joined from both (one recovery per
// failed turn holds across engines), and the user's global pause as the leader last had it.
// Everything else is read again from the daemon by the engine, as after any restart.
import { EngineSnapshotSchema, type EngineSnapshot } from '../model/snapshot';
import { RECOVERED_LIMIT, type PersistedState, type WatchedThread } from '../model/watch';
import type { LoadResult, StateStore } from '../store/store';

/** The leader's last snapshot, if the value is one (a follower receives it as unknown JSON). */
export function parseSnapshot(value: unknown): EngineSnapshot | null {
  const parsed = EngineSnapshotSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}

export interface Handover {
  state: PersistedState;
  /** Threads whose copy came from the leader's snapshot. */
  taken: string[];
}

/** `stored` merged with the old leader's `snapshot` (neither is modified). */
export function mergeLeaderSnapshot(stored: PersistedState, snapshot: EngineSnapshot): Handover {
  const state = structuredClone(stored);
  const taken: string[] = [];
  for (const theirs of snapshot.watches) {
    const mine = state.watches[theirs.threadId];
    const recovered = joinRecovered(mine?.recovered ?? [], theirs.recovered);
    if (!mine || theirs.updatedAt > mine.updatedAt) {
      const copy: WatchedThread = { ...structuredClone(theirs), recovered };
      state.watches[theirs.threadId] = copy;
      taken.push(theirs.threadId);
      if (copy.state.kind === 'disarmed') state.disarmed[copy.threadId] = copy.state.at;
      else if (mine) delete state.disarmed[copy.threadId]; // re-armed on the leader
    } else {
      mine.recovered = recovered;
    }
  }
  state.pausedAt = snapshot.pausedAt;
  return { state, taken };
}

/** Both lists, in order, without repeats, the newest `RECOVERED_LIMIT` kept. */
function joinRecovered(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = [];
  for (const id of [...a, ...b]) if (!out.includes(id)) out.push(id);
  return out.slice(-RECOVERED_LIMIT);
}

/** A store whose first load is merged with the old leader's snapshot; saves go to `inner`. */
export class HandoverStore implements StateStore {
  constructor(
    private readonly inner: StateStore,
    private snapshot: EngineSnapshot | null,
    private readonly onTaken?: (taken: string[]) => void,
  ) {}

  get location(): string {
    return this.inner.location;
  }

  async load(): Promise<LoadResult> {
    const loaded = await this.inner.load();
    const snapshot = this.snapshot;
    this.snapshot = null; // a later load (there is none today) reads the store alone
    if (!snapshot) return loaded;
    const { state, taken } = mergeLeaderSnapshot(loaded.state, snapshot);
    if (taken.length > 0) this.onTaken?.(taken);
    // Every thread of the snapshot (each one is in the merged state) may differ from the store now
    // (taken, or its recovered turns joined); the global pause and the disarms are compared at
    // every save.
    const changed = snapshot.watches.map((w) => w.threadId);
    return { state, problem: loaded.problem, changed };
  }

  save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void> {
    return this.inner.save(state, changed);
  }

  async compact(): Promise<void> {
    await this.inner.compact?.();
  }

  /** Lets go of the files `inner` holds open, writing nothing (a stale leader's stop). */
  async close(): Promise<void> {
    await this.inner.close?.();
  }
}
