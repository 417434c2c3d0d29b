// A fake Codex app-server for unit tests of the core, speaking the real wire format:
// newline-delimited JSON-RPC (no "jsonrpc" field, notifications with emittedAtMs) to the
// product's real client over in-memory streams. Modelled on the seed's fakeDaemon: hooks
// run before a reply (`before`), replies can be lost (`lostReply`) or errors (`setError`).
//
// Strict (test/support/fakeStrict.ts): it fails the test at once on what the real daemon would
// reject or the product's rules forbid. Its threads, goals and turns are fakeWorld.ts's; one
// connection (the wire format) is fakeConnection.ts's.
import * as readline from 'node:readline';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startSession } from '../../src/protocol/client';
import type { Connector, DaemonSession } from '../../src/protocol/daemon';
import type { GoalStatus } from '../../src/model/watch';
import { FakeConnection, type WireMessage } from './fakeConnection';
import { StrictDaemon } from './fakeStrict';
import type { Reorderer } from './fakeReorder';
import { tokenCount } from './rolloutLines';
import {
  type FakeThread,
  type FakeTurn,
  goalEventLine,
  intentLine,
  NULL_SNAPSHOT,
  testGoal,
  testTurn,
} from './fakeWorld';

export { FakeConnection, type WireMessage } from './fakeConnection';
export { StrictDaemonError, type Verdict, type Violation, type ViolationRule } from './fakeStrict';
export {
  type FakeGoal,
  type FakeThread,
  type FakeTurn,
  goalEventLine,
  intentLine,
  modelGoalCallLine,
  NULL_SNAPSHOT,
  testGoal,
  testTurn,
} from './fakeWorld';

export class FakeDaemon extends StrictDaemon {
  readonly threads = new Map<string, FakeThread>();
  readonly requests: WireMessage[] = [];
  /** Runs before each request is handled; `false` drops it unanswered (a test's judge refused it). */
  before: ((m: WireMessage) => void | boolean) | null = null;
  lostReply = false;
  setError: { code: number; message: string } | null = null;
  /** When set, `thread/resume` fails with this message. */
  resumeError: string | null = null;
  /** `thread/list` ignores `includedThreadIds` and lists everything, as 0.169.0 does (0.171.0 filters). */
  listIgnoresIncludedIds = false;
  rateLimitResetSeconds: number | null = null;
  /** The reordering mode (fakeReorder.ts) for the connections accepted from now on; null: none. */
  reorder: Reorderer | null = null;
  /** Refuse new connections (a daemon that is down). */
  down = false;
  private readonly connections: FakeConnection[] = [];
  private readonly serverRequestIds = new Set<string | number>();
  /** Server requests not yet resolved: the real daemon sends them again to a connection that resumes the thread. */
  private readonly pendingServerRequests = new Map<string | number, WireMessage & { threadId: string | null }>();

  constructor(readonly dir: string) {
    super();
  }

  /** A loaded thread with a goal, like the seed's default: goal active, turn running. */
  addThread(
    id = 'thread-1',
    goal: GoalStatus = 'active',
    turn: FakeTurn = testTurn('turn-1', 'inProgress'),
    status = 'systemError',
  ): FakeThread {
    const rollout = path.join(this.dir, `rollout-${id}.jsonl`);
    fs.appendFileSync(rollout, '');
    const thread: FakeThread = {
      id,
      goal: testGoal(id, goal),
      turn,
      status: { type: status },
      path: rollout,
      loaded: true,
      name: null,
    };
    this.threads.set(id, thread);
    return thread;
  }

  thread(id = 'thread-1'): FakeThread {
    const t = this.threads.get(id);
    if (!t) throw new Error(`no fake thread ${id}`);
    return t;
  }

  /** The seed's fail(): the goal blocked and its turn failed with a transient error. */
  fail(id = 'thread-1', turnId?: string, codexErrorInfo: unknown = 'internalServerError'): void {
    const t = this.thread(id);
    t.goal = testGoal(id, 'blocked');
    t.turn = testTurn(turnId ?? t.turn.id, 'failed', codexErrorInfo);
    t.status = { type: 'systemError' };
  }

