/**
 * A WebSocket connection to an app-server: over the daemon's Unix socket, or to a loopback
 * `ws://` URL. Connect failures are told apart (no socket, stale socket, refused, timed out).
 */
import { WebSocketClient as WebSocket } from './webSocketClient';
import { DEFAULT_MAX_MESSAGE_BYTES } from './framing';
import { quietly, subscribe } from './framedMessages';
import {
  CloseSignal,
  DEFAULT_CONNECT_TIMEOUT_MS,
  TransportError,
  type OpenTransportOptions,
  type Transport,
  type TransportErrorCode,
} from './transportContract';
import { WebSocketMessageReader, WebSocketMessageWriter } from './webSocketFraming';

export function openWebSocket(
  address: string,
  describe: string,
  opts: OpenTransportOptions,
  isUnixSocket: boolean,
): Promise<Transport> {
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const closeGraceMs = opts.closeGraceMs ?? 1000;
  return new Promise<Transport>((resolve, reject) => {
    let ws: WebSocket;
    try {
      // No compression, no redirects; the reader checks UTF-8 per frame and drops a bad frame.
      ws = new WebSocket(address, {
        maxPayload: opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
        handshakeTimeout: timeoutMs,
      });
    } catch (e) {
      reject(new TransportError('refused', `cannot connect to ${describe}: ${(e as Error).message}`, { cause: e }));
      return;
    }
    let settled = false;
    let lastError: Error | undefined;
    const timer = setTimeout(() => {
      fail(new TransportError('timeout', `timed out after ${timeoutMs} ms connecting to ${describe}`));
    }, timeoutMs);
    /** False when settled already; else settles: no timer, no connect listeners. */
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      detach();
      return true;
    };
    const fail = (err: TransportError) => {
      if (!settle()) return;
      ws.on('error', () => {}); // keep errors during teardown from becoming uncaught
      quietly(() => ws.terminate());
      reject(err);
    };
    const detach = subscribe(ws, {
      error: (err) => {
        lastError = err as Error;
        fail(connectError(lastError, describe, isUnixSocket, timeoutMs));
      },
      close: (code, reason) => {
        const why = (reason as Buffer).length ? `: ${String(reason)}` : '';
        const last = lastError ? `: ${lastError.message}` : '';
        fail(new TransportError('closed', `${describe} closed during connect (code ${code as number}${why})${last}`));
      },
      'unexpected-response': (_req, res) => {
        const { statusCode, statusMessage } = res as { statusCode?: number; statusMessage?: string };
        const http = `HTTP ${statusCode ?? '?'} ${statusMessage ?? ''}`;
        fail(new TransportError('refused', `${describe} refused the WebSocket upgrade: ${http}`.trim()));
      },
      open: () => {
        if (settle()) resolve(wrapOpenSocket(ws, describe, closeGraceMs));
      },
    });
  });
}

/** Why connecting failed, told apart: no socket, stale socket, refused, timed out. */
function connectError(err: Error, describe: string, isUnixSocket: boolean, timeoutMs: number): TransportError {
  const code = (err as NodeJS.ErrnoException).code;
  const failed = (kind: TransportErrorCode, message: string) => new TransportError(kind, message, { cause: err });
  if (code === 'ENOENT' && isUnixSocket) {
    const path = describe.replace(/^Codex daemon socket /, '');
    return failed('missing', `no Codex daemon socket at ${path} (start one with \`codex app-server daemon start\`)`);
  }
  if (code === 'ECONNREFUSED' && isUnixSocket)
    return failed(
      'refused',
      `${describe} refused the connection: the daemon is not running (stale socket); start it with \`codex app-server daemon start\``,
    );
  if (code === 'ECONNREFUSED')
    return failed('refused', `${describe} refused the connection: no app-server is listening there`);
  if (/handshake has timed out/i.test(err.message))
    return failed('timeout', `timed out after ${timeoutMs} ms in the WebSocket handshake with ${describe}`);
  return failed('refused', `cannot connect to ${describe}: ${err.message}`);
}

function wrapOpenSocket(ws: WebSocket, describe: string, closeGraceMs: number): Transport {
  const signal = new CloseSignal();
  let lastError: Error | undefined;
  let closingByUs = false;
  // Attached first so that an 'error' is never unhandled, even before the reader listens.
  ws.on('error', (err: Error) => {
    lastError = err;
  });
  ws.on('close', (code: number, reason: Buffer) => {
    const why = reason.length ? `: ${reason.toString()}` : '';
    const err = lastError ? ` (${lastError.message})` : '';
    signal.fire(
      closingByUs ? `${describe}: closed by client` : `${describe}: connection closed (code ${code}${why})${err}`,
    );
  });
  let closing: Promise<void> | undefined;
  return {
    reader: new WebSocketMessageReader(ws),
    writer: new WebSocketMessageWriter(ws),
    describe,
    onClose: (cb) => signal.on(cb),
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        if (ws.readyState === WebSocket.CLOSED) {
          signal.fire(`${describe}: closed by client`);
          resolve();
          return;
        }
        closingByUs = true;
        const timer = setTimeout(() => quietly(() => ws.terminate()), closeGraceMs);
        ws.once('close', () => {
          clearTimeout(timer);
          resolve();
        });
        try {
          ws.close(1000, 'client closing');
        } catch {
          ws.terminate();
        }
      })),
  };
}
