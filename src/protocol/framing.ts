/**
 * Message framing for the Codex app-server.
 *
 * Two wire formats, both carrying JSON-RPC 2.0 shaped objects WITHOUT the `jsonrpc` field:
 *  - newline-delimited JSON (stdio `codex app-server`),
 *  - one JSON message per WebSocket frame (`--listen ws://…` and the daemon's control socket).
 *
 * Readers never throw and never stop on malformed input: each bad frame fires `onError` with a
 * short excerpt, bumps `malformedCount`, and the next frame is read normally.
 */
import type { WebSocket, RawData } from 'ws';
import {
  AbstractMessageReader,
  AbstractMessageWriter,
  Emitter,
  type DataCallback,
  type Disposable,
  type Event,
  type Message,
  type MessageReader,
  type MessageWriter,
} from 'vscode-jsonrpc/node';
import { EXCERPT_CHARS, excerpt, LineSplitter } from './lineSplitter';

/** Default cap for one line / one frame: 64 MiB. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export { excerpt } from './lineSplitter';

export type ValidationResult = { ok: true; message: Message } | { ok: false; reason: string };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checks that a parsed JSON value is a request, a response or a notification, and returns a copy
 * with `jsonrpc: "2.0"` added. Extra top-level fields (e.g. `emittedAtMs`) are kept.
 */
export function validateMessage(value: unknown): ValidationResult {
  if (!isPlainObject(value)) {
    const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    return { ok: false, reason: `JSON-RPC message must be an object, got ${kind}` };
  }
  const hasId = Object.prototype.hasOwnProperty.call(value, 'id') && value.id !== undefined;
  const id = value.id;
  const params = value.params;
  if (params !== undefined && params !== null && typeof params !== 'object') {
    return { ok: false, reason: `"params" must be an object or array, got ${typeof params}` };
  }
  if (Object.prototype.hasOwnProperty.call(value, 'method')) {
    if (typeof value.method !== 'string' || value.method.length === 0) {
      return { ok: false, reason: `"method" must be a non-empty string, got ${describeType(value.method)}` };
    }
    if (hasId && typeof id !== 'string' && typeof id !== 'number') {
      return { ok: false, reason: `request "id" must be a string or number, got ${describeType(id)}` };
    }
    return { ok: true, message: { ...value, jsonrpc: '2.0' } as Message };
  }
  // No method: must be a response.
  if (!hasId) {
    return { ok: false, reason: 'object is neither a request, a response nor a notification (no "method", no "id")' };
  }
  if (typeof id !== 'string' && typeof id !== 'number' && id !== null) {
    return { ok: false, reason: `response "id" must be a string, number or null, got ${describeType(id)}` };
  }
  const hasResult = Object.prototype.hasOwnProperty.call(value, 'result') && value.result !== undefined;
  const hasError = value.error !== undefined && value.error !== null;
  if (!hasResult && !hasError) {
    return { ok: false, reason: 'response has neither "result" nor "error"' };
  }
  if (hasError) {
    const err = value.error;
    if (!isPlainObject(err) || typeof err.code !== 'number' || typeof err.message !== 'string') {
      return { ok: false, reason: 'response "error" must be an object with a numeric "code" and a string "message"' };
    }
  }
  return { ok: true, message: { ...value, jsonrpc: '2.0' } as Message };
}

function describeType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v;
}

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

/**
 * Shared logic for both readers: parse, validate, count, dispatch; never throws.
 * `onMessageReceived` fires for every valid message before it is handed to the connection, with
 * all top-level fields intact (vscode-jsonrpc passes only `params` to notification handlers, so
 * this is where `emittedAtMs` can be observed).
 */
abstract class FramedMessageReader extends AbstractMessageReader implements MessageReader {
  private _malformedCount = 0;
  private _messageCount = 0;
  private callback: DataCallback | undefined;
  private readonly closing = new CloseOnce();
  private readonly receivedEmitter = new Emitter<Message>();

  /** Frames that were dropped (bad JSON, bad shape, over the size cap). */
  get malformedCount(): number {
    return this._malformedCount;
  }

  /** Valid messages delivered. */
  get messageCount(): number {
    return this._messageCount;
  }

  get onMessageReceived(): Event<Message> {
    return this.receivedEmitter.event;
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
    try {
      this.receivedEmitter.fire(v.message);
    } catch {
      // listeners' exceptions are already swallowed by Emitter; disposed emitter lands here
    }
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
    this.receivedEmitter.dispose();
    super.dispose();
  }
}

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

/** Shared writer logic: serialize, report failures as events + rejected promises, never throw. */
abstract class FramedMessageWriter extends AbstractMessageWriter implements MessageWriter {
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
  abstract end(): void;
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

function noop(): void {}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function rawDataToBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data as ArrayBuffer);
}

