// Newline-delimited text in bounded memory: the one line assembler behind the daemon's stdio
// framing and the windows' leader channel.

export const EXCERPT_CHARS = 120;

/** A short, single-line excerpt of a bad frame or line for a message. */
export function excerpt(text: string, max = EXCERPT_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/**
 * Splits chunks into lines. A line longer than `maxLineBytes` is never buffered whole: it is
 * reported once (with its first bytes) and skipped up to the next newline.
 */
export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** True while skipping the rest of an over-long line. */
  private discarding = false;

  constructor(
    private readonly maxLineBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onOverlong: (head: string) => void,
  ) {}

  push(chunk: Buffer | string): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    for (let start = 0; start < buf.length;) {
      const nl = buf.indexOf(0x0a, start);
      this.append(buf.subarray(start, nl === -1 ? buf.length : nl));
      if (nl === -1) break;
      this.endOfLine();
      start = nl + 1;
    }
  }

  /** End of stream: a last line without a newline still counts. */
  end(): void {
    if (this.pendingBytes > 0 && !this.discarding) this.endOfLine();
    this.reset();
  }

  reset(): void {
    this.pending = [];
    this.pendingBytes = 0;
    this.discarding = false;
  }

  private append(part: Buffer): void {
    if (part.length === 0 || this.discarding) return;
    if (this.pendingBytes + part.length > this.maxLineBytes) {
      const head = Buffer.concat([...this.pending, part.subarray(0, EXCERPT_CHARS)])
        .subarray(0, EXCERPT_CHARS)
        .toString('utf8');
      this.reset();
      this.discarding = true;
      this.onOverlong(head);
      return;
    }
    // Copy: the chunk may be a slice of a pooled buffer the stream reuses.
    this.pending.push(Buffer.from(part));
    this.pendingBytes += part.length;
  }

  private endOfLine(): void {
    if (this.discarding) {
      this.discarding = false;
      return;
    }
    const line = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    this.reset();
    this.onLine(line.toString('utf8'));
  }
}
