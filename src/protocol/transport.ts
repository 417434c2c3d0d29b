/**
 * Opening a connection to a Codex app-server: the daemon's Unix socket (WebSocket over it),
 * a ws:// URL, or a private `codex app-server` child on stdio.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import WebSocket from 'ws';
import type { MessageReader, MessageWriter } from 'vscode-jsonrpc/node';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  LineMessageReader,
  LineMessageWriter,
  WebSocketMessageReader,
  WebSocketMessageWriter,
} from './framing';
import { checkSocketSafety, checkWsUrl } from './socketSafety';

export type TransportTarget =
  | { kind: 'socket'; path: string } // WebSocket over the daemon's Unix socket
  | { kind: 'url'; url: string; allowRemote?: boolean } // ws://127.0.0.1:PORT
  | { kind: 'stdio'; command: string; args: string[]; env?: NodeJS.ProcessEnv; cwd?: string }; // private child

export type TransportErrorCode = 'missing' | 'unsafe' | 'refused' | 'timeout' | 'closed';

export class TransportError extends Error {
  constructor(
    readonly code: TransportErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TransportError';
  }
}

export interface Transport {
  reader: MessageReader;
  writer: MessageWriter;
  /** e.g. "daemon socket /home/u/.codex/…sock", "ws://127.0.0.1:4500", "codex app-server (pid 123)". */
  describe: string;
  /** Called exactly once, with a human-readable reason, when the connection is gone. Late subscribers are called too. */
  onClose(cb: (reason: string) => void): void;
  /** Closes the connection (stdio: terminates the child's whole process group). Idempotent. */
  close(): Promise<void>;
  /** stdio only: the child's pid (= its process group id). */
  pid?: number;
}

export interface OpenTransportOptions {
  /** Connect / spawn timeout. Default 10 000 ms. */
  connectTimeoutMs?: number;
  /** Largest accepted message (ws maxPayload / line cap). Default 64 MiB. */
  maxMessageBytes?: number;
  /** stdio: each stderr line of the child (truncated to 8 KiB). Stderr is drained either way. */
  onStderr?: (line: string) => void;
  /** stdio: time between SIGTERM and SIGKILL on close(). Default 2000 ms. */
  killGraceMs?: number;
  /** ws: time to wait for the closing handshake before terminating. Default 1000 ms. */
  closeGraceMs?: number;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const STDERR_LINE_MAX = 8 * 1024;

export async function openTransport(target: TransportTarget, opts: OpenTransportOptions = {}): Promise<Transport> {
  switch (target.kind) {
    case 'socket': {
      const safety = await checkSocketSafety(target.path);
      if (!safety.ok) throw new TransportError(safety.missing ? 'missing' : 'unsafe', safety.reason);
      // Always the root path `/`: never `/daemon/shutdown`.
      const address = `ws+unix://${safety.resolved}:/`;
      return openWebSocket(address, `Codex daemon socket ${safety.resolved}`, opts, true);
    }
    case 'url': {
      const check = checkWsUrl(target.url, target.allowRemote ?? false);
      if (!check.ok) throw new TransportError('unsafe', check.reason);
      return openWebSocket(target.url, target.url, opts, false);
    }
    case 'stdio':
      return openStdio(target, opts);
    default: {
      const never: never = target;
      throw new TransportError('refused', `unknown transport target ${JSON.stringify(never)}`);
    }
  }
}

/** Fires the registered callbacks once; late subscribers get the reason asynchronously. */
class CloseSignal {
  private reason: string | undefined;
  private readonly callbacks: Array<(reason: string) => void> = [];
  get fired(): boolean {
    return this.reason !== undefined;
  }
  on(cb: (reason: string) => void): void {
    if (this.reason !== undefined) {
      const r = this.reason;
      queueMicrotask(() => safeCall(cb, r));
      return;
    }
    this.callbacks.push(cb);
  }
  fire(reason: string): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    for (const cb of this.callbacks.splice(0)) safeCall(cb, reason);
  }
}

function safeCall(cb: (reason: string) => void, reason: string): void {
  try {
    cb(reason);
  } catch {
    // a listener's failure must not break the transport
  }
}

