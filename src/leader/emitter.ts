// How the leader layer tells its users what happened: a log callback, an unsubscribe handle, and
// a typed event emitter whose listeners' exceptions are logged, never propagated.
export type Log = (message: string) => void;
export type Unsubscribe = () => void;

export class Emitter<T> {
  private readonly listeners = new Set<(value: T) => void>();

  constructor(
    private readonly log: Log,
    private readonly label: string,
  ) {}

  on(cb: (value: T) => void): Unsubscribe {
    this.listeners.add(cb);
    return () => void this.listeners.delete(cb);
  }

  fire(value: T): void {
    for (const cb of [...this.listeners]) this.call(cb, value);
  }

  /** Calls one listener (subscribed or not): its exception is logged, never propagated. */
  call(cb: (value: T) => void, value: T): void {
    try {
      cb(value);
    } catch (e) {
      this.log(`${this.label} threw: ${(e as Error)?.message ?? String(e)}`);
    }
  }

  clear(): void {
    this.listeners.clear();
  }
}
