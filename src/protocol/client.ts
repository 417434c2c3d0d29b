// The JSON-RPC client for the Codex app-server: vscode-jsonrpc over one of the
// transports, the handshake, typed calls validated with zod, and events.
import {
  createMessageConnection,
  type DataCallback,
  type Disposable,
  type Message,
  type MessageConnection,
  type MessageReader,
  type PartialMessageInfo,
  type Event,
  ResponseError,
} from 'vscode-jsonrpc/node';
import { z } from 'zod';
import type { GoalStatus } from '../model/watch';
import {
  ConnectionLostError,
  type DaemonListener,
  type DaemonSession,
  ProtocolError,
  type RequestId,
  RpcError,
} from './daemon';
import {
  ErrorNotificationSchema,
  GoalResultSchema,
  GoalUpdatedSchema,
  InitializeResultSchema,
  LoadedListResultSchema,
  OPT_OUT_NOTIFICATIONS,
  RateLimitsResultSchema,
  type RateLimitsResult,
  ServerRequestParamsSchema,
  ServerRequestResolvedSchema,
  ThreadIdSchema,
  ThreadResultSchema,
  ThreadStartedSchema,
  ThreadStatusChangedSchema,
  TurnNotificationSchema,
  TurnsListResultSchema,
} from './schema';
import { openTransport, type Transport, type TransportTarget } from './transport';

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
export async function startSession(transport: Transport, listener: DaemonListener, options: ClientOptions): Promise<DaemonSession> {
  const client = new JsonRpcDaemon(transport, listener, options);
  try {
    await client.initialize();
  } catch (error) {
    // The listener hears why the connection ends: the handshake's own failure, not "closed by client".
    await client.close(`the handshake failed: ${error instanceof Error ? error.message : String(error)}`);
    throw error;
  }
  return client;
}

/** Sees every incoming message before vscode-jsonrpc dispatches it, to learn server requests' ids. */
class TapReader implements MessageReader {
  constructor(private readonly inner: MessageReader, private readonly tap: (message: Message) => void) {}
  get onError(): Event<Error> { return this.inner.onError; }
  get onClose(): Event<void> { return this.inner.onClose; }
  get onPartialMessage(): Event<PartialMessageInfo> { return this.inner.onPartialMessage; }
  listen(callback: DataCallback): Disposable {
    return this.inner.listen((message) => {
      this.tap(message);
      callback(message);
    });
  }
  dispose(): void { this.inner.dispose(); }
}

class JsonRpcDaemon implements DaemonSession {
  readonly describe: string;
  private readonly connection: MessageConnection;
  private closedReason: string | null = null;
  private readonly closeWaiters = new Set<(reason: string) => void>();
  private readonly timeoutMs: number;

  constructor(private readonly transport: Transport, private readonly listener: DaemonListener, private readonly options: ClientOptions) {
    this.describe = transport.describe;
    this.timeoutMs = options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    const reader = new TapReader(transport.reader, (message) => this.observe(message));
    this.connection = createMessageConnection(reader, transport.writer, {
      error: (m) => listener.protocolProblem(m),
      warn: (m) => listener.protocolProblem(m),
      info: () => undefined,
      log: () => undefined,
    });
    // Server requests belong to the user's client. vscode-jsonrpc would answer a request
    // without a handler with an error, which the daemon takes as a decline: register a
    // handler that never replies, so the user's own client decides.
    this.connection.onRequest(() => new Promise<never>(() => undefined));
    this.connection.onNotification((method: string, params: unknown) => this.notification(method, params));
    this.connection.onError(([error]) => listener.protocolProblem(error.message));
    this.connection.onClose(() => this.markClosed('connection closed'));
    transport.onClose((reason) => this.markClosed(reason));
    this.connection.listen();
  }

  async initialize(): Promise<void> {
    await this.call('initialize', {
      clientInfo: { name: 'codex-goal-recovery', title: 'Codex Goal Recovery', version: this.options.clientVersion },
      capabilities: { experimentalApi: true, optOutNotificationMethods: [...OPT_OUT_NOTIFICATIONS] },
    }, InitializeResultSchema);
    await this.connection.sendNotification('initialized');
  }