function openWebSocket(
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
      ws = new WebSocket(address, {
        maxPayload: opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
        perMessageDeflate: false,
        handshakeTimeout: timeoutMs,
        followRedirects: false,
        // The reader checks UTF-8 per frame and drops a bad frame; ws would close the connection.
        skipUTF8Validation: true,
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

    const fail = (err: TransportError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      cleanupPending();
      ws.on('error', () => {}); // keep errors during teardown from becoming uncaught
      try {
        ws.terminate();
      } catch {
        // ignore
      }
      reject(err);
    };
    const onPendingError = (err: Error) => {
      lastError = err;
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && isUnixSocket) {
        fail(
          new TransportError(
            'missing',
            `no Codex daemon socket at ${describe.replace(/^Codex daemon socket /, '')} (start one with \`codex app-server daemon start\`)`,
            { cause: err },
          ),
        );
      } else if (code === 'ECONNREFUSED' && isUnixSocket) {
        fail(
          new TransportError(
            'refused',
            `${describe} refused the connection: the daemon is not running (stale socket); start it with \`codex app-server daemon start\``,
            { cause: err },
          ),
        );
      } else if (code === 'ECONNREFUSED') {
        fail(
          new TransportError('refused', `${describe} refused the connection: no app-server is listening there`, {
            cause: err,
          }),
        );
      } else if (/handshake has timed out/i.test(err.message)) {
        fail(
          new TransportError('timeout', `timed out after ${timeoutMs} ms in the WebSocket handshake with ${describe}`, {
            cause: err,
          }),
        );
      } else {
        fail(new TransportError('refused', `cannot connect to ${describe}: ${err.message}`, { cause: err }));
      }
    };
    const onPendingClose = (code: number, reason: Buffer) => {
      fail(
        new TransportError(
          'closed',
          `${describe} closed during connect (code ${code}${reason.length ? `: ${reason.toString()}` : ''})${lastError ? `: ${lastError.message}` : ''}`,
        ),
      );
    };
    const onUnexpected = (_req: unknown, res: { statusCode?: number; statusMessage?: string }) => {
      fail(
        new TransportError(
          'refused',
          `${describe} refused the WebSocket upgrade: HTTP ${res.statusCode ?? '?'} ${res.statusMessage ?? ''}`.trim(),
        ),
      );
    };
    const cleanupPending = () => {
      ws.removeListener('error', onPendingError);
      ws.removeListener('close', onPendingClose);
      ws.removeListener('unexpected-response', onUnexpected);
      ws.removeListener('open', onOpen);
    };
    const onOpen = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      cleanupPending();
      resolve(wrapOpenSocket(ws, describe, closeGraceMs));
    };
    ws.on('error', onPendingError);
    ws.on('close', onPendingClose);
    ws.on('unexpected-response', onUnexpected);
    ws.on('open', onOpen);
  });
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
  const reader = new WebSocketMessageReader(ws);
  const writer = new WebSocketMessageWriter(ws);
  let closing: Promise<void> | undefined;
  return {
    reader,
    writer,
    describe,
    onClose: (cb) => signal.on(cb),
    close: () => {
      if (closing) return closing;
      closing = new Promise<void>((resolve) => {
        if (ws.readyState === WebSocket.CLOSED) {
          signal.fire(`${describe}: closed by client`);
          resolve();
          return;
        }
        closingByUs = true;
        const timer = setTimeout(() => {
          try {
            ws.terminate();
          } catch {
            // ignore
          }
        }, closeGraceMs);
        ws.once('close', () => {
          clearTimeout(timer);
          resolve();
        });
        try {
          ws.close(1000, 'client closing');
        } catch {
          ws.terminate();
        }
      });
      return closing;
    },
  };
}

function isAlive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function killGroup(pid: number, signal: NodeJS.Signals, child: ChildProcess): void {
  if (process.platform === 'win32') {
    try {
      child.kill(signal);
    } catch {
      // ignore
    }
    return;
  }
  try {
    process.kill(-pid, signal); // the child's own process group only (spawned detached)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') {
      try {
        child.kill(signal);
      } catch {
        // ignore
      }
    }
  }
}

