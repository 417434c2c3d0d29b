// The JSON-RPC client for the Codex app-server: a JSON-RPC connection (rpcConnection.ts) over one
// of the transports, the handshake, typed calls validated with zod, and events.
import type { Message, NotificationMessage } from 'vscode-jsonrpc/node';
import { randomBytes } from 'node:crypto';
import * as z from '../util/zod';
import type { GoalStatus } from '../model/watch';
import {
  ConnectionLostError,
  type DaemonListener,
  type DaemonSession,
  ProtocolError,
  type RequestId,
  RpcError,
  type Resumed,
  STATUS_PAGE,
  type Thread,
  type ThreadPage,
} from './daemon';
import { daemonVersion } from '../model/codexVersion';
import {
  ErrorNotificationSchema,
  GoalResultSchema,
  GoalUpdatedSchema,
  InitializeResultSchema,
  LoadedListResultSchema,
  OPT_OUT_NOTIFICATIONS,
  RateLimitsResultSchema,
  type RateLimitSnapshot,
  RateLimitsUpdatedSchema,
  ServerRequestParamsSchema,
  ServerRequestResolvedSchema,
  ThreadIdSchema,
  ThreadListResultSchema,
  ResumeResultSchema,
  ThreadResultSchema,
  ThreadStartedSchema,
  ThreadStatusChangedSchema,
  TokenUsageSchema,
  TurnNotificationSchema,
  TurnsListResultSchema,
} from './schema';
import { excerpt } from './lineSplitter';
import { tapReader, tapWriter } from './messageTaps';
import { type Incoming, RpcConnection, RpcResponseError } from './rpcConnection';
import { openTransport, type Transport, type TransportTarget } from './transport';
import { errorText } from '../util/errorText';

export interface ClientOptions {
  clientVersion: string;
  /** A reply that takes longer is treated as lost (default 15 s). */
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  onStderr?: (line: string) => void;
  /** What counts the request timeout: real timers unless given (tests pass a fake clock). */
  timers?: RequestTimers;
}

