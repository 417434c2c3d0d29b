/**
 * What every framed reader and writer shares (stdio lines, WebSocket frames): a reader parses,
 * validates, counts and dispatches each frame and never throws; a writer serializes and reports
 * each failure as an error event and a rejected promise.
 */
import type { DataCallback, Message, MessageReader, MessageWriter } from 'vscode-jsonrpc/node';
import { MessageReaderBase, MessageWriterBase } from './messageEvents';
import { validateMessage } from './framing';
import { excerpt } from './lineSplitter';

/** Fires an event; an emitter already disposed (an event late after dispose) is ignored. */
function fireSafely(fire: () => void): void {
  try {
    fire();
  } catch {
    // emitter already disposed
  }
}

/** A close event fired at most once, by a reader or a writer. */
class CloseOnce {
  private done = false;

  get closed(): boolean {
    return this.done;
  }

  fire(fireClose: () => void): void {
    if (this.done) return;
    this.done = true;
    fireSafely(fireClose);
  }
}

/** Shared logic for both readers: parse, validate, count, dispatch; never throws. */
export abstract class FramedMessageReader extends MessageReaderBase implements MessageReader {
  private _malformedCount = 0;
  private _messageCount = 0;
  private callback: DataCallback | undefined;
  private readonly closing = new CloseOnce();

  /** Frames that were dropped (bad JSON, bad shape, over the size cap). */
  get malformedCount(): number {
    return this._malformedCount;
  }

  /** Valid messages delivered. */
  get messageCount(): number {
    return this._messageCount;
  }

  protected get isListening(): boolean {
    return this.callback !== undefined;
  }

  protected setCallback(cb: DataCallback | undefined): void {
    this.callback = cb;
  }

  protected reportMalformed(reason: string, frame?: string): void {
    this._malformedCount++;
    const suffix = frame === undefined ? '' : `: ${JSON.stringify(excerpt(frame))}`;
    this.safeFireError(new Error(`${this.label}: dropped malformed frame (${reason})${suffix}`));
  }

  protected safeFireError(err: unknown): void {
    fireSafely(() => this.fireError(err instanceof Error ? err : new Error(String(err))));
  }

  protected fireCloseOnce(): void {
    this.closing.fire(() => this.fireClose());
  }

  protected get isClosed(): boolean {
    return this.closing.closed;
  }

  /** Parses one complete frame (already decoded text) and dispatches it. */
  protected handleFrame(text: string): void {
    const trimmed = text.trim();
    if (trimmed.length === 0) return;
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (e) {
      this.reportMalformed(`invalid JSON: ${(e as Error).message}`, trimmed);
      return;
    }
    const v = validateMessage(value);
    if (!v.ok) {
      this.reportMalformed(v.reason, trimmed);
      return;
    }
    this._messageCount++;
    const cb = this.callback;
    if (!cb) return;
    try {
      cb(v.message);
    } catch (e) {
      this.safeFireError(new Error(`${this.label}: message handler threw: ${(e as Error)?.message ?? String(e)}`));
    }
  }

  protected abstract get label(): string;

  override dispose(): void {
    this.callback = undefined;
    super.dispose();
  }
}

/** Shared writer logic: serialize, report failures as events + rejected promises, never throw. */
export abstract class FramedMessageWriter extends MessageWriterBase implements MessageWriter {
  private errorCount = 0;
  private readonly closing = new CloseOnce();

  protected fail(error: unknown, msg: Message | undefined): Error {
    const err = error instanceof Error ? error : new Error(String(error));
    this.errorCount++;
    fireSafely(() => this.fireError(err, msg, this.errorCount));
    return err;
  }

  protected fireCloseOnce(): void {
    this.closing.fire(() => this.fireClose());
  }

  protected get isClosed(): boolean {
    return this.closing.closed;
  }

  protected serialize(msg: Message): string | Error {
    try {
      const text = JSON.stringify(msg);
      if (typeof text !== 'string') return new Error('message is not serializable to JSON');
      return text;
    } catch (e) {
      return new Error(`cannot serialize message: ${(e as Error).message}`);
    }
  }

  /**
   * Serializes `msg` and hands it to `send` (once), settling on its callback. Never throws:
   * every failure is reported through the error event and a rejected promise.
   */
  write(msg: Message): Promise<void> {
    const text = this.serialize(msg);
    if (text instanceof Error) return Promise.reject(this.fail(text, msg));
    return new Promise<void>((resolve, reject) => {
      const notReady = this.notWritable();
      if (notReady !== null) {
        reject(this.fail(new Error(`cannot write: ${notReady}`), msg));
        return;
      }
      let settled = false;
      const done = (err?: Error | null) => {
        if (settled) return;
        settled = true;
        if (err) reject(this.fail(err, msg));
        else resolve();
      };
      try {
        this.send(text, done);
      } catch (e) {
        done(e instanceof Error ? e : new Error(String(e)));
      }
    });
  }

  /** Why nothing can be written now, or null. */
  protected abstract notWritable(): string | null;
  /** Writes one serialized message; calls `done` when it is out (or failed). */
  protected abstract send(text: string, done: (err?: Error | null) => void): void;
}

/** An error listener that ignores: kept on a stream or socket after dispose, so a late error cannot go uncaught. */
export function noop(): void {}
