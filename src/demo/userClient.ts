/**
 * A deliberately small raw JSON-RPC client that plays "the user's own Codex client" in tests
 * (the VS Code Codex extension, the TUI...). It is NOT the product's client.
 *
 * Transports: stdio of a `codex app-server` child (one JSON object per line), or the daemon's
 * control socket (WebSocket over the Unix socket, one JSON message per text frame).
 *
 * Everything received is appended to `log` with a global arrival sequence number, so tests can
 * assert on the order of notifications relative to each other and to replies. Server requests
 * (approvals) are recorded and never answered unless the test calls `respond`.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import WebSocket from 'ws';
import { parseJson } from '../rollout/markerLines';
import * as z from '../util/zod';
import { describe, field, type LogEntry, type Notification, type ServerRequest } from './userClientLog';
import { stdioTransport, wsTransport, type Transport } from './userClientTransports';

/** What the client reads of each message: the JSON-RPC envelope; params, result and data stay as received. */
const EnvelopeSchema = z.looseObject({
  method: z.optional(z.string()),
  id: z.nullish(z.union([z.number(), z.string()])),
  params: z.optional(z.unknown()),
  result: z.optional(z.unknown()),
  error: z.nullish(z.looseObject({ code: z.number(), message: z.string(), data: z.optional(z.unknown()) })),
});

export class RpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(`${method}: ${code} ${message}`);
  }
}

export interface UserClientOptions {
  /** clientInfo.name (default "test-user-client"). */
  name?: string;
}

/**
 * A user's client of the app-server. `J`: how its readers see the JSON it received (`unknown`
 * in the product, read with `field`; a test may pick a looser view).
 */
export class UserClient<J = unknown> {
  /** Everything received, in arrival order. */
  readonly log: LogEntry<J>[] = [];
  initializeResult: J | undefined;
  closed = false;
  private seq = 0;
  private nextId = 1;
  /** Requests awaiting their reply: `settle` takes the reply's entry, or the error that ends the wait. */
  private readonly pending = new Map<number | string, { method: string; settle: (e: LogEntry<J> | Error) => void }>();
  private readonly watchers = new Set<() => void>();
  private readonly listeners = new Set<(n: Notification<J>) => void>();

  private constructor(private readonly transport: Transport) {
    transport.onMessage((text) => this.onMessage(text));
    transport.onClose(() => {
      this.closed = true;
      for (const [, p] of this.pending) p.settle(new Error(`connection closed before reply to ${p.method}`));
      this.pending.clear();
      this.poke();
    });
  }

  /** Calls `listener` for every notification from now on. */
  onNotification(listener: (n: Notification<J>) => void): void {
    this.listeners.add(listener);
  }

  /** Connect over a `codex app-server` child's stdio and do the handshake. */
  static overStdio<J = unknown>(
    child: ChildProcessWithoutNullStreams,
    opts: UserClientOptions = {},
  ): Promise<UserClient<J>> {
    return new UserClient<J>(stdioTransport(child)).handshake(opts);
  }

  /** Connect to the daemon's control socket (WebSocket over a Unix socket) and do the handshake. */
  static async overSocket<J = unknown>(socketPath: string, opts: UserClientOptions = {}): Promise<UserClient<J>> {
    const ws = new WebSocket(`ws+unix://${socketPath}:/`);
    await once(ws, 'open'); // rejects on an 'error' first
    ws.on('error', () => undefined);
    return new UserClient<J>(wsTransport(ws)).handshake(opts);
  }

  /** The initialize handshake; keeps its result. */
  private async handshake(opts: UserClientOptions): Promise<this> {
    this.initializeResult = await this.request<J>('initialize', {
      clientInfo: { name: opts.name ?? 'test-user-client', title: 'Test user client', version: '0.0.0' },
      capabilities: { experimentalApi: true },
    });
    this.notify('initialized');
    return this;
  }

  /** Send a request; resolves with `result`, rejects with RpcError or on timeout / close. */
  async request<T = J>(method: string, params?: unknown, timeoutMs = 15_000): Promise<T> {
    return (await this.requestEntry(method, params, timeoutMs)).result as T;
  }