  connector(options: { requestTimeoutMs?: number } = {}): Connector {
    return async (listener): Promise<DaemonSession> => {
      const connection = this.accept();
      return startSession(connection.transport(), listener, {
        clientVersion: 'test',
        requestTimeoutMs: options.requestTimeoutMs ?? 5_000,
      });
    };
  }

  /** A new connection, without a client: for a test that puts something between the two (a proxy). */
  accept(): FakeConnection {
    if (this.down) throw new Error('fake daemon is down');
    const connection = new FakeConnection();
    this.connections.push(connection);
    const serve = (line: string) => this.receive(connection, line);
    readline
      .createInterface({ input: connection.fromClient })
      .on('line', this.reorder?.attach(connection, serve) ?? serve);
    return connection;
  }

  /** Requests of `method` the engine made (about `threadId` alone, when given). */
  count(method: string, threadId?: string): number {
    return this.requests.filter(
      (m) => m.method === method && (threadId === undefined || m.params?.threadId === threadId),
    ).length;
  }

  /** A notification to every open connection. */
  notify(method: string, params: unknown): void {
    for (const c of this.open()) c.send({ method, params: params as Record<string, unknown>, emittedAtMs: Date.now() });
  }

  /** A raw line (not necessarily JSON) to every open connection: a daemon that misbehaves. */
  sendRaw(line: string): void {
    for (const c of this.open()) c.sendRaw(line);
  }

  /** A notification only to the connections subscribed to the thread (turn events, `error`: §e). */
  notifySubscribed(threadId: string, method: string, params: unknown): void {
    for (const c of this.open())
      if (c.subscribed.has(threadId))
        c.send({ method, params: params as Record<string, unknown>, emittedAtMs: Date.now() });
  }

  /** A server-to-client request (an approval) to every connection subscribed to the thread. */
  serverRequest(id: string | number, method: string, params: Record<string, unknown>): void {
    this.serverRequestIds.add(id);
    const threadId = typeof params.threadId === 'string' ? params.threadId : null;
    this.pendingServerRequests.set(id, { id, method, params, threadId });
    // Measured (shared doc, "Framing and handshake"): connections not subscribed to its thread never
    // receive it (one without a thread, which the daemon does not send, goes to every connection).
    for (const c of this.open()) if (threadId === null || c.subscribed.has(threadId)) c.send({ id, method, params });
  }

  /** The user's client answered a server request: `serverRequest/resolved` to every subscribed connection. */
  resolveServerRequest(id: string | number): void {
    const request = this.pendingServerRequests.get(id);
    this.pendingServerRequests.delete(id);
    if (request?.threadId)
      this.notifySubscribed(request.threadId, 'serverRequest/resolved', { threadId: request.threadId, requestId: id });
  }

