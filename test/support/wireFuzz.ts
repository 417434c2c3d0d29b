// Wire-level fixtures for the fault-injection suite: the daemon's side of a real client session
// over either framing (newline-delimited JSON on in-memory streams, or one message per WebSocket
// frame on a ws server bound to a Unix socket in a private directory), a listener that records
// everything the client reports, a reader a test scripts message by message (`ScriptReader`), and
// heap measurement after a forced garbage collection.
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { WebSocketServer, type WebSocket } from 'ws';
import type { DataCallback, Disposable, Message } from 'vscode-jsonrpc/node';
import { MessageReaderBase } from '../../src/protocol/messageEvents';
import { immediate, turns, until } from './wait';
import { startSession } from '../../src/protocol/client';
import type {
  DaemonListener,
  DaemonSession,
  RateLimitSnapshot,
  RequestId,
  Thread,
  ThreadGoal,
  ThreadStatus,
  Turn,
  TurnError,
} from '../../src/protocol/daemon';
import { LineMessageReader, LineMessageWriter } from '../../src/protocol/lineFraming';
import { WebSocketMessageReader } from '../../src/protocol/webSocketFraming';
import { LineSplitter } from '../../src/protocol/lineSplitter';
import { openTransport, type Transport } from '../../src/protocol/transport';

/** One thing the client reported to its listener, reduced to what identifies it. */
export type Reported = Array<string | number | boolean | null>;

/** Records every callback of a DaemonListener, in the order they happen. */
export class RecordingListener implements DaemonListener {
  readonly events: Reported[] = [];
  readonly problems: string[] = [];
  readonly closes: string[] = [];
  goalUpdated(threadId: string, goal: ThreadGoal, turnId: string | null): void {
    this.events.push(['goalUpdated', threadId, goal.status, goal.objective.length, turnId]);
  }
  goalCleared(threadId: string): void {
    this.events.push(['goalCleared', threadId]);
  }
  threadStatus(threadId: string, status: ThreadStatus): void {
    this.events.push(['threadStatus', threadId, status.type]);
  }
  threadStarted(thread: Thread): void {
    this.events.push(['threadStarted', thread.id]);
  }
  threadClosed(threadId: string): void {
    this.events.push(['threadClosed', threadId]);
  }
  turnStarted(threadId: string, turn: Turn): void {
    this.events.push(['turnStarted', threadId, turn.id]);
  }
  turnCompleted(threadId: string, turn: Turn): void {
    this.events.push(['turnCompleted', threadId, turn.id, turn.status]);
  }
  error(threadId: string, turnId: string | null, error: TurnError, willRetry: boolean): void {
    this.events.push(['error', threadId, turnId, error.message.length, willRetry]);
  }
  serverRequest(threadId: string | null, requestId: RequestId, method: string): void {
    this.events.push(['serverRequest', threadId, requestId, method]);
  }
  serverRequestResolved(threadId: string, requestId: RequestId): void {
    this.events.push(['serverRequestResolved', threadId, requestId]);
  }
  responseCompleted(threadId: string): void {
    this.events.push(['responseCompleted', threadId]);
  }
  rateLimitsUpdated(snapshot: RateLimitSnapshot): void {
    this.events.push(['rateLimitsUpdated', snapshot.primary?.resetsAt ?? null, snapshot.rateLimitReachedType ?? null]);
  }
  protocolProblem(message: string): void {
    this.problems.push(message);
  }
  closed(reason: string): void {
    this.closes.push(reason);
  }
}

/** What the client sent, as the daemon read it. */
export interface ClientMessage {
  id?: unknown;
  method?: unknown;
  params?: unknown;
  result?: unknown;
  error?: unknown;
}

/** A frame from the daemon: text, raw bytes (a binary WebSocket frame unless `text`), or fragments of one message. */
export type Frame = { text: string } | { bytes: Uint8Array; asText?: boolean } | { fragments: Buffer[] };

