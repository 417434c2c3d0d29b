// The extension's store: the watch state in VS Code's globalState (a Memento), under a
// namespaced, versioned key. Machine state is never synced across machines. A value that
// cannot be read is kept aside under its own key and reported, never silently dropped; a value
// with a few bad records is kept aside too, and the rest of it is used.
import type { PersistedState } from '../model/watch';
import { emptyState } from '../model/watch';
import { parsePersisted, partialLoadProblem, type LoadResult, type StateStore } from './store';

/** The part of vscode.Memento this store uses (so it can be tested without VS Code). */
export interface MementoLike {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
  keys(): readonly string[];
}

export const STATE_KEY = 'codexGoalRecovery.state';
export const CORRUPT_PREFIX = 'codexGoalRecovery.state.corrupt.';
/** A larger value is not loaded (globalState lives in memory in every window). */
export const MAX_STATE_CHARS = 16 * 1024 * 1024;

export class GlobalStateStore implements StateStore {
  readonly location = `VS Code globalState "${STATE_KEY}"`;

  constructor(private readonly memento: MementoLike, private readonly now: () => number = Date.now) {}

  async load(): Promise<LoadResult> {
    const raw = this.memento.get<unknown>(STATE_KEY);
    if (raw === undefined) return { state: emptyState(), problem: null };
    let error: string | null = null;
    let size = 0;
    try {
      size = JSON.stringify(raw)?.length ?? 0;
    } catch (e) {
      error = `not serializable (${e instanceof Error ? e.message : String(e)})`;
    }
    if (error === null && size > MAX_STATE_CHARS) error = `too large (${size} characters; the limit is ${MAX_STATE_CHARS})`;
    if (error === null) {
      const parsed = parsePersisted(raw, this.now);
      if ('state' in parsed) {
        if (parsed.dropped.length === 0) return { state: parsed.state, problem: null };
        // Keep the value as it was, then store the part that can be used.
        const aside = this.asideKey();
        await this.memento.update(aside, raw);
        await this.save(parsed.state);
        return { state: parsed.state, problem: partialLoadProblem('the stored watch state', parsed, `the value as it was is kept as "${aside}"`) };
      }
      error = parsed.error;
    }
    const aside = this.asideKey();
    await this.memento.update(aside, raw);
    await this.memento.update(STATE_KEY, undefined);
    return { state: emptyState(), problem: `the stored watch state could not be used: ${error}; kept aside as "${aside}"; starting clean` };
  }

  /** A key not in use yet: two bad values in the same millisecond must not overwrite each other. */
  private asideKey(): string {
    const base = `${CORRUPT_PREFIX}${new Date(this.now()).toISOString()}`;
    const taken = new Set(this.memento.keys());
    for (let n = 0; ; n++) {
      const key = n === 0 ? base : `${base}-${n}`;
      if (!taken.has(key)) return key;
    }
  }

  async save(state: PersistedState): Promise<void> {
    await this.memento.update(STATE_KEY, structuredClone(state));
  }
}