  /**
   * A turn failing the way the real daemon reports it (§a): an optional stream retry
   * (`error {willRetry:true}`), then the goal `blocked` (or `usageLimited`) and `systemError`
   * (sent to every connection) before the final `error` and `turn/completed(failed)` (sent to
   * the subscribed ones). `phase` splits it where the real daemon may be read in between:
   * 'goal' applies the goal and status, 'turn' the turn's end, 'both' does both.
   */
  failWithEvents(
    id: string,
    opts: {
      codexErrorInfo?: unknown;
      retryFirst?: boolean;
      phase?: 'goal' | 'turn' | 'both';
      goal?: GoalStatus;
      /**
       * A usage limit: the snapshot the provider's 429 headers made (default: none, all fields
       * null, as the real daemon sends it for a 429 without them: §o), and the turn's message.
       */
      rateLimits?: Record<string, unknown>;
      message?: string;
    } = {},
  ): void {
    const t = this.thread(id);
    const info = opts.codexErrorInfo ?? 'internalServerError';
    const phase = opts.phase ?? 'both';
    const turnId = t.turn.id;
    const usage = info === 'usageLimitExceeded';
    if (phase !== 'turn') {
      if (opts.retryFirst) {
        this.notifySubscribed(id, 'error', {
          threadId: id,
          turnId,
          willRetry: true,
          error: {
            message: 'Reconnecting... 1/1',
            codexErrorInfo: { responseStreamDisconnected: { httpStatusCode: null } },
            additionalDetails: null,
          },
        });
      }
      // §o: every usage-limit 429 sends `account/rateLimits/updated` to the connections subscribed
      // to the thread, just before the goal turns usageLimited.
      // (r): the same snapshot goes into the thread's rollout, a `token_count` line of the turn.
      if (usage) {
        const rateLimits = { ...NULL_SNAPSHOT, ...opts.rateLimits };
        if (fs.existsSync(t.path)) fs.appendFileSync(t.path, `${tokenCount(rateLimits)}\n`);
        this.notifySubscribed(id, 'account/rateLimits/updated', { rateLimits });
      }
      t.goal = testGoal(id, opts.goal ?? (usage ? 'usageLimited' : 'blocked'));
      t.status = { type: 'systemError' };
      this.notify('thread/goal/updated', { threadId: id, turnId, goal: t.goal });
      this.notify('thread/status/changed', { threadId: id, status: t.status });
    }
    if (phase !== 'goal') {
      t.turn = testTurn(turnId, 'failed', info);
      if (opts.message !== undefined && t.turn.error) t.turn.error.message = opts.message;
      this.notifySubscribed(id, 'error', { threadId: id, turnId, willRetry: false, error: t.turn.error });
      this.notifySubscribed(id, 'turn/completed', { threadId: id, turn: t.turn });
    }
  }

  /**
   * A model response on the thread's running turn came back whole: `thread/tokenUsage/updated` to
   * the subscribed connections (measured, docs/daemon-behaviour.md (p)).
   */
  answer(id: string): void {
    const t = this.thread(id);
    this.notifySubscribed(id, 'thread/tokenUsage/updated', {
      threadId: id,
      turnId: t.turn.id,
      tokenUsage: { total: { totalTokens: 120 }, last: { totalTokens: 120 }, modelContextWindow: null },
    });
  }

  /** Drops every open connection, like a daemon that died. */
  disconnect(reason = 'EOF'): void {
    for (const c of this.open()) c.close(reason);
  }

  /**
   * Forgets which connection subscribed to which thread: the daemon's own memory, which a bench of
   * the engine's heap leaves out (a real daemon keeps it in its own process). Turn events stop.
   */
  forgetSubscriptions(): void {
    for (const c of this.connections) c.subscribed.clear();
  }

  /** What the seed's `human(g)` does: a user marker in the rollout, then the goal notification. */
  human(id: string, status: GoalStatus): void {
    const t = this.thread(id);
    fs.appendFileSync(t.path, intentLine(status));
    t.goal = testGoal(id, status);
    fs.appendFileSync(t.path, goalEventLine(t.goal)); // §g: Codex writes a goal event for every set
    this.notify('thread/goal/updated', { threadId: id, turnId: null, goal: t.goal });
  }

  private open(): FakeConnection[] {
    return this.connections.filter((c) => c.closedReason === null);
  }

