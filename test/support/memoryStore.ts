// An in-memory StateStore for unit tests of the core: saves a deep copy, like a file would.
import { emptyState, type PersistedState } from '../../src/model/watch';
import type { LoadResult, StateStore } from '../../src/store/store';

export class MemoryStore implements StateStore {
  readonly location = 'memory';
  saves = 0;
  constructor(public saved: PersistedState = emptyState()) {}

  async load(): Promise<LoadResult> {
    return { state: structuredClone(this.saved), problem: null };
  }

  async save(state: PersistedState): Promise<void> {
    this.saves += 1;
    this.saved = structuredClone(state);
  }
}
