/** Newline-delimited JSON, the stdio `codex app-server` framing: one message per line. */
import type { DataCallback, Disposable } from 'vscode-jsonrpc/node';
import { DEFAULT_MAX_MESSAGE_BYTES } from './framing';
import { FramedMessageReader, FramedMessageWriter, noop } from './framedMessages';
import { LineSplitter } from './lineSplitter';

export interface LineReaderOptions {
  /** Longest accepted line in bytes (without the newline). Default 64 MiB. */
  maxLineBytes?: number;
}

/** Newline-delimited JSON reader (stdio `codex app-server`). */
export class LineMessageReader extends FramedMessageReader {
  private readonly maxLineBytes: number;
  private readonly lines: LineSplitter;
  private detach: (() => void) | undefined;

  constructor(
    private readonly readable: NodeJS.ReadableStream,
    options: LineReaderOptions = {},
  ) {
    super();
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    // `trim` in handleFrame also removes a trailing CR (CRLF line endings).
    this.lines = new LineSplitter(
      this.maxLineBytes,
      (line) => this.handleFrame(line),
      (head) => this.reportMalformed(`line longer than ${this.maxLineBytes} bytes; skipping to the next newline`, head),
    );
  }

  protected get label(): string {
    return 'line reader';
  }

  listen(callback: DataCallback): Disposable {
    if (this.isListening) {
      throw new Error('LineMessageReader.listen may be called only once');
    }
    this.setCallback(callback);
    const onData = (chunk: Buffer | string) => this.onData(chunk);
    const onEnd = () => this.onEnd();
    const onError = (err: unknown) => this.safeFireError(err);
    this.readable.on('data', onData);
    this.readable.on('end', onEnd);
    this.readable.on('close', onEnd);
    this.readable.on('error', onError);
    this.detach = () => {
      this.readable.removeListener('data', onData);
      this.readable.removeListener('end', onEnd);
      this.readable.removeListener('close', onEnd);
      this.readable.removeListener('error', onError);
    };
    return {
      dispose: () => {
        this.detach?.();
        this.detach = undefined;
        this.setCallback(undefined);
      },
    };
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
    if (this.isClosed) return;
    // A final line without a trailing newline is still a frame.
    this.lines.end();
    this.fireCloseOnce();
  }

  override dispose(): void {
    this.detach?.();
    this.detach = undefined;
    this.lines.reset();
    super.dispose();
  }
}

/** Newline-delimited JSON writer (stdio `codex app-server`). */
export class LineMessageWriter extends FramedMessageWriter {
  private readonly onStreamError = (err: unknown) => {
    this.fail(err, undefined);
  };
  private readonly onStreamClose = () => this.fireCloseOnce();

  constructor(private readonly writable: NodeJS.WritableStream) {
    super();
    // An 'error' listener is required: without one, EPIPE on a dead child's stdin would crash us.
    this.writable.on('error', this.onStreamError);
    this.writable.on('close', this.onStreamClose);
    this.writable.on('finish', this.onStreamClose);
  }

  protected notWritable(): string | null {
    const w = this.writable as NodeJS.WritableStream & { destroyed?: boolean; writableEnded?: boolean };
    return this.isClosed || w.destroyed || w.writableEnded ? 'the stream is closed' : null;
  }

  protected send(text: string, done: (err?: Error | null) => void): void {
    this.writable.write(`${text}\n`, done);
  }

  end(): void {
    try {
      this.writable.end();
    } catch {
      // already ended / destroyed
    }
  }

  override dispose(): void {
    this.writable.removeListener('close', this.onStreamClose);
    this.writable.removeListener('finish', this.onStreamClose);
    // Keep a no-op error listener so a late EPIPE cannot become an uncaught exception.
    this.writable.removeListener('error', this.onStreamError);
    this.writable.on('error', noop);
    super.dispose();
  }
}
