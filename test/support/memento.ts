// A Memento as VS Code keeps one (globalState): values go through JSON.
import type { MementoLike } from '../../src/store/globalStateStore';

export class Memento implements MementoLike {
  readonly data = new Map<string, unknown>();
  get<T>(key: string): T | undefined {
    return this.data.get(key) as T | undefined;
  }
  update(key: string, value: unknown): Promise<void> {
    if (value === undefined) this.data.delete(key);
    else this.data.set(key, JSON.parse(JSON.stringify(value)));
    return Promise.resolve();
  }
  keys(): readonly string[] {
    return [...this.data.keys()];
  }
}