  private receive(connection: FakeConnection, line: string): void {
    // A connection that is gone (its client crashed, or closed it) says nothing more: what it
    // wrote and the daemon had not read yet is lost with it.
    if (connection.closedReason !== null) return;
    const m = JSON.parse(line) as WireMessage;
    if (m.method === undefined) {
      // An answer: the daemon asked the client something (an approval) and someone answered.
      if (m.id !== undefined) {
        const what = this.serverRequestIds.has(m.id)
          ? `server request ${String(m.id)}`
          : `${String(m.id)}, which the daemon never asked`;
        this.broke('answered-server-request', m, `the engine answered ${what}: ${line}`);
      }
      return;
    }
    if (m.id === undefined) return; // `initialized`
    this.requests.push(m);
    const reply = (result: unknown) => connection.send({ id: m.id, result });
    const fail = (code: number, message: string) => connection.send({ id: m.id, error: { code, message } });
    const p = m.params ?? {};
    const t = typeof p.threadId === 'string' ? this.threads.get(p.threadId) : undefined;
    // Judged on the state the daemon holds when the request arrives, before any hook changes it.
    if (m.method === 'thread/goal/set' && this.refusesSet(m, t))
      return fail(-32600, 'strict fake daemon: this set breaks a rule (see the failing test)');
    if (!SERVED.has(m.method) && this.broke('unexpected-rpc', m, `unexpected RPC: ${line}`))
      return fail(-32601, `unknown method ${m.method}`);
    if (this.before?.(m) === false) return;
    switch (m.method) {
      case 'initialize':
        return reply({
          userAgent: 'codex_fake/0.171.0 (fake daemon)',
          codexHome: this.dir,
          platformFamily: 'unix',
          platformOs: 'linux',
        });
      case 'thread/loaded/list':
        return reply({ data: [...this.threads.values()].filter((x) => x.loaded).map((x) => x.id), nextCursor: null });
      case 'thread/list': {
        // Newest update first (the order the engine asks for), `limit` a page, the cursor an offset.
        let all = [...this.threads.values()];
        const included: unknown = p.includedThreadIds;
        if (Array.isArray(included) && !this.listIgnoresIncludedIds) {
          // As 0.171.0: up to 100 ids (a larger list is refused), the same filter on every page.
          if (included.length > 100) return fail(-32600, 'includedThreadIds: at most 100 thread ids');
          // Filtered before it is sorted (the bench pages through 10,000 threads: the fake's own
          // cost is not the client's).
          const asked = new Set(included);
          all = all.filter((x) => asked.has(x.id));
        }
        all.sort((a, b) => this.updatedAtOf(b) - this.updatedAtOf(a));
        const from = typeof p.cursor === 'string' ? Number(p.cursor) : 0;
        const limit = typeof p.limit === 'number' ? p.limit : 50;
        const page = all.slice(from, from + limit);
        const next = from + limit < all.length ? String(from + limit) : null;
        return reply({ data: page.map((x) => this.threadJson(x)), nextCursor: next, backwardsCursor: null });
      }
      case 'thread/goal/get':
        return t ? reply({ goal: t.goal }) : fail(-32600, 'thread not found');
      case 'thread/read':
        return t ? reply({ thread: this.threadJson(t) }) : fail(-32600, 'thread not found');
      case 'thread/turns/list':
        return t
          ? reply({ data: [this.listedTurn(t)], nextCursor: null, backwardsCursor: null })
          : fail(-32600, 'thread not found');
      case 'thread/resume':
        if (!t) return fail(-32600, 'thread not found');
        if (this.resumeError) return fail(-32600, this.resumeError);
        if (t.elsewhere) return fail(-32600, `thread ${t.id} already has an active writer`);
        if (!t.loaded) {
          // A thread not loaded (e.g. after a daemon restart) is loaded by the resume, idle.
          t.loaded = true;
          if (t.status.type !== 'active') t.status = { type: 'idle' };
        }
        connection.subscribed.add(t.id);
        // As measured (0.169.0, 0.171.0): a `thread/turns/list` page when asked, newest first; else null.
        reply({
          thread: this.threadJson(t),
          initialTurnsPage: p.initialTurnsPage ? { data: [t.turn], nextCursor: null, backwardsCursor: null } : null,
        });
        if (t.goal) this.notify('thread/goal/updated', { threadId: t.id, turnId: null, goal: t.goal });
        // §j case 6: a pending approval is sent again to the connection that resumed the thread.
        for (const r of this.pendingServerRequests.values())
          if (r.threadId === t.id) connection.send({ id: r.id, method: r.method, params: r.params });
        return;
      case 'account/rateLimits/read':
        return reply({
          rateLimits: {
            primary:
              this.rateLimitResetSeconds === null ? null : { usedPercent: 100, resetsAt: this.rateLimitResetSeconds },
            secondary: null,
          },
          rateLimitsByLimitId: null,
        });
      case 'thread/goal/set':
        return this.set(connection, m, t);
      default:
        return fail(-32601, `unknown method ${m.method}`); // allowed by the judge: the daemon still does not serve it
    }
  }

