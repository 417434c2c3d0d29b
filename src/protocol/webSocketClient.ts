// A WebSocket client (RFC 6455), the part this product uses: connect (to a loopback `ws://` URL,
// or `ws+unix://<socket path>:/` for the daemon's control socket), one message per text or binary
// frame (fragments joined), ping answered, close handshake, a size cap (close 1009), no
// extensions (no compression is ever asked for). The `ws` package's client did this with 33 KiB of
// the extension's bundle, most of it for servers, redirects, proxies and browsers' event API.
// Its events are ws's, so the transport (webSocketTransport.ts) and the framing
// (webSocketFraming.ts) read the same: 'open', 'message' (data, isBinary), 'error', 'close'
// (code, reason), 'unexpected-response' (request, response).
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import * as http from 'node:http';
import * as net from 'node:net';
import type { Socket } from 'node:net';

export interface WebSocketClientOptions {
  /** A message (all its fragments) larger than this closes the connection with 1009. */
  maxPayload: number;
  /** The opening handshake's timeout, ms. */
  handshakeTimeout: number;
}

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const CONNECTING = 0;
const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;

/** A protocol error: said with 'error', then the connection is closed with `code`. */
class FrameError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

export class WebSocketClient extends EventEmitter {
  static readonly CLOSED = CLOSED;

  readyState = CONNECTING;
  private socket: Socket | null = null;
  private request: http.ClientRequest | null;
  private buffered: Buffer = Buffer.alloc(0);
  /** The message being received: its opcode and fragments so far. */
  private fragments: Buffer[] = [];
  private fragmentOpcode = 0;
  private fragmentBytes = 0;
  private closeSent = false;
  private closeCode = 1006;
  private closeReason = Buffer.alloc(0);
  private closedEmitted = false;

  constructor(
    address: string,
    private readonly opts: WebSocketClientOptions,
  ) {
    super();
    const key = randomBytes(16).toString('base64');
    const unix = /^ws\+unix:\/\/(.+):(\/.*)$/.exec(address);
    // Where to connect, in the request's own options as `ws` gives them: VS Code's extension host
    // wraps http.request (its proxy support) and leaves a request with a `socketPath` alone, and
    // one to a loopback host direct; the connection itself is made here, by net.connect (no pool).
    let target: http.RequestOptions;
    let to: net.NetConnectOpts;
    if (unix) {
      target = { socketPath: unix[1], path: unix[2] };
      to = { path: unix[1] };
    } else {
      const url = new URL(address);
      if (url.protocol !== 'ws:') throw new Error(`not a ws:// or ws+unix:// address: ${address}`);
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1'); // [::1] → ::1
      const port = Number(url.port || 80);
      target = { host, port, path: `${url.pathname}${url.search}` };
      to = { host, port };
    }
    const req = http.request({
      ...target,
      headers: { Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': key },
      timeout: opts.handshakeTimeout,
      createConnection: () => net.connect(to),
    });
    this.request = req;
    req.on('timeout', () => this.abort(new Error('Opening handshake has timed out')));
    req.on('error', (err) => this.abort(err));
    req.on('response', (res) => {
      if (this.emit('unexpected-response', req, res)) return;
      this.abort(new Error(`Unexpected server response: ${res.statusCode ?? '?'}`));
    });
    req.on('upgrade', (res, socket, head) => {
      this.request = null;
      const accept = createHash('sha1')
        .update(key + GUID)
        .digest('base64');
      if (res.headers['sec-websocket-accept'] !== accept) {
        socket.destroy();
        return this.abort(new Error('Invalid Sec-WebSocket-Accept header'));
      }
      if (res.headers['sec-websocket-extensions'] !== undefined) {
        socket.destroy();
        return this.abort(new Error('Server sent a Sec-WebSocket-Extensions header but none was asked for'));
      }
      this.opened(socket, head);
    });
    req.end();
  }

  /** Sends one text (or binary) message as a single masked frame. */
  send(data: string | Buffer, opts: { binary?: boolean } = {}, done?: (err?: Error) => void): void {
    if (this.readyState !== OPEN) {
      const err = new Error(`WebSocket is not open: readyState ${this.readyState}`);
      if (done) queueMicrotask(() => done(err));
      return;
    }
    const payload = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    this.socket!.write(frame(opts.binary ? 0x2 : 0x1, payload), (err) => done?.(err ?? undefined));
  }

  /** Starts the closing handshake (or gives up connecting). */
  close(code = 1000, reason = ''): void {
    if (this.givenUp()) return;
    if (this.readyState === OPEN) this.readyState = CLOSING;
    this.sendClose(code, reason);
  }

  /** Drops the connection at once (or gives up connecting). */
  terminate(): void {
    if (this.givenUp()) return;
    this.readyState = CLOSING;
    this.socket?.destroy();
  }

  /** True when there is no open connection to close: closed already, or still connecting (given up now). */
  private givenUp(): boolean {
    if (this.readyState === CONNECTING)
      this.abort(new Error('WebSocket was closed before the connection was established'));
    return this.readyState === CLOSED;
  }

  private opened(socket: Socket, head: Buffer): void {
    this.socket = socket;
    this.readyState = OPEN;
    socket.setNoDelay(true);
    socket.setTimeout(0);
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('error', (err) => this.emit('error', err));
    socket.on('end', () => socket.end());
    socket.on('close', () => this.emitClose());
    this.emit('open');
    if (head.length > 0) this.received(head);
  }

  /** A failed connect: 'error', then 'close' (1006). */
  private abort(err: Error): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    const req = this.request;
    this.request = null;
    req?.removeAllListeners('response');
    req?.on('error', () => undefined);
    req?.destroy();
    this.emit('error', err);
    this.emitClose();
  }