  /** Like `request`, but resolves with the reply's log entry (its `seq` orders it among notifications). */
  requestEntry(method: string, params?: unknown, timeoutMs = 15_000): Promise<LogEntry<J>> {
    if (this.closed) return Promise.reject(new Error(`connection closed; cannot send ${method}`));
    const id = this.nextId++;
    return new Promise<LogEntry<J>>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        method,
        settle: (e) => {
          clearTimeout(timer);
          if (e instanceof Error) reject(e);
          else if (e.error) reject(new RpcError(method, e.error.code, e.error.message, e.error.data));
          else resolve(e);
        },
      });
      this.transport.send(JSON.stringify(params === undefined ? { id, method } : { id, method, params }));
    });
  }

  notify(method: string, params?: unknown): void {
    this.transport.send(JSON.stringify(params === undefined ? { method } : { method, params }));
  }

  /** Answer a server request (e.g. an approval: `{decision:"accept"}`). */
  respond(id: number | string, result: unknown): void {
    this.transport.send(JSON.stringify({ id, result }));
  }

  get notifications(): Notification<J>[] {
    return this.log.filter((e): e is Notification<J> => e.kind === 'notification');
  }

  get serverRequests(): ServerRequest<J>[] {
    return this.log.filter((e): e is ServerRequest<J> => e.kind === 'serverRequest');
  }

  /** Current last sequence number; pass it as `since` to wait only for later messages. */
  get lastSeq(): number {
    return this.seq;
  }

  /** Wait for a notification matching predicate (or, given a string, with that method). */
  waitFor(
    predicate: ((n: Notification<J>) => boolean) | string,
    timeoutMs = 15_000,
    since = 0,
  ): Promise<Notification<J>> {
    const what = typeof predicate === 'string' ? predicate : 'notification';
    return this.waitForKind('notification', predicate, timeoutMs, since, what);
  }

  /** Wait for a server request (approval...) matching predicate / method. */
  waitForServerRequest(
    predicate: ((r: ServerRequest<J>) => boolean) | string = () => true,
    timeoutMs = 15_000,
    since = 0,
  ): Promise<ServerRequest<J>> {
    return this.waitForKind('serverRequest', predicate, timeoutMs, since, 'server request');
  }

  /**
   * Resolves with the first entry of `kind` (seq > since) matching `predicate`, looking at what
   * already arrived first. Rejects after timeoutMs, or when the connection closes.
   */
  private waitForKind<E extends LogEntry<J>>(
    kind: E['kind'],
    predicate: ((e: E) => boolean) | string,
    timeoutMs: number,
    since: number,
    what: string,
  ): Promise<E> {
    const pred = typeof predicate === 'string' ? (e: E) => e.method === predicate : predicate;
    const find = () => this.log.find((e): e is E => e.seq > since && e.kind === kind && pred(e as E));
    const hit = find();
    if (hit) return Promise.resolve(hit);
    return new Promise<E>((resolve, reject) => {
      const fail = (why: string) => end(() => reject(new Error(why)));
      const check = () => {
        const h = find();
        if (h) end(() => resolve(h));
        else if (this.closed) fail(`connection closed while waiting for ${what}`);
      };
      const timer = setTimeout(() => {
        fail(`timed out after ${timeoutMs} ms waiting for ${what}; got: ${this.summary(since)}`);
      }, timeoutMs);
      const end = (settle: () => void) => {
        clearTimeout(timer);
        this.watchers.delete(check);
        settle();
      };
      this.watchers.add(check);
    });
  }

  /** Compact one-line-per-entry rendering of the log after `since` (for evidence and failures). */
  summary(since = 0, threadId?: string): string {
    // Given `threadId`, another thread's entries are left out (those naming no thread are kept).
    const other = (id: unknown) => !!threadId && id !== undefined && id !== threadId;
    const shown = this.log.filter((e) => e.seq > since && !other(field(e.params, 'threadId')));
    return shown.map(describe).join(' | ');
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const t = setTimeout(() => resolve(), 1000);
      this.transport.onClose(() => {
        clearTimeout(t);
        resolve();
      });
      this.transport.close();
    });
  }

  private poke(): void {
    for (const w of [...this.watchers]) w();
  }

  private onMessage(text: string): void {
    const envelope = EnvelopeSchema.safeParse(parseJson(text));
    if (!envelope.success) return; // not JSON, or not a JSON-RPC message: dropped
    const msg = envelope.data;
    const base = { seq: ++this.seq, at: Date.now() };
    if (msg.method !== undefined && msg.id !== undefined && msg.id !== null) {
      this.log.push({ ...base, kind: 'serverRequest', method: msg.method, id: msg.id, params: msg.params as J });
    } else if (msg.method !== undefined) {
      const entry: Notification<J> = { ...base, kind: 'notification', method: msg.method, params: msg.params as J };
      this.log.push(entry);
      for (const listener of this.listeners) listener(entry);
    } else if (msg.id !== undefined) {
      const p = msg.id === null ? undefined : this.pending.get(msg.id);
      const entry: LogEntry<J> = {
        ...base,
        kind: 'response',
        method: p?.method ?? '?',
        ...(msg.id !== null ? { id: msg.id } : {}),
        result: msg.result as J,
        ...(msg.error ? { error: msg.error as LogEntry<J>['error'] } : {}),
      };
      this.log.push(entry);
      if (p && msg.id !== null) {
        this.pending.delete(msg.id);
        p.settle(entry);
      }
    }
    this.poke();
  }
}