const WS_OPEN = 1;
const WS_CLOSED = 3;
/** Cap on frames buffered before listen() is called. */
const MAX_EARLY_EVENTS = 10_000;

/**
 * One JSON-RPC message per WebSocket frame (text; binary frames are decoded as UTF-8 too).
 * The size cap is the socket's own `maxPayload` (ws closes the socket with 1009 when exceeded;
 * that surfaces here as an error then close).
 */
export class WebSocketMessageReader extends FramedMessageReader {
  /** Frames/events that arrived before listen(), replayed in order by listen(). */
  private early:
    Array<{ kind: 'frame'; data: RawData } | { kind: 'error'; err: unknown } | { kind: 'close' }> | undefined = [];
  private earlyDropped = 0;
  private detach: (() => void) | undefined;

  /**
   * Subscribes to the socket at once: ws may deliver frames that arrived together with the
   * upgrade response before the owner gets to call listen(); those are buffered, not lost.
   */
  constructor(private readonly ws: WebSocket) {
    super();
    const onMessage = (data: RawData) => {
      if (this.early) {
        if (this.early.length >= MAX_EARLY_EVENTS) this.earlyDropped++;
        else this.early.push({ kind: 'frame', data });
        return;
      }
      this.onFrame(data);
    };
    const onClose = () => {
      if (this.early) this.early.push({ kind: 'close' });
      else this.fireCloseOnce();
    };
    const onError = (err: unknown) => {
      if (this.early) this.early.push({ kind: 'error', err });
      else this.safeFireError(err);
    };
    this.ws.on('message', onMessage);
    this.ws.on('close', onClose);
    this.ws.on('error', onError);
    this.detach = () => {
      this.ws.removeListener('message', onMessage);
      this.ws.removeListener('close', onClose);
      this.ws.removeListener('error', onError);
      this.ws.on('error', noop);
    };
    if (this.ws.readyState === WS_CLOSED) this.early?.push({ kind: 'close' });
  }

  protected get label(): string {
    return 'websocket reader';
  }

  /**
   * Text and binary frames alike must be UTF-8. The socket does not check text frames itself
   * (`skipUTF8Validation`): ws would close the whole connection on one bad frame, where a bad
   * frame here is dropped and reported like any other malformed frame.
   */
  private onFrame(data: RawData): void {
    let bytes: Buffer;
    let text: string;
    try {
      bytes = rawDataToBuffer(data);
    } catch (e) {
      this.reportMalformed(`undecodable frame: ${(e as Error).message}`);
      return;
    }
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      // The excerpt shows the bytes it can (U+FFFD for the others).
      this.reportMalformed('invalid UTF-8', bytes.subarray(0, 4 * EXCERPT_CHARS).toString('utf8'));
      return;
    }
    this.handleFrame(text);
  }

  listen(callback: DataCallback): Disposable {
    if (this.isListening) {
      throw new Error('WebSocketMessageReader.listen may be called only once');
    }
    this.setCallback(callback);
    const early = this.early ?? [];
    this.early = undefined;
    if (this.earlyDropped > 0) {
      this.reportMalformed(
        `${this.earlyDropped} frames arrived before listen() beyond the buffer of ${MAX_EARLY_EVENTS} and were dropped`,
      );
    }
    for (const ev of early) {
      if (ev.kind === 'frame') this.onFrame(ev.data);
      else if (ev.kind === 'error') this.safeFireError(ev.err);
      else this.fireCloseOnce();
    }
    return {
      dispose: () => {
        this.detach?.();
        this.detach = undefined;
        this.setCallback(undefined);
      },
    };
  }

  override dispose(): void {
    this.detach?.();
    this.detach = undefined;
    this.early = undefined;
    super.dispose();
  }
}

export class WebSocketMessageWriter extends FramedMessageWriter {
  private readonly onWsError = (err: unknown) => {
    this.fail(err, undefined);
  };
  private readonly onWsClose = () => this.fireCloseOnce();

  constructor(private readonly ws: WebSocket) {
    super();
    this.ws.on('error', this.onWsError);
    this.ws.on('close', this.onWsClose);
  }

  protected notWritable(): string | null {
    return this.ws.readyState === WS_OPEN ? null : `WebSocket is not open (readyState ${this.ws.readyState})`;
  }

  protected send(text: string, done: (err?: Error | null) => void): void {
    this.ws.send(text, { binary: false }, done);
  }

  /** Ends writing by closing the socket normally. */
  end(): void {
    try {
      if (this.ws.readyState === WS_OPEN || this.ws.readyState === 0) this.ws.close(1000, 'client end');
    } catch {
      // ignore
    }
  }

  override dispose(): void {
    this.ws.removeListener('error', this.onWsError);
    this.ws.removeListener('close', this.onWsClose);
    this.ws.on('error', noop);
    super.dispose();
  }
}