  private received(chunk: Buffer): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    try {
      while (this.readyState === OPEN || this.readyState === CLOSING) {
        if (!this.nextFrame()) break;
      }
    } catch (e) {
      const err = e instanceof FrameError ? e : new FrameError(String(e), 1002);
      this.buffered = Buffer.alloc(0);
      this.closeCode = err.code;
      this.emit('error', err);
      this.readyState = CLOSING;
      this.sendClose(err.code, '');
      this.socket?.end();
    }
  }

  /** Reads one whole frame from the buffer, if there is one. */
  private nextFrame(): boolean {
    const b = this.buffered;
    if (b.length < 2) return false;
    const fin = (b[0] & 0x80) !== 0;
    const opcode = b[0] & 0x0f;
    if ((b[0] & 0x70) !== 0) throw new FrameError('Invalid WebSocket frame: RSV bits must be clear', 1002);
    if ((b[1] & 0x80) !== 0) throw new FrameError('Invalid WebSocket frame: a server frame must not be masked', 1002);
    let length = b[1] & 0x7f;
    let offset = 2;
    if (length === 126) {
      if (b.length < 4) return false;
      length = b.readUInt16BE(2);
      offset = 4;
    } else if (length === 127) {
      if (b.length < 10) return false;
      const high = b.readUInt32BE(2);
      if (high > 0x1fffff) throw new FrameError('Max payload size exceeded', 1009);
      length = high * 2 ** 32 + b.readUInt32BE(6);
      offset = 10;
    }
    const control = opcode >= 0x8;
    if (control && (!fin || length > 125))
      throw new FrameError('Invalid WebSocket frame: a control frame must be whole and short', 1002);
    if (!control && this.fragmentBytes + length > this.opts.maxPayload)
      throw new FrameError('Max payload size exceeded', 1009);
    if (b.length < offset + length) return false;
    const payload = b.subarray(offset, offset + length);
    this.buffered = b.subarray(offset + length);
    if (control) this.control(opcode, payload);
    else this.data(opcode, fin, payload);
    return true;
  }

  private data(opcode: number, fin: boolean, payload: Buffer): void {
    if (opcode === 0x0) {
      if (this.fragmentOpcode === 0) throw new FrameError('Invalid WebSocket frame: a continuation of nothing', 1002);
    } else if (opcode === 0x1 || opcode === 0x2) {
      if (this.fragmentOpcode !== 0) throw new FrameError('Invalid WebSocket frame: a new message mid-message', 1002);
      this.fragmentOpcode = opcode;
    } else {
      throw new FrameError(`Invalid WebSocket frame: invalid opcode ${opcode}`, 1002);
    }
    this.fragments.push(Buffer.from(payload));
    this.fragmentBytes += payload.length;
    if (!fin) return;
    const message = this.fragments.length === 1 ? this.fragments[0] : Buffer.concat(this.fragments);
    const binary = this.fragmentOpcode === 0x2;
    this.fragments = [];
    this.fragmentOpcode = 0;
    this.fragmentBytes = 0;
    this.emit('message', message, binary);
  }

  private control(opcode: number, payload: Buffer): void {
    if (opcode === 0x9) {
      if (this.readyState === OPEN) this.socket!.write(frame(0xa, payload));
    } else if (opcode === 0x8) {
      this.closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
      this.closeReason = Buffer.from(payload.subarray(2));
      this.readyState = CLOSING;
      this.sendClose(payload.length >= 2 ? this.closeCode : 1000, '');
      this.socket?.end();
    } else if (opcode !== 0xa) {
      throw new FrameError(`Invalid WebSocket frame: invalid opcode ${opcode}`, 1002);
    }
  }

  private sendClose(code: number, reason: string): void {
    if (this.closeSent || !this.socket || this.socket.destroyed) return;
    this.closeSent = true;
    const text = Buffer.from(reason, 'utf8').subarray(0, 123);
    const payload = Buffer.alloc(2 + text.length);
    payload.writeUInt16BE(code, 0);
    text.copy(payload, 2);
    this.socket.write(frame(0x8, payload));
  }

  private emitClose(): void {
    if (this.closedEmitted) return;
    this.closedEmitted = true;
    this.readyState = CLOSED;
    this.emit('close', this.closeCode, this.closeReason);
  }
}

/** One masked client frame, whole (FIN). */
function frame(opcode: number, payload: Buffer): Buffer {
  const n = payload.length;
  const lengthBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
  const head = Buffer.alloc(2 + lengthBytes + 4);
  head[0] = 0x80 | opcode;
  if (lengthBytes === 0) head[1] = 0x80 | n;
  else if (lengthBytes === 2) {
    head[1] = 0x80 | 126;
    head.writeUInt16BE(n, 2);
  } else {
    head[1] = 0x80 | 127;
    head.writeUInt32BE(Math.floor(n / 2 ** 32), 2);
    head.writeUInt32BE(n % 2 ** 32, 6);
  }
  const mask = randomBytes(4);
  mask.copy(head, 2 + lengthBytes);
  const body = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) body[i] = payload[i] ^ mask[i & 3];
  return Buffer.concat([head, body]);
}