function openStdio(
  target: Extract<TransportTarget, { kind: 'stdio' }>,
  opts: OpenTransportOptions,
): Promise<Transport> {
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const graceMs = opts.killGraceMs ?? 2000;
  const cmdline = [target.command, ...target.args].join(' ');
  return new Promise<Transport>((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn(target.command, target.args, {
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true, // own process group: close() kills the whole group
        env: target.env ?? process.env,
        cwd: target.cwd,
        windowsHide: true,
      });
    } catch (e) {
      reject(new TransportError('refused', `cannot start ${cmdline}: ${(e as Error).message}`, { cause: e }));
      return;
    }
    let settled = false;
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL', child);
      reject(new TransportError('timeout', `timed out after ${timeoutMs} ms starting ${cmdline}`));
    }, timeoutMs);

    child.once('error', (err: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const code: TransportErrorCode = err.code === 'ENOENT' ? 'missing' : 'refused';
      const hint = err.code === 'ENOENT' ? ` (is \`${target.command}\` installed and on PATH?)` : '';
      reject(new TransportError(code, `cannot start ${cmdline}: ${err.message}${hint}`, { cause: err }));
    });
    child.once('spawn', () => {
      if (settled) {
        if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL', child);
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve(wrapChild(child, target.command, graceMs, opts));
    });
  });
}

function wrapChild(child: ChildProcess, command: string, graceMs: number, opts: OpenTransportOptions): Transport {
  const pid = child.pid!;
  const describe = `${command} (pid ${pid})`;
  const signal = new CloseSignal();

  // Safety net: if this process exits without close(), don't leave the group running.
  const onProcessExit = () => killGroup(pid, 'SIGTERM', child);
  process.once('exit', onProcessExit);

  // Stderr: always drained; split into lines for the optional callback, bounded per line.
  const stderr = child.stderr!;
  let partial = '';
  let partialDropped = false;
  const emitLine = (line: string) => {
    if (!opts.onStderr) return;
    try {
      opts.onStderr(line.replace(/\r$/, ''));
    } catch {
      // ignore listener failures
    }
  };
  stderr.setEncoding('utf8');
  stderr.on('data', (chunk: string) => {
    let text = partial + chunk;
    partial = '';
    let nl: number;
    while ((nl = text.indexOf('\n')) !== -1) {
      const line = text.slice(0, nl);
      text = text.slice(nl + 1);
      if (partialDropped) {
        partialDropped = false;
        continue;
      }
      emitLine(line.length > STDERR_LINE_MAX ? `${line.slice(0, STDERR_LINE_MAX)}…` : line);
    }
    if (partialDropped) return;
    if (text.length > STDERR_LINE_MAX) {
      emitLine(`${text.slice(0, STDERR_LINE_MAX)}…`);
      partialDropped = true;
    } else {
      partial = text;
    }
  });
  stderr.on('end', () => {
    if (partial && !partialDropped) emitLine(partial);
    partial = '';
  });
  stderr.on('error', () => {});
  child.stdout!.on('error', () => {});
  child.stdin!.on('error', () => {}); // EPIPE after the child died: reported via the writer

  const reader = new LineMessageReader(child.stdout!, {
    maxLineBytes: opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
  });
  const writer = new LineMessageWriter(child.stdin!);

  let closingByUs = false;
  child.once('exit', (code, sig) => {
    process.removeListener('exit', onProcessExit);
    const how = sig ? `was killed by signal ${sig}` : `exited with code ${code}`;
    signal.fire(closingByUs ? `${describe}: closed by client (${how})` : `${describe} ${how}`);
  });

  let closing: Promise<void> | undefined;
  return {
    reader,
    writer,
    describe,
    pid,
    onClose: (cb) => signal.on(cb),
    close: () => {
      if (closing) return closing;
      closingByUs = true;
      closing = new Promise<void>((resolve) => {
        const finish = () => {
          // Also reaps grandchildren left in the group after the leader died.
          killGroup(pid, 'SIGKILL', child);
          process.removeListener('exit', onProcessExit);
          resolve();
        };
        try {
          child.stdin?.end();
        } catch {
          // ignore
        }
        if (!isAlive(child)) {
          killGroup(pid, 'SIGTERM', child);
          setTimeout(finish, Math.min(graceMs, 100));
          return;
        }
        const killTimer = setTimeout(() => {
          killGroup(pid, 'SIGKILL', child);
        }, graceMs);
        child.once('exit', () => {
          clearTimeout(killTimer);
          finish();
        });
        killGroup(pid, 'SIGTERM', child);
      });
      return closing;
    },
  };
}
