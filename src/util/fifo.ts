// A first-in first-out queue whose take is O(1) at any length. (`Array.prototype.shift` moves
// every element left: with 10,000 messages waiting, as when 10,000 threads are armed at once,
// taking them one by one cost more than handling them.)
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The oldest item, removed; undefined when empty. */
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined; // let go of it at once
    // Drop the taken slots once they are half the array (amortized O(1)); empty: start over.
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}
