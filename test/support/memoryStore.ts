// An in-memory StateStore for unit tests of the core: saves a deep copy, like a file would.
import { emptyState, type PersistedState } from '../../src/model/watch';
import type { LoadResult, StateStore } from '../../src/store/store';

export class MemoryStore implements StateStore {
  readonly location = 'memory';
  saves = 0;
  /** The `changed` hint of the last save (undefined: every watch may have changed). */
  lastChanged: ReadonlySet<string> | undefined;
  constructor(public saved: PersistedState = emptyState()) {}

  load(): Promise<LoadResult> {
    return Promise.resolve({ state: structuredClone(this.saved), problem: null });
  }

  save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void> {
    this.saves += 1;
    this.lastChanged = changed && new Set(changed);
    this.saved = structuredClone(state);
    return Promise.resolve();
  }
}
