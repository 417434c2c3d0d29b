// One JSON message per WebSocket frame: `--listen ws://…` and the daemon's control socket.
import { FramedMessageReader, FramedMessageWriter, noop, quietly, subscribe, type EventSource } from './framedMessages';
import { EXCERPT_CHARS } from './lineSplitter';

/** A frame's data as a WebSocket hands it over (ours: a Buffer; the `ws` package may split it). */
type RawData = Buffer | ArrayBuffer | Buffer[];

/**
 * What the framing needs of a WebSocket: the product's client (webSocketClient.ts) or, in tests,
 * the `ws` package's. Their events: 'message' (data, isBinary), 'error', 'close'.
 */
export interface FrameSocket extends EventSource {
  readonly readyState: number;
  send(data: string, opts: { binary: boolean }, done: (err?: Error) => void): void;
  close(code: number, reason: string): void;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A frame's bytes, however the socket delivered them (ws: a Buffer per message by default). */
export function rawDataToBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
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
  /** What arrived before listen() (frames, errors, the close), replayed in order by listen(). */
  private early: (() => void)[] | undefined = [];
  private earlyDropped = 0;

  /**
   * Subscribes to the socket at once: ws may deliver frames that arrived together with the
   * upgrade response before the owner gets to call listen(); those are buffered, not lost.
   */
  constructor(ws: FrameSocket) {
    super('websocket reader', 'WebSocketMessageReader');
    const handle = (event: () => void) => (this.early ? this.early.push(event) : event());
    const detach = subscribe(ws, {
      message: (data) => {
        if (this.early && this.early.length >= MAX_EARLY_EVENTS) this.earlyDropped++;
        else handle(() => this.onFrame(data as RawData));
      },
      close: () => handle(() => this.fireClose()),
      error: (err) => handle(() => this.safeFireError(err)),
    });
    this.detach = () => {
      detach();
      ws.on('error', noop);
    };
    if (ws.readyState === WS_CLOSED) this.early?.push(() => this.fireClose());
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

  protected attach(): void {
    const early = this.early ?? [];
    this.early = undefined;
    if (this.earlyDropped > 0) {
      this.reportMalformed(
        `${this.earlyDropped} frames arrived before listen() beyond the buffer of ${MAX_EARLY_EVENTS} and were dropped`,
      );
    }
    for (const event of early) event();
  }

  override dispose(): void {
    this.early = undefined;
    super.dispose();
  }
}

export class WebSocketMessageWriter extends FramedMessageWriter {
  constructor(private readonly ws: FrameSocket) {
    super(ws, ['close']);
  }

  protected notWritable(): string | null {
    return this.ws.readyState === WS_OPEN ? null : `WebSocket is not open (readyState ${this.ws.readyState})`;
  }

  protected send(text: string, done: (err?: Error | null) => void): void {
    this.ws.send(text, { binary: false }, done);
  }

  /** Ends writing by closing the socket normally. */
  end(): void {
    if (this.ws.readyState === WS_OPEN || this.ws.readyState === 0) quietly(() => this.ws.close(1000, 'client end'));
  }
}
