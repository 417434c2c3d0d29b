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
  /** The line has grown past the cap: it is skipped, nothing of it is kept. */
  private overlong = false;

  constructor(
    private readonly cap: number,
    private readonly direction: 'forward' | 'backward',
  ) {}

  /** Adds bytes read next (after the part forwards, before it backwards); past the cap, the line is overlong. */
  add(bytes: Buffer): void {
    const total = this.length + bytes.length;
    if (this.overlong || total > this.cap) {
      this.clear();
      this.overlong = true;
      return;
    }
    this.reserve(total);
    bytes.copy(this.buf, this.direction === 'forward' ? this.length : this.buf.length - total);
    this.length = total;
  }

  /**
   * The whole line: the part with `seg`, its last (forwards) or first (backwards) bytes; null if it
   * is longer than the cap. A view, valid until the next call.
   */
  line(seg: Buffer): Buffer | null {
    if (this.overlong || this.length + seg.length > this.cap) return null;
    if (this.length === 0) return seg;
    const held = this.length;
    this.add(seg);
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

  /** Starts the next line. */
  clear(): void {
    this.length = 0;
    this.overlong = false;
  }

  private reserve(n: number): void {
    if (n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.min(this.cap, Math.max(n, 2 * this.buf.length, 4096)));
    const held = this.stored();
    held.copy(next, this.direction === 'forward' ? 0 : next.length - held.length);
    this.buf = next;
  }
}
