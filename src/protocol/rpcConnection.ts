// The JSON-RPC 2.0 connection the client talks through: its requests and their replies, its
// notifications, and the daemon's notifications, over a transport's message reader and writer.
// It does what the client used of vscode-jsonrpc's MessageConnection, the same way (so the
// package, CommonJS and bundled whole, is no longer in the extension's bundle): request ids count
// from 0; incoming messages are dispatched one per turn of the event loop, in wire order; a reply
// with an error rejects with an RpcResponseError (its code and message); a request that could not
// be written rejects with code -32099; closing stops nothing pending (the client's own waiters
// do); dispose rejects what is pending with -32097. The client screens what comes in first
// (src/protocol/messageTaps.ts, JsonRpcDaemon.screen): requests from the daemon, cancellations and
// replies to no pending request never get here.
import type { Message, MessageReader, MessageWriter } from 'vscode-jsonrpc/node';
import { Fifo } from '../util/fifo';

export type RpcId = number | string;

/**
 * The daemon answered a request with an error (`replied`), or it got no answer: it could not be
 * sent (code -32099), or the connection was disposed (-32097).
 */
export class RpcResponseError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly replied = false,
  ) {
    super(message);
  }
}

/** vscode-jsonrpc's codes for a request that never got a reply from the daemon. */
const MESSAGE_WRITE_ERROR = -32099;
const PENDING_RESPONSE_REJECTED = -32097;
const UNKNOWN_ERROR_CODE = -32001;

/** Notifications of the protocol itself: handled (here: ignored) by the connection, never the client's. */
const OWN_NOTIFICATIONS = new Set(['$/logTrace', '$/progress', '$/cancelRequest']);

interface Pending {
  method: string;
  resolve(result: unknown): void;
  reject(error: Error): void;
}

/** A message as read, before it is known to be a request, a reply or a notification. */
export interface Incoming {
  id?: unknown;
  method?: unknown;
  params?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown } | null;
}

export class RpcConnection {
  private state: 'new' | 'listening' | 'closed' | 'disposed' = 'new';
  private nextId = 0;
  private pending = new Map<RpcId, Pending>();
  private readonly queue = new Fifo<Incoming>();
  private timer: NodeJS.Immediate | undefined;
  private readonly errorListeners: ((error: Error) => void)[] = [];
  private readonly closeListeners: (() => void)[] = [];
  /** Waiting for what was read so far to be dispatched (`afterIncoming`). */
  private readonly drainWaiters: (() => void)[] = [];
  private onNotificationHandler: ((method: string, params: unknown) => void) | undefined;

  constructor(
    private readonly reader: MessageReader,
    private readonly writer: MessageWriter,
    private readonly logger: { error(message: string): void },
  ) {
    reader.onClose(() => this.closed());
    reader.onError((error) => this.fireError(error));
    writer.onClose(() => this.closed());
    writer.onError(([error]) => this.fireError(error));
  }

  /** Every notification the client gets (one handler). */
  onNotification(handler: (method: string, params: unknown) => void): void {
    this.onNotificationHandler = handler;
  }

  /** A read or write error of the transport (the connection goes on). */
  onError(listener: (error: Error) => void): void {
    this.errorListeners.push(listener);
  }

