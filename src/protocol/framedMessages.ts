/**
 * What every framed reader and writer shares (stdio lines, WebSocket frames): a reader parses,
 * validates, counts and dispatches each frame and never throws; a writer serializes and reports
 * each failure as an error event and a rejected promise.
 */
import type { DataCallback, Disposable, Message, MessageReader, MessageWriter } from 'vscode-jsonrpc/node';
import { MessageReaderBase, MessageWriterBase } from './messageEvents';
import { validateMessage } from './framing';
import { excerpt } from './lineSplitter';

type Listener = (...args: unknown[]) => void;

/** A stream or a socket, as far as the readers and writers listen to it. */
export interface EventSource {
  on(event: string, listener: Listener): unknown;
  removeListener(event: string, listener: Listener): unknown;
}

/** Adds each listener to `source`; returns what removes them again. */
export function subscribe(source: EventSource, listeners: Record<string, Listener>): () => void {
  for (const [event, listener] of Object.entries(listeners)) source.on(event, listener);
  return () => {
    for (const [event, listener] of Object.entries(listeners)) source.removeListener(event, listener);
  };
}

/** An error listener that ignores: kept on a stream or socket after dispose, so a late error cannot go uncaught. */
export function noop(): void {}

/**
 * Runs `fn`, ignoring what it throws: an emitter already disposed (an event late after dispose), a
 * socket, stream or child already gone, a listener's failure.
 */
export function quietly(fn: () => void): void {
  try {
    fn();
  } catch {
    // nothing to do
  }
}

/** Shared logic for both readers: parse, validate, count, dispatch; never throws. */
export abstract class FramedMessageReader extends MessageReaderBase implements MessageReader {
  private _malformedCount = 0;
  private _messageCount = 0;
  private callback: DataCallback | undefined;
  /** Removes the reader's listeners from its stream or socket. */
  protected detach: (() => void) | undefined;

  /** `label` starts each error message; `name` is the class's, for a second listen(). */
  constructor(
    private readonly label: string,
    private readonly name: string,
  ) {
    super();
  }

  /** Frames that were dropped (bad JSON, bad shape, over the size cap). */
  get malformedCount(): number {
    return this._malformedCount;
  }

  /** Valid messages delivered. */
  get messageCount(): number {
    return this._messageCount;
  }

  listen(callback: DataCallback): Disposable {
    if (this.callback !== undefined) throw new Error(`${this.name}.listen may be called only once`);
    this.callback = callback;
    this.attach();
    return { dispose: () => this.stop() };
  }

  /** Starts reading, once listen() has set the callback. */
  protected abstract attach(): void;

  private stop(): void {
    this.detach?.();
    this.detach = undefined;
    this.callback = undefined;
  }

  protected reportMalformed(reason: string, frame?: string): void {
    this._malformedCount++;
    const suffix = frame === undefined ? '' : `: ${JSON.stringify(excerpt(frame))}`;
    this.safeFireError(new Error(`${this.label}: dropped malformed frame (${reason})${suffix}`));
  }

  protected safeFireError(err: unknown): void {
    quietly(() => this.fireError(err instanceof Error ? err : new Error(String(err))));
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

  override dispose(): void {
    this.stop();
    super.dispose();
  }
}

/** Shared writer logic: serialize, report failures as events + rejected promises, never throw. */
export abstract class FramedMessageWriter extends MessageWriterBase implements MessageWriter {
  private errorCount = 0;
  private readonly detach: () => void;

  /**
   * Listens to `source`'s errors (an 'error' listener is required: without one, EPIPE on a dead
   * child's stdin would crash us) and to its `closeEvents`, until dispose.
   */
  constructor(
    private readonly source: EventSource,
    closeEvents: string[],
  ) {
    super();
    const onClose = () => this.fireClose();
    const listeners: Record<string, Listener> = { error: (err) => void this.fail(err, undefined) };
    for (const event of closeEvents) listeners[event] = onClose;
    this.detach = subscribe(source, listeners);
  }

  protected fail(error: unknown, msg: Message | undefined): Error {
    const err = error instanceof Error ? error : new Error(String(error));
    this.errorCount++;
    quietly(() => this.fireError(err, msg, this.errorCount));
    return err;
  }

  /**
   * Serializes `msg` and hands it to `send` (once), settling on its callback. Never throws:
   * every failure is reported through the error event and a rejected promise.
   */
  write(msg: Message): Promise<void> {
    let text: string | undefined;
    try {
      text = JSON.stringify(msg);
    } catch (e) {
      return Promise.reject(this.fail(new Error(`cannot serialize message: ${(e as Error).message}`), msg));
    }
    if (typeof text !== 'string')
      return Promise.reject(this.fail(new Error('message is not serializable to JSON'), msg));
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

  override dispose(): void {
    this.detach();
    // Keep a no-op error listener so a late error (EPIPE) cannot become an uncaught exception.
    this.source.on('error', noop);
    super.dispose();
  }
}