  async listLoaded(): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | null | undefined = null;
    do {
      const page: z.infer<typeof LoadedListResultSchema> = await this.call('thread/loaded/list', cursor ? { cursor } : {}, LoadedListResultSchema);
      ids.push(...page.data);
      cursor = page.nextCursor;
    } while (cursor);
    return ids;
  }

  async getGoal(threadId: string) {
    return (await this.call('thread/goal/get', { threadId }, GoalResultSchema)).goal;
  }

  async readThread(threadId: string) {
    return (await this.call('thread/read', { threadId }, ThreadResultSchema)).thread;
  }

  async latestTurn(threadId: string) {
    const result = await this.call('thread/turns/list', { threadId, limit: 1, sortDirection: 'desc' }, TurnsListResultSchema);
    return result.data[0] ?? null;
  }

  async resume(threadId: string) {
    return (await this.call('thread/resume', { threadId, excludeTurns: true }, ThreadResultSchema)).thread;
  }

  async setGoalActive(threadId: string) {
    return (await this.call('thread/goal/set', { threadId, status: 'active', origin: 'automatic' }, GoalResultSchema)).goal;
  }

  async setGoalStatusAsUser(threadId: string, status: GoalStatus) {
    return (await this.call('thread/goal/set', { threadId, status, origin: 'user' }, GoalResultSchema)).goal;
  }

  async rateLimitResetAt(): Promise<number | null> {
    return soonestReset(await this.call('account/rateLimits/read', {}, RateLimitsResultSchema));
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
    this.close(reason).catch((error: unknown) => this.listener.protocolProblem(`closing after ${reason}: ${error instanceof Error ? error.message : String(error)}`));
  }

  private async call<S extends z.ZodTypeAny>(method: string, params: object, schema: S): Promise<z.infer<S>> {
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
      if (!parsed.success) throw new ProtocolError(method, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
      return parsed.data;
    } catch (error) {
      if (error instanceof ConnectionLostError || error instanceof ProtocolError) throw error;
      if (this.closedReason !== null) throw new ConnectionLostError(method, this.closedReason);
      if (error instanceof ResponseError) throw new RpcError(method, error.code, error.message);
      throw new ConnectionLostError(method, error instanceof Error ? error.message : String(error));
    } finally {
      if (timer !== undefined) timers.clear(timer);
      if (onClose) this.closeWaiters.delete(onClose);
    }
  }

  private markClosed(reason: string): void {
    if (this.closedReason !== null) return;
    this.closedReason = reason;
    for (const waiter of this.closeWaiters) waiter(reason);
    this.closeWaiters.clear();
    this.listener.closed(reason);
  }

  private observe(message: Message): void {
    const m = message as { id?: unknown; method?: unknown; params?: unknown };
    if (typeof m.method !== 'string' || (typeof m.id !== 'string' && typeof m.id !== 'number')) return;
    const params = ServerRequestParamsSchema.safeParse(m.params);
    this.listener.serverRequest(params.success ? params.data.threadId : null, m.id as RequestId, m.method);
  }

  private notification(method: string, params: unknown): void {
    const l = this.listener;
    const read = <S extends z.ZodTypeAny>(schema: S, use: (value: z.infer<S>) => void) => {
      const parsed = schema.safeParse(params);
      if (parsed.success) use(parsed.data);
      else l.protocolProblem(`ignored malformed ${method} notification: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`);
    };
    switch (method) {
      case 'thread/goal/updated': return read(GoalUpdatedSchema, (p) => l.goalUpdated(p.threadId, p.goal, p.turnId ?? null));
      case 'thread/goal/cleared': return read(ThreadIdSchema, (p) => l.goalCleared(p.threadId));
      case 'thread/status/changed': return read(ThreadStatusChangedSchema, (p) => l.threadStatus(p.threadId, p.status));
      case 'thread/started': return read(ThreadStartedSchema, (p) => l.threadStarted(p.thread));
      case 'thread/closed': return read(ThreadIdSchema, (p) => l.threadClosed(p.threadId));
      case 'turn/started': return read(TurnNotificationSchema, (p) => l.turnStarted(p.threadId, p.turn));
      case 'turn/completed': return read(TurnNotificationSchema, (p) => l.turnCompleted(p.threadId, p.turn));
      case 'error': return read(ErrorNotificationSchema, (p) => l.error(p.threadId, p.turnId ?? null, p.error, p.willRetry));
      case 'serverRequest/resolved': return read(ServerRequestResolvedSchema, (p) => l.serverRequestResolved(p.threadId, p.requestId));
      default: return; // not read by the engine
    }
  }
}

/** The reset time (ms) to wait for: the latest reset among exhausted windows, else the soonest known. */
export function soonestReset(result: RateLimitsResult): number | null {
  const snapshots = [result.rateLimits, ...Object.values(result.rateLimitsByLimitId ?? {})];
  const exhausted: number[] = [];
  const any: number[] = [];
  for (const snapshot of snapshots) {
    for (const window of [snapshot?.primary, snapshot?.secondary]) {
      if (window?.resetsAt == null) continue;
      any.push(window.resetsAt * 1000);
      if (window.usedPercent >= 100) exhausted.push(window.resetsAt * 1000);
    }
  }
  if (exhausted.length) return Math.max(...exhausted);
  return any.length ? Math.min(...any) : null;
}