  /** The transport closed (not fired after dispose). */
  onClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }

  /**
   * Calls `cb` once every message read so far has been dispatched (at once if none waits; at
   * dispose, when none ever will be): a reply that came before the connection closed answers its
   * request before the close is told.
   */
  afterIncoming(cb: () => void): void {
    if (this.queue.length === 0 && this.timer === undefined) cb();
    else this.drainWaiters.push(cb);
  }

  private drained(): void {
    for (const cb of this.drainWaiters.splice(0)) cb();
  }

  listen(): void {
    this.assertOpen();
    if (this.state === 'listening') throw new Error('Connection is already listening');
    this.state = 'listening';
    this.reader.listen((message) => {
      this.queue.push(message as Incoming);
      this.schedule();
    });
  }

  sendNotification(method: string): Promise<void> {
    this.assertOpen();
    const message = { jsonrpc: '2.0', method, params: undefined } as Message;
    return this.writer.write(message).catch((error: unknown) => {
      this.logger.error('Sending notification failed.');
      throw error;
    });
  }

  sendRequest(method: string, params: object): Promise<unknown> {
    this.assertOpen();
    if (this.state !== 'listening') throw new Error('Call listen() first.');
    const id = this.nextId++;
    const message = { jsonrpc: '2.0', id, method, params } as Message;
    return new Promise<unknown>((resolve, reject) => {
      this.pending.set(id, { method, resolve, reject });
      this.writer.write(message).catch((error: unknown) => {
        this.pending.delete(id);
        const text = error instanceof Error && error.message ? error.message : 'Unknown reason';
        reject(new RpcResponseError(MESSAGE_WRITE_ERROR, text));
        this.logger.error('Sending request failed.');
      });
    });
  }

  /** Rejects every pending request and stops reading and writing. */
  dispose(): void {
    if (this.state === 'disposed') return;
    this.state = 'disposed';
    const error = new RpcResponseError(
      PENDING_RESPONSE_REJECTED,
      'Pending response rejected since connection got disposed',
    );
    for (const p of this.pending.values()) p.reject(error);
    this.pending = new Map();
    this.queue.clear();
    if (this.timer !== undefined) clearImmediate(this.timer);
    this.timer = undefined;
    this.writer.dispose();
    this.reader.dispose();
    this.drained();
  }

  private assertOpen(): void {
    if (this.state === 'closed') throw new Error('Connection is closed.');
    if (this.state === 'disposed') throw new Error('Connection is disposed.');
  }

  private closed(): void {
    if (this.state !== 'new' && this.state !== 'listening') return;
    this.state = 'closed';
    for (const l of [...this.closeListeners]) l();
  }

  private fireError(error: Error): void {
    for (const l of [...this.errorListeners]) l(error);
  }

  /** One message per turn of the event loop, in the order they came. */
  private schedule(): void {
    if (this.timer !== undefined) return;
    if (this.queue.length === 0) return this.drained();
    this.timer = setImmediate(() => {
      this.timer = undefined;
      const message = this.queue.shift();
      try {
        if (message !== undefined) this.dispatch(message);
      } catch (error) {
        this.logger.error(`Processing message queue failed: ${String(error)}`);
      } finally {
        this.schedule();
      }
    });
  }

  private dispatch(m: Incoming): void {
    if (this.state === 'disposed') return;
    const isId = typeof m.id === 'string' || typeof m.id === 'number';
    if (typeof m.method === 'string' && m.id === undefined) return this.notification(m.method, m.params);
    if (typeof m.method === 'string' && isId) return; // a request: screened out before, never answered
    if ((m.result !== undefined || !!m.error) && (isId || m.id === null)) return this.response(m);
    this.logger.error(
      `Received message which is neither a response nor a notification message:\n${JSON.stringify(m, null, 4)}`,
    );
    if (isId)
      this.pending
        .get(m.id as RpcId)
        ?.reject(new Error('The received response has neither a result nor an error property.'));
  }

  private notification(method: string, params: unknown): void {
    if (OWN_NOTIFICATIONS.has(method) || !this.onNotificationHandler) return;
    try {
      this.onNotificationHandler(method, params);
    } catch (error) {
      this.logger.error(
        error instanceof Error && error.message
          ? `Notification handler '${method}' failed with message: ${error.message}`
          : `Notification handler '${method}' failed unexpectedly.`,
      );
    }
  }

  private response(m: Incoming): void {
    if (m.id === null || m.id === undefined) {
      this.logger.error(
        m.error
          ? `Received response message without id: Error is: \n${JSON.stringify(m.error, undefined, 4)}`
          : 'Received response message without id. No further error information provided.',
      );
      return;
    }
    const id = m.id as RpcId;
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    if (m.error) {
      const code = typeof m.error.code === 'number' ? m.error.code : UNKNOWN_ERROR_CODE;
      p.reject(new RpcResponseError(code, m.error.message as string, true)); // as Error does: undefined →
    } else {
      p.resolve(m.result);
    }
  }
}