  private set(connection: FakeConnection, m: WireMessage, t: FakeThread | undefined): void {
    const p = m.params ?? {};
    if (this.setError) return connection.send({ id: m.id, error: this.setError });
    if (!t || !t.goal) return connection.send({ id: m.id, error: { code: -32600, message: 'synthetic missing goal' } });
    // It takes effect: the daemon counts it, whether or not its reply then reaches the client.
    if (p.origin === 'automatic') {
      const key = `${t.id}/${t.turn.id}`;
      this.automaticSets.set(key, (this.automaticSets.get(key) ?? 0) + 1);
    }
    t.goal = { ...t.goal, status: p.status as GoalStatus, updatedAt: t.goal.updatedAt + 1 };
    // §g (measured: none on a thread not loaded): a person's set (origin "user") writes the marker
    // that says so, then the goal event; an automatic one, the goal event only.
    if (t.loaded && fs.existsSync(t.path))
      fs.appendFileSync(t.path, (p.origin === 'user' ? intentLine(t.goal.status) : '') + goalEventLine(t.goal));
    // Measured (0.169.0): on a thread the daemon has not loaded, the set answers `active` but
    // starts no turn.
    if (t.goal.status === 'active' && t.loaded) {
      const n = Number(t.turn.id.split('-')[1] ?? '1') + 1;
      t.turn = testTurn(`turn-${Number.isFinite(n) ? n : 2}`, 'inProgress');
      t.status = { type: 'active', activeFlags: [] };
    }
    if (this.lostReply) return connection.close('EOF');
    connection.send({ id: m.id, result: { goal: t.goal } });
    this.notify('thread/goal/updated', { threadId: t.id, turnId: null, goal: t.goal });
    if (t.goal.status === 'active' && t.loaded) {
      this.notify('thread/status/changed', { threadId: t.id, status: t.status });
      this.notifySubscribed(t.id, 'turn/started', { threadId: t.id, turn: t.turn }); // §e: turn events only where resumed
    }
  }

  /**
   * The newest turn as `thread/turns/list` shows it. Measured (0.169.0, 0.171.0, daemon-behaviour
   * (q)): between a failure's goal update and its `turn/completed`, the turn lists `interrupted`,
   * with no error and no end time, while the thread is `systemError` already.
   */
  private listedTurn(t: FakeThread): FakeTurn & { completedAt?: number | null } {
    const stopped = t.goal?.status === 'blocked' || t.goal?.status === 'usageLimited';
    if (stopped && t.status.type === 'systemError' && t.turn.status === 'inProgress')
      return { id: t.turn.id, status: 'interrupted', error: null, completedAt: null };
    return t.turn;
  }

  private threadJson(t: FakeThread) {
    return {
      id: t.id,
      status: t.loaded ? t.status : { type: 'notLoaded' },
      path: t.path,
      preview: 'fake thread',
      name: t.name,
      modelProvider: t.modelProvider ?? 'mock',
      model: t.model ?? 'mock-model',
      cwd: this.dir,
      updatedAt: this.updatedAtOf(t),
      turns: [],
    };
  }

  private updatedAtOf(t: FakeThread): number {
    return t.updatedAt ?? t.goal?.updatedAt ?? 0;
  }
}

/** The methods the fake daemon serves (the engine's every request): anything else is an unexpected RPC. */
export const SERVED_METHODS = [
  'initialize',
  'thread/loaded/list',
  'thread/list',
  'thread/goal/get',
  'thread/read',
  'thread/turns/list',
  'thread/resume',
  'thread/goal/set',
  'account/rateLimits/read',
] as const;
const SERVED: ReadonlySet<string> = new Set(SERVED_METHODS);
