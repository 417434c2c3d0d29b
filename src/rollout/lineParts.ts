// A line that spans chunks, assembled in one reused buffer (both lookup directions).

/**
 * The part of a line read so far when the line spans chunks, kept in one buffer that is reused
 * from line to line and grows (by doubling) up to the line cap: assembling lines allocates
 * nothing per line, so memory stays at `chunkSize + maxLineBytes` without garbage piling up.
 * Going forwards the part is a line's start and later bytes go after it; going backwards it
 * is a line's end and earlier bytes go before it.
 */
export class LineParts {
  private buf: Buffer = Buffer.alloc(0);
  /** Bytes held. */
  length = 0;

  constructor(
    private readonly cap: number,
    private readonly direction: 'forward' | 'backward',
  ) {}

  /** Adds bytes read next (after the part forwards, before it backwards); false if the line would exceed the cap. */
  add(bytes: Buffer): boolean {
    const total = this.length + bytes.length;
    if (total > this.cap) return false;
    this.reserve(total);
    bytes.copy(this.buf, this.direction === 'forward' ? this.length : this.buf.length - total);
    this.length = total;
    return true;
  }

  /**
   * The whole line: the part with `seg`, its last (forwards) or first (backwards) bytes. A view, valid
   * until the next call.
   */
  line(seg: Buffer): Buffer {
    if (this.length === 0) return seg;
    const held = this.length;
    if (!this.add(seg)) throw new RangeError('line longer than the cap'); // callers check first
    const line = this.stored();
    this.length = held;
    return line;
  }

  /** The bytes held, as a view. */
  stored(): Buffer {
    return this.direction === 'forward'
      ? this.buf.subarray(0, this.length)
      : this.buf.subarray(this.buf.length - this.length);
  }

  clear(): void {
    this.length = 0;
  }

  private reserve(n: number): void {
    if (n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.min(this.cap, Math.max(n, 2 * this.buf.length, 4096)));
    const held = this.stored();
    held.copy(next, this.direction === 'forward' ? 0 : next.length - held.length);
    this.buf = next;
  }
}
