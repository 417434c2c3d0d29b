/** Newline-delimited JSON, the stdio `codex app-server` framing: one message per line. */
import { DEFAULT_MAX_MESSAGE_BYTES } from './framing';
import { FramedMessageReader, FramedMessageWriter, quietly, subscribe } from './framedMessages';
import { LineSplitter } from './lineSplitter';

export interface LineReaderOptions {
  /** Longest accepted line in bytes (without the newline). Default 64 MiB. */
  maxLineBytes?: number;
}

export class LineMessageReader extends FramedMessageReader {
  private readonly lines: LineSplitter;

  constructor(
    private readonly readable: NodeJS.ReadableStream,
    options: LineReaderOptions = {},
  ) {
    super('line reader', 'LineMessageReader');
    const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    // `trim` in handleFrame also removes a trailing CR (CRLF line endings).
    this.lines = new LineSplitter(
      maxLineBytes,
      (line) => this.handleFrame(line),
      (head) => this.reportMalformed(`line longer than ${maxLineBytes} bytes; skipping to the next newline`, head),
    );
  }

  protected attach(): void {
    const onEnd = () => this.onEnd();
    this.detach = subscribe(this.readable, {
      data: (chunk) => this.onData(chunk as Buffer | string),
      end: onEnd,
      close: onEnd,
      error: (err) => this.safeFireError(err),
    });
  }

  private onData(chunk: Buffer | string): void {
    try {
      this.lines.push(chunk);
    } catch (e) {
      // Defensive: nothing above should throw, but a reader must never die.
      this.safeFireError(e);
      this.lines.reset();
    }
  }

  private onEnd(): void {
    if (this.closed) return;
    // A final line without a trailing newline is still a frame.
    this.lines.end();
    this.fireClose();
  }

  override dispose(): void {
    this.lines.reset();
    super.dispose();
  }
}

export class LineMessageWriter extends FramedMessageWriter {
  constructor(private readonly writable: NodeJS.WritableStream) {
    super(writable, ['close', 'finish']);
  }

  protected notWritable(): string | null {
    const w = this.writable as NodeJS.WritableStream & { destroyed?: boolean; writableEnded?: boolean };
    return this.closed || w.destroyed || w.writableEnded ? 'the stream is closed' : null;
  }

  protected send(text: string, done: (err?: Error | null) => void): void {
    this.writable.write(`${text}\n`, done);
  }

  end(): void {
    quietly(() => this.writable.end()); // already ended or destroyed: nothing to do
  }
}
