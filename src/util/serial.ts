// The one primitive for serialized work (vscode-go's `utils/mutex.ts` is the model): a `Serial`
// runs each piece of work after every earlier one has settled. Failures reach the caller of `run`
// only: the next piece of work starts all the same. Work kept apart per key (one queue per thread)
// is src/util/workQueue.ts. Imports nothing.

export class Serial {
  private tail: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  /** Runs `work` after everything run before it has settled; resolves or rejects as `work` does. */
  run<T>(work: () => T | Promise<T>): Promise<T> {
    this.waiting += 1;
    const result = this.tail.then(work);
    const settle = () => {
      this.waiting -= 1;
    };
    this.tail = result.then(settle, settle);
    return result;
  }

  /** Nothing runs and nothing waits. */
  get idle(): boolean {
    return this.waiting === 0;
  }

  /** Resolves once everything run so far has settled. */
  drained(): Promise<void> {
    return this.tail.then(() => undefined);
  }
}

/**
 * Runs `work` on every item, at most `width` at a time, in the items' order; resolves when all
 * have, rejects with the first failure (no new item starts after it; those running finish). A
 * pass over 10,000 threads with every request in flight at once cost about twice the CPU of the
 * same requests a few at a time (bench memory-store): the client's and the daemon's queues grow,
 * and what each request leaves lives long enough to be promoted.
 */
export async function eachAtMost<T>(
  items: readonly T[],
  width: number,
  work: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const item = items[next++];
      try {
        await work(item);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
}
