/**
 * What a connection to a Codex app-server is, whichever way it was opened: where it goes
 * (`TransportTarget`), what it offers (`Transport`), how opening it fails (`TransportError`),
 * and the close signal every transport fires exactly once.
 */
import type { MessageReader, MessageWriter } from 'vscode-jsonrpc/node';
import { quietly } from './framedMessages';

export type TransportTarget =
  | { kind: 'socket'; path: string } // WebSocket over the daemon's Unix socket
  | { kind: 'url'; url: string } // ws://127.0.0.1:PORT (loopback only)
  | { kind: 'stdio'; command: string; args: string[]; env?: NodeJS.ProcessEnv; cwd?: string }; // private child

/** A target other clients can reach too (not a private child): what the extension and the election use. */
export type SharedTarget = Exclude<TransportTarget, { kind: 'stdio' }>;

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
  /**
   * Called exactly once, with a human-readable reason, when the connection is gone. Late subscribers
   * are called too.
   */
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

export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** Fires the registered callbacks once; late subscribers get the reason asynchronously. */
export class CloseSignal {
  private reason: string | undefined;
  private readonly callbacks: Array<(reason: string) => void> = [];
  on(cb: (reason: string) => void): void {
    const r = this.reason;
    if (r === undefined) this.callbacks.push(cb);
    else queueMicrotask(() => quietly(() => cb(r)));
  }
  fire(reason: string): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    // A listener's failure must not break the transport.
    for (const cb of this.callbacks.splice(0)) quietly(() => cb(reason));
  }
}
