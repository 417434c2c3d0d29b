// The one fake StateStore of the tests: in memory, a deep copy per save (as a file would hold it),
// and strict as the real stores are: a state that would not load back is refused at once, with the
// JSON file store's words. What a real disk may also do, a test turns on (its header says so): a
// slow load (`loadGate`), slow saves (`hold`/`open`), a full disk (`failing`); `onSave` sees each
// save as it is asked for. (A writer that dies, over any store, is the engine harness's crash.)
import { emptyState, type PersistedState } from '../../src/model/watch';
import { StateSerializer, type LoadResult, type StateStore } from '../../src/store/store';

export class MemoryStore implements StateStore {
  readonly location: string;
  saves = 0;
  /** The `changed` hint of the last save (undefined: every watch may have changed). */
  lastChanged: ReadonlySet<string> | undefined;
  /** While set, a save fails with this message (writing nothing): a full disk. */
  failing: string | null = null;
  /** Sees each save as it is asked for, before it is checked or lands. */
  onSave?: (state: PersistedState, changed?: ReadonlySet<string>) => void;
  /** What held saves wait for (null: saves are not held), and what opens it. */
  private gate: Promise<void> | null = null;
  private openGate: () => void = () => undefined;
  private readonly loadGate: Promise<void>;

  /** `loadGate`: loads wait for it (a slow disk at start). */
  constructor(
    public saved: PersistedState = emptyState(),
    options: { location?: string; loadGate?: Promise<void> } = {},
  ) {
    this.location = options.location ?? 'memory';
    this.loadGate = options.loadGate ?? Promise.resolve();
  }

  async load(): Promise<LoadResult> {
    await this.loadGate;
    return { state: structuredClone(this.saved), problem: null };
  }

  async save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void> {
    this.onSave?.(state, changed);
    try {
      new StateSerializer().changes(state); // every watch checked, as a first save would be
    } catch (err) {
      throw new Error(`refusing to save an invalid state to ${this.location}: ${String(err)}`, { cause: err });
    }
    if (this.failing !== null) throw new Error(this.failing);
    const copy = structuredClone(state);
    if (this.gate) await this.gate;
    this.saves += 1;
    this.lastChanged = changed && new Set(changed);
    this.saved = copy;
  }

  /** Saves from now on wait (a slow disk) until `open()`. */
  hold(): void {
    this.gate ??= new Promise<void>((resolve) => (this.openGate = resolve));
  }

  /** Lets the held saves land, in order, and the next ones straight through. */
  open(): void {
    this.gate = null;
    this.openGate();
  }
}