export interface WireSession {
  readonly kind: 'stdio' | 'websocket';
  readonly session: DaemonSession;
  readonly listener: RecordingListener;
  /** The client's frame reader: how many frames it dropped. */
  readonly reader: { readonly malformedCount: number };
  /** Everything the client wrote after connecting, parsed. */
  readonly received: ClientMessage[];
  /** Lines or frames from the client that were not JSON (must stay empty). */
  readonly unparsable: string[];
  /**
   * Sends frames from the daemon. stdio: the frames become lines, and the byte stream is cut
   * into chunks of `chunk()` bytes (a line split over chunks, several lines in one chunk).
   */
  send(frames: Frame[], chunk?: () => number): Promise<void>;
  /** Raw bytes as they are (stdio: no newline added; WebSocket: one text frame). */
  raw(data: Buffer): Promise<void>;
  /** Waits until `done()` holds (polling), or fails with `what`. */
  until(done: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const worldUntil: WireSession['until'] = (done, what, timeoutMs = 20_000) => until(what, done, timeoutMs, 2);

function answerInitialize(m: ClientMessage, reply: (text: string) => void): void {
  if (m.method === 'initialize')
    reply(JSON.stringify({ id: m.id, result: { userAgent: 'fuzz-daemon/1', codexHome: '/nowhere' } }));
}

function parseClient(text: string, received: ClientMessage[], unparsable: string[]): ClientMessage | null {
  try {
    const m = JSON.parse(text) as ClientMessage;
    received.push(m);
    return m;
  } catch {
    unparsable.push(text);
    return null;
  }
}

/** A session over the stdio framing: the client's LineMessageReader/Writer on PassThrough streams. */
export async function stdioSession(
  opts: { maxLineBytes?: number; requestTimeoutMs?: number } = {},
): Promise<WireSession> {
  const toClient = new PassThrough();
  const fromClient = new PassThrough();
  const received: ClientMessage[] = [];
  const unparsable: string[] = [];
  const write = (text: string) => toClient.write(`${text}\n`);
  const lines = new LineSplitter(
    1 << 30,
    (line) => {
      const m = parseClient(line, received, unparsable);
      if (m) answerInitialize(m, write);
    },
    () => undefined,
  );
  fromClient.on('data', (chunk: Buffer) => lines.push(chunk));
  let closeCb: ((reason: string) => void) | undefined;
  let closedReason: string | null = null;
  const reader = new LineMessageReader(toClient, { maxLineBytes: opts.maxLineBytes });
  const transport: Transport = {
    reader,
    writer: new LineMessageWriter(fromClient),
    describe: 'fuzz stdio',
    onClose: (cb) => {
      if (closedReason !== null) cb(closedReason);
      else closeCb = cb;
    },
    close: () => {
      if (closedReason === null) {
        closedReason = 'closed by client';
        toClient.end();
        closeCb?.(closedReason);
      }
      return Promise.resolve();
    },
  };
  const listener = new RecordingListener();
  const session = await startSession(transport, listener, {
    clientVersion: 'fuzz',
    requestTimeoutMs: opts.requestTimeoutMs ?? 60_000,
  });
  return {
    kind: 'stdio',
    session,
    listener,
    reader,
    received,
    unparsable,
    async send(frames, chunk = () => 64 * 1024) {
      const parts: Buffer[] = [];
      for (const f of frames) {
        if ('text' in f) parts.push(Buffer.from(`${f.text}\n`, 'utf8'));
        else if ('bytes' in f) parts.push(Buffer.from(f.bytes), Buffer.from('\n'));
        else parts.push(...f.fragments, Buffer.from('\n'));
      }
      const all = Buffer.concat(parts);
      let at = 0;
      let n = 0;
      while (at < all.length) {
        const size = Math.max(1, chunk());
        toClient.write(all.subarray(at, at + size));
        at += size;
        if (++n % 16 === 0) await immediate(); // let the client read while the daemon writes
      }
      await immediate();
    },
    async raw(data) {
      toClient.write(data);
      await immediate();
    },
    until: worldUntil,
    close: () => session.close(),
  };
}

export interface UnixWsServer {
  dir: string;
  socketPath: string;
  wss: WebSocketServer;
  /** The daemon's side of each connection, in order. */
  peers: WebSocket[];
  close(): Promise<void>;
}

/** A WebSocket server on `<private dir>/app-server-control.sock`, like the daemon's control socket. */
export async function unixWsServer(): Promise<UnixWsServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-fz-'));
  fs.chmodSync(dir, 0o700);
  const socketPath = path.join(dir, 'app-server-control.sock');
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  await new Promise<void>((resolve) => server.listen(socketPath, () => resolve()));
  fs.chmodSync(socketPath, 0o600);
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  const peers: WebSocket[] = [];
  wss.on('connection', (ws) => peers.push(ws));
  return {
    dir,
    socketPath,
    wss,
    peers,
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A session over the WebSocket framing, through the product's socket transport (safety checks included). */
export async function websocketSession(
  server: UnixWsServer,
  opts: { requestTimeoutMs?: number } = {},
): Promise<WireSession> {
  const received: ClientMessage[] = [];
  const unparsable: string[] = [];
  const before = server.peers.length;
  let peer: WebSocket | undefined;
  const attach = (ws: WebSocket) => {
    peer = ws;
    ws.on('message', (data: Buffer) => {
      const m = parseClient(data.toString('utf8'), received, unparsable);
      if (m) answerInitialize(m, (text) => ws.send(text));
    });
  };
  server.wss.once('connection', attach);
  const transport = await openTransport({ kind: 'socket', path: server.socketPath }, { connectTimeoutMs: 5_000 });
  const listener = new RecordingListener();
  const session = await startSession(transport, listener, {
    clientVersion: 'fuzz',
    requestTimeoutMs: opts.requestTimeoutMs ?? 60_000,
  });
  if (!peer || server.peers.length !== before + 1)
    throw new Error('the fuzz server did not see exactly one connection');
  const ws = peer;
  const sendOne = (data: string | Buffer, options: { binary: boolean; fin?: boolean }) =>
    new Promise<void>((resolve, reject) =>
      ws.send(data, { ...options, compress: false }, (err) => (err ? reject(err) : resolve())),
    );
  return {
    kind: 'websocket',
    session,
    listener,
    reader: transport.reader as WebSocketMessageReader,
    received,
    unparsable,
    async send(frames) {
      let n = 0;
      for (const f of frames) {
        if ('text' in f) await sendOne(f.text, { binary: false });
        else if ('bytes' in f) await sendOne(Buffer.from(f.bytes), { binary: f.asText !== true });
        else {
          // One message in several WebSocket fragments (continuation frames): a single valid message.
          const parts = f.fragments;
          for (let i = 0; i < parts.length; i++)
            await sendOne(parts[i], { binary: false, fin: i === parts.length - 1 });
        }
        if (++n % 16 === 0) await immediate();
      }
      await immediate();
    },
    async raw(data) {
      await sendOne(data, { binary: false });
      await immediate();
    },
    until: worldUntil,
    close: () => session.close(),
  };
}

// ---- memory ---------------------------------------------------------------------------------

let gcFn: (() => void) | undefined;

/**
 * A full garbage collection, without --expose-gc on the command line: the flag is set at run
 * time and `gc` is taken from a fresh context (V8 installs it there once the flag is on).
 */
export function collectGarbage(): void {
  if (!gcFn) {
    const existing = (globalThis as { gc?: () => void }).gc;
    if (typeof existing === 'function') gcFn = existing;
    else {
      v8.setFlagsFromString('--expose-gc');
      gcFn = vm.runInNewContext('gc') as () => void;
    }
  }
  gcFn();
  gcFn();
}

/** Bytes the JavaScript heap and Buffers hold after a full collection. */
export async function liveBytes(): Promise<number> {
  await turns(3);
  collectGarbage();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** A reader a test scripts: what it `push`es is read off the wire at once, as given (a test writes
 * its `jsonrpc`); it reports an error or a close as a transport would. */
export class ScriptReader extends MessageReaderBase {
  callback: DataCallback | undefined;
  disposed = false;
  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    return { dispose: () => undefined };
  }
  push(message: unknown): void {
    this.callback?.(message as Message);
  }
  error(e: unknown): void {
    this.fireError(e);
  }
  close(): void {
    this.fireClose();
  }
  override dispose(): void {
    this.disposed = true;
    super.dispose();
  }
}