export interface RequestTimers {
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/**
 * The thread sources `thread/list` is asked for: every app a person or a script runs (without
 * `sourceKinds` the daemon lists only "interactive" ones). Sub-agents' threads are left out:
 * their goals belong to their parent thread.
 */
const LISTED_SOURCES = ['cli', 'vscode', 'exec', 'appServer', 'unknown'] as const;

const REAL_TIMERS: RequestTimers = {
  set: (callback, ms) => setTimeout(callback, ms),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

const DEFAULT_TIMEOUT_MS = 15_000;
const UnknownSchema = z.unknown();

/** Opens a transport, performs the handshake and returns a session. */
export async function connectDaemon(
  target: TransportTarget,
  listener: DaemonListener,
  options: ClientOptions,
): Promise<DaemonSession> {
  const transport = await openTransport(target, {
    connectTimeoutMs: options.connectTimeoutMs,
    onStderr: options.onStderr,
  });
  return startSession(transport, listener, options);
}

/** The handshake over an open transport (`initialize`, then `initialized`). */
export async function startSession(
  transport: Transport,
  listener: DaemonListener,
  options: ClientOptions,
): Promise<DaemonSession> {
  const client = new JsonRpcDaemon(transport, listener, options);
  try {
    await client.initialize();
  } catch (error) {
    // The listener hears why the connection ends: the handshake's own failure, not "closed by client".
    await client.close(`the handshake failed: ${errorText(error)}`);
    throw error;
  }
  return client;
}

class JsonRpcDaemon implements DaemonSession {
  readonly describe: string;
  codexVersion: string | null = null;
  private readonly connection: RpcConnection;
  private closedReason: string | null = null;
  private readonly closeWaiters = new Set<(reason: string) => void>();
  private readonly timeoutMs: number;
  /** Ids of this client's requests still waiting for their reply. */
  private readonly pending = new Set<RequestId>();
  /**
   * Server requests reach the listener as notifications of this method (never on the wire: a
   * random name per connection), so that they are dispatched in wire order with the rest.
   */
  private readonly serverRequestEvent = `codexGoalRecovery/serverRequest/${randomBytes(8).toString('hex')}`;

  constructor(
    private readonly transport: Transport,
    private readonly listener: DaemonListener,
    private readonly options: ClientOptions,
  ) {
    this.describe = transport.describe;
    this.timeoutMs = options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    const reader = tapReader(transport.reader, (message) => this.screen(message));
    const writer = tapWriter(transport.writer, this.pending);
    this.connection = new RpcConnection(reader, writer, { error: (m) => listener.protocolProblem(m) });
    this.connection.onNotification((method: string, params: unknown) => this.notification(method, params));
    this.connection.onError((error) => listener.protocolProblem(error.message));
    this.connection.onClose(() => this.markClosed('connection closed'));
    transport.onClose((reason) => this.markClosed(reason));
    this.connection.listen();
  }

  async initialize(): Promise<void> {
    const result = await this.call(
      'initialize',
      {
        clientInfo: { name: 'codex-goal-recovery', title: 'Codex Goal Recovery', version: this.options.clientVersion },
        capabilities: { experimentalApi: true, optOutNotificationMethods: [...OPT_OUT_NOTIFICATIONS] },
      },
      InitializeResultSchema,
    );
    this.codexVersion = daemonVersion(result.userAgent);
    await this.connection.sendNotification('initialized');
  }

  async listLoaded(): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | null | undefined = null;
    do {
      const page: z.infer<typeof LoadedListResultSchema> = await this.call(
        'thread/loaded/list',
        cursor ? { cursor } : {},
        LoadedListResultSchema,
      );
      ids.push(...page.data);
      cursor = page.nextCursor;
    } while (cursor);
    return ids;
  }

  async listThreads(cursor: string | null, limit: number): Promise<ThreadPage> {
    const page = await this.threadList({ sortKey: 'updated_at', sortDirection: 'desc', limit }, cursor);
    return { threads: page.data, nextCursor: page.nextCursor ?? null };
  }

  async readThreads(threadIds: readonly string[]): Promise<Thread[] | null> {
    if (threadIds.length === 0) return [];
    if (threadIds.length > STATUS_PAGE) throw new Error(`internal: ${threadIds.length} thread ids in one page`);
    const page = await this.threadList({ includedThreadIds: [...threadIds], limit: threadIds.length });
    const asked = new Set(threadIds);
    return page.data.every((t) => asked.has(t.id)) ? page.data : null;
  }

  /**
   * `thread/list` of every listed source, from the state DB alone (no scan of every rollout for
   * repairs): measured 8× cheaper with 200 threads. Its `updatedAt` can be a second behind the full
   * listing's; only DB values are ever compared (docs/daemon-behaviour.md (k)).
   */
  private threadList(params: object, cursor: string | null = null) {
    const all = { ...params, sourceKinds: [...LISTED_SOURCES], useStateDbOnly: true, ...(cursor ? { cursor } : {}) };
    return this.call('thread/list', all, ThreadListResultSchema);
  }

  async getGoal(threadId: string) {
    return (await this.call('thread/goal/get', { threadId }, GoalResultSchema)).goal;
  }

  async readThread(threadId: string) {
    return (await this.call('thread/read', { threadId }, ThreadResultSchema)).thread;
  }

  async latestTurn(threadId: string) {
    const result = await this.call(
      'thread/turns/list',
      { threadId, limit: 1, sortDirection: 'desc' },
      TurnsListResultSchema,
    );
    return result.data[0] ?? null;
  }

  async resume(threadId: string): Promise<Resumed> {
    const result = await this.call(
      'thread/resume',
      { threadId, excludeTurns: true, initialTurnsPage: { limit: 1, sortDirection: 'desc' } },
      ResumeResultSchema,
    );
    const page = result.initialTurnsPage;
    return { thread: result.thread, turn: page ? (page.data[0] ?? null) : undefined };
  }

  async setGoalActive(threadId: string) {
    return (await this.call('thread/goal/set', { threadId, status: 'active', origin: 'automatic' }, GoalResultSchema))
      .goal;
  }

  async setGoalStatusAsUser(threadId: string, status: GoalStatus) {
    return (await this.call('thread/goal/set', { threadId, status, origin: 'user' }, GoalResultSchema)).goal;
  }

  async readRateLimits(): Promise<RateLimitSnapshot[]> {
    const result = await this.call('account/rateLimits/read', {}, RateLimitsResultSchema);
    const all = [result.rateLimits, ...Object.values(result.rateLimitsByLimitId ?? {})];
    return all.filter((s): s is RateLimitSnapshot => s != null);
  }

  request(method: string, params: object): Promise<unknown> {
    return this.call(method, params, UnknownSchema);
  }

  async close(reason = 'closed by client'): Promise<void> {
    this.markClosed(reason);
    this.connection.dispose();
    await this.transport.close();
  }

  /** Closes the connection from this side, for `reason` (told to the listener at once). */
  private abandon(reason: string): void {
    this.close(reason).catch((error: unknown) =>
      this.listener.protocolProblem(`closing after ${reason}: ${errorText(error)}`),
    );
  }

  private async call<S extends z.ZodMiniType>(method: string, params: object, schema: S): Promise<z.infer<S>> {
    if (this.closedReason !== null) throw new ConnectionLostError(method, this.closedReason);
    let timer: unknown;
    let onClose: ((reason: string) => void) | undefined;
    const timers = this.options.timers ?? REAL_TIMERS;
    const lost = new Promise<never>((_, reject) => {
      timer = timers.set(() => {
        const reason = `timed out after ${this.timeoutMs} ms`;
        reject(new ConnectionLostError(method, reason));
        // A reply that does not come leaves the connection in doubt (wedged, or a daemon that
        // hangs), and the events behind it may never come either: drop it, so the caller
        // reconnects and reads everything again, as after any lost connection.
        this.abandon(`${method} ${reason}`);
      }, this.timeoutMs);
      onClose = (reason) => reject(new ConnectionLostError(method, reason));
      this.closeWaiters.add(onClose);
    });
    try {
      const raw = await Promise.race([this.connection.sendRequest(method, params), lost]);
      const parsed = schema.safeParse(raw);
      if (!parsed.success)
        throw new ProtocolError(method, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      return parsed.data;
    } catch (error) {
      if (error instanceof ConnectionLostError || error instanceof ProtocolError) throw error;
      // The daemon's error reply (even one that came just before the connection closed), or a write
      // that failed on an open connection.
      const answered = error instanceof RpcResponseError && (error.replied || this.closedReason === null);
      if (answered) throw new RpcError(method, error.code, error.message);
      throw new ConnectionLostError(method, this.closedReason ?? errorText(error));
    } finally {
      if (timer !== undefined) timers.clear(timer);
      if (onClose) this.closeWaiters.delete(onClose);
    }
  }

  /**
   * No request goes out from now on; what the daemon sent before the close is dispatched first (a
   * reply answers its request), then the waiters still without one and the listener are told (at
   * once when this side closes: `close` disposes the connection, which dispatches nothing more).
   */
  private markClosed(reason: string): void {
    if (this.closedReason !== null) return;
    this.closedReason = reason;
    this.connection.afterIncoming(() => {
      for (const waiter of this.closeWaiters) waiter(reason);
      this.closeWaiters.clear();
      this.listener.closed(reason);
    });
  }

  /**
   * What the connection (rpcConnection.ts) gets of an incoming message:
   *  - a server request (an approval, user input) never reaches it: it is never answered here
   *    (an answer, even an error, the daemon takes as a decline). It goes on as an internal
   *    notification, so the listener hears of it in wire order, after the events before it;
   *  - `$/cancelRequest` concerns the daemon's own requests, which this client never handles;
   *  - a reply to no pending request of this client (unknown, duplicate or null id) is dropped
   *    and reported: the connection would drop it silently, or mistake it for a reply that is
   *    still queued under the same id.
   */
  private screen(message: Message): Message | null {
    const m = message as Incoming;
    if (typeof m.method === 'string') {
      if (m.id === undefined) return m.method === '$/cancelRequest' ? null : message;
      const event: NotificationMessage = {
        jsonrpc: '2.0',
        method: this.serverRequestEvent,
        params: { id: m.id, method: m.method, params: m.params },
      };
      return event;
    }
    const id = m.id;
    if ((typeof id === 'string' || typeof id === 'number') && this.pending.delete(id)) return message;
    const shownId = excerpt(JSON.stringify(id) ?? String(id), 60);
    const detail = m.error
      ? `: error ${String(m.error.code)} ${JSON.stringify(excerpt(String(m.error.message), 80))}`
      : '';
    this.listener.protocolProblem(
      `dropped a${m.error ? 'n error' : ''} reply to no pending request of this client (id ${shownId})${detail}`,
    );
    return null;
  }

  private serverRequestArrived(params: unknown): void {
    const r = params as { id: RequestId; method: string; params: unknown };
    const p = ServerRequestParamsSchema.safeParse(r.params);
    this.listener.serverRequest(p.success ? p.data.threadId : null, r.id, r.method);
  }

  private notification(method: string, params: unknown): void {
    if (method === this.serverRequestEvent) return this.serverRequestArrived(params);
    const l = this.listener;
    const read = <S extends z.ZodMiniType>(schema: S, use: (value: z.infer<S>) => void) => {
      const parsed = schema.safeParse(params);
      if (parsed.success) use(parsed.data);
      else
        l.protocolProblem(
          `ignored malformed ${method} notification: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`,
        );
    };
    switch (method) {
      case 'thread/goal/updated':
        return read(GoalUpdatedSchema, (p) => l.goalUpdated(p.threadId, p.goal, p.turnId ?? null));
      case 'thread/goal/cleared':
        return read(ThreadIdSchema, (p) => l.goalCleared(p.threadId));
      case 'thread/status/changed':
        return read(ThreadStatusChangedSchema, (p) => l.threadStatus(p.threadId, p.status));
      case 'thread/started':
        return read(ThreadStartedSchema, (p) => l.threadStarted(p.thread));
      case 'thread/closed':
        return read(ThreadIdSchema, (p) => l.threadClosed(p.threadId));
      case 'turn/started':
        return read(TurnNotificationSchema, (p) => l.turnStarted(p.threadId, p.turn));
      case 'turn/completed':
        return read(TurnNotificationSchema, (p) => l.turnCompleted(p.threadId, p.turn));
      case 'thread/tokenUsage/updated':
        return read(TokenUsageSchema, (p) => l.responseCompleted(p.threadId));
      case 'error':
        return read(ErrorNotificationSchema, (p) => l.error(p.threadId, p.turnId ?? null, p.error, p.willRetry));
      case 'serverRequest/resolved':
        return read(ServerRequestResolvedSchema, (p) => l.serverRequestResolved(p.threadId, p.requestId));
      case 'account/rateLimits/updated':
        return read(RateLimitsUpdatedSchema, (p) => l.rateLimitsUpdated(p.rateLimits));
      default:
        return; // not read by the engine
    }
  }
}
