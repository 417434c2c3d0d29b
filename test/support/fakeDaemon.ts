// A fake Codex app-server for unit tests of the core, speaking the real wire format:
// newline-delimited JSON-RPC (no "jsonrpc" field, notifications with emittedAtMs) to the
// product's real client over in-memory streams. Modelled on the seed's fakeDaemon: hooks
// run before a reply (`before`), replies can be lost (`lostReply`) or errors (`setError`).
//
// Strict, like the seed's fake (whose t.Fatalf stopped the test): it judges every request as it
// arrives, on the state the daemon holds then, and fails the test at once on what the real
// daemon would reject or the product's rules forbid (`ViolationRule`):
//  - an automatic `thread/goal/set` that is not on a goal `blocked` or `usageLimited` whose
//    newest turn failed, on a loaded thread;
//  - a second automatic set that takes effect for the same failed turn (counted by the daemon
//    when it applies a set: one whose reply is then lost still counts);
//  - a set with keys other than {threadId, status, origin}, an automatic one with a status other
//    than "active", or an origin other than "automatic" / "user";
//  - an RPC method the daemon does not serve here;
//  - any answer to a server request (an approval is the user's to answer, never the engine's).
// A broken rule is a `Violation`. Unless `judge` says 'allow', the request is answered with a
// JSON-RPC error (the engine cannot carry on as if it had succeeded; an answer to a server
// request has nothing to answer), the violation is kept (`violations`, `check()`), and it is
// thrown: by `check()` (the harness calls it in settle/advance/reconcile/cleanup) and, if no one
// has reported it by the next turn of the event loop, as an uncaught exception, which node:test
// reports as a failure of the test that is running (so a test that never calls the harness again
// fails as well). A test that breaks a rule on purpose takes it with `takeViolations()` at once.
import { PassThrough } from 'node:stream';
import * as readline from 'node:readline';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startSession } from '../../src/protocol/client';
import type { Connector, DaemonSession } from '../../src/protocol/daemon';
import type { GoalStatus } from '../../src/model/watch';
import { LineMessageReader, LineMessageWriter } from '../../src/protocol/lineFraming';
import type { Transport } from '../../src/protocol/transport';

export interface FakeGoal {
  threadId: string;
  objective: string;
  status: GoalStatus;
  tokenBudget: number | null;
  tokensUsed: number;
  timeUsedSeconds: number;
  createdAt: number;
  updatedAt: number;
}
export interface FakeTurn {
  id: string;
  status: string;
  error: { message: string; codexErrorInfo: unknown; additionalDetails: null } | null;
}
export interface FakeThread {
  id: string;
  goal: FakeGoal | null;
  turn: FakeTurn;
  status: { type: string; activeFlags?: string[] };
  path: string;
  loaded: boolean;
  name: string | null;
  /**
   * Held by another Codex app (its own app-server): listed `notLoaded`, and a resume is refused
   * with "already has an active writer" (measured on 0.169.0 and 0.171.0).
   */
  elsewhere?: boolean;
  /** `thread/list`'s updatedAt (unix seconds); default the goal's updatedAt. */
  updatedAt?: number;
  /** What the thread runs on (`thread/read`'s modelProvider and model); default the mock's. */
  modelProvider?: string;
  model?: string;
}
export interface WireMessage {
  id?: string | number;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: unknown;
}

/** The rules the strict daemon judges by (see the file's header). */
export type ViolationRule =
  /** An automatic set on a goal that is not blocked/usage-limited with its newest turn failed. */
  | 'set-not-recoverable'
  /** An automatic set on a thread the daemon has not loaded (measured: the goal goes active, no turn starts). */
  | 'set-not-loaded'
  /** A second effective automatic set for the same failed turn. */
  | 'set-duplicate'
  /** A set that changes more than the status, or an automatic one to a status other than active. */
  | 'set-beyond-status'
  | 'unexpected-rpc'
  | 'answered-server-request';

/** A broken rule, with the daemon's state when the request arrived. */
export interface Violation {
  rule: ViolationRule;
  /** One line: what broke which rule. */
  message: string;
  /** The request (or answer) as it arrived. */
  request: WireMessage;
  threadId: string | null;
  /** The thread as the daemon held it when the request arrived (null: no such thread). */
  thread: { goal: GoalStatus | null; turnId: string; turnStatus: string; loaded: boolean } | null;
}

/** A judge's verdict: 'fail' (the default) fails the test; 'allow' lets the daemon serve it as usual. */
export type Verdict = 'fail' | 'allow';

let goalClock = 1_000;

export function testGoal(threadId: string, status: GoalStatus): FakeGoal {
  goalClock += 1;
  return {
    threadId,
    objective: 'ship the feature',
    status,
    tokenBudget: null,
    tokensUsed: 100,
    timeUsedSeconds: 5,
    createdAt: 1,
    updatedAt: goalClock,
  };
}

/** `account/rateLimits/updated`'s snapshot as the real daemon sends it for a 429 without rate-limit headers. */
export const NULL_SNAPSHOT = {
  limitId: 'codex',
  limitName: null,
  normalModelSlug: null,
  primary: null,
  secondary: null,
  credits: null,
  individualLimit: null,
  spendControlReached: null,
  planType: null,
  rateLimitReachedType: null,
};

export function testTurn(id: string, status: string, codexErrorInfo: unknown = 'internalServerError'): FakeTurn {
  return {
    id,
    status,
    error: status === 'failed' ? { message: 'synthetic failure', codexErrorInfo, additionalDetails: null } : null,
  };
}

/** One connection to the fake daemon: it writes lines to `toClient` and reads lines from `fromClient`. */
export class FakeConnection {
  readonly toClient = new PassThrough();
  readonly fromClient = new PassThrough();
  private closeCallbacks: ((reason: string) => void)[] = [];
  closedReason: string | null = null;
  subscribed = new Set<string>();

  /** Called once when the connection closes (at once if it already has). */
  onClose(cb: (reason: string) => void): void {
    if (this.closedReason !== null) cb(this.closedReason);
    else this.closeCallbacks.push(cb);
  }

  transport(): Transport {
    return {
      reader: new LineMessageReader(this.toClient),
      writer: new LineMessageWriter(this.fromClient),
      describe: 'fake daemon',
      onClose: (cb) => this.onClose(cb),
      close: () => {
        this.close('closed by client');
        return Promise.resolve();
      },
    };
  }

  send(message: WireMessage & { emittedAtMs?: number }): void {
    if (this.closedReason === null) this.toClient.write(`${JSON.stringify(message)}\n`);
  }

  /** A raw line, JSON or not, as a misbehaving daemon would write it. */
  sendRaw(line: string): void {
    if (this.closedReason === null) this.toClient.write(`${line}\n`);
  }

  close(reason: string): void {
    if (this.closedReason !== null) return;
    this.closedReason = reason;
    this.toClient.end();
    for (const cb of this.closeCallbacks) cb(reason);
    this.closeCallbacks = [];
  }
}

export class FakeDaemon {
  readonly threads = new Map<string, FakeThread>();
  readonly requests: WireMessage[] = [];
  /** The message of every violation judged 'fail', in order (what `check()` throws the first of). */
  readonly violations: string[] = [];
  /**
   * Decides about each violation (see the file's header). Default (null): every one fails the
   * test. A test that forgives one case by design (the transport property: a person's pause
   * already on the wire when the set left, so the set arrives on a `paused` goal) returns
   * 'allow' for exactly that case and 'fail' for the rest; an allowed request is served as
   * usual (and an allowed set counts as an effective one).
   */
  judge: ((violation: Violation) => Verdict) | null = null;
  /** Effective automatic sets per failed turn (`threadId/turnId`): the daemon's own count. */
  readonly automaticSets = new Map<string, number>();
  /** Runs before each request is handled; `false` drops it unanswered (a test's judge refused it). */
  before: ((m: WireMessage) => void | boolean) | null = null;
  lostReply = false;
  setError: { code: number; message: string } | null = null;
  /** When set, `thread/resume` fails with this message. */
  resumeError: string | null = null;
  /** `thread/list` ignores `includedThreadIds` and lists everything, as 0.169.0 does (0.171.0 filters). */
  listIgnoresIncludedIds = false;
  rateLimitResetSeconds: number | null = null;
  /** Refuse new connections (a daemon that is down). */
  down = false;
  private readonly connections: FakeConnection[] = [];
  private readonly serverRequestIds = new Set<string | number>();
  /** Server requests not yet resolved: the real daemon sends them again to a connection that resumes the thread. */
  private readonly pendingServerRequests = new Map<string | number, WireMessage & { threadId: string | null }>();
  /** Violations judged 'fail' and not yet reported (thrown by `check()` or taken). */
  private unreported: Violation[] = [];
  private backstop: NodeJS.Immediate | null = null;
  /** Harness calls under way that will `check()` when they end: the backstop waits for them. */
  private checks = 0;

  constructor(readonly dir: string) {}

  /** Throws the first violation judged 'fail' (it stays: every later check throws it too). */
  check(): void {
    const first = this.failedViolations[0];
    this.unreported = [];
    if (first) throw violationError(first);
  }

  /**
   * Runs `work` (a harness's settle) and then `check()`s; meanwhile the backstop holds back, so a
   * violation made during it is thrown by this call, in the test's own stack, not as an
   * uncaught exception. A violation already made is thrown at once (unless `checkFirst` is
   * false: a cleanup does its work first).
   */
  async checking<T>(work: () => Promise<T>, checkFirst = true): Promise<T> {
    if (checkFirst) this.check();
    this.checks += 1;
    try {
      return await work();
    } finally {
      this.checks -= 1;
      this.check();
    }
  }

  /** True when a violation judged 'fail' has not been reported yet (thrown by `check()` or taken). */
  hasUnreported(): boolean {
    return this.unreported.length > 0;
  }

  /**
   * For a test that breaks a rule on purpose: the violations judged 'fail' so far, which are
   * then forgotten (nothing is thrown for them, and `check()` passes).
   */
  takeViolations(): Violation[] {
    const taken = this.failedViolations.splice(0);
    this.violations.length = 0;
    this.unreported = [];
    return taken;
  }

  private readonly failedViolations: Violation[] = [];

  /** Judges a broken rule: true when it fails (the caller then refuses the request). */
  private broke(rule: ViolationRule, request: WireMessage, message: string): boolean {
    const threadId = typeof request.params?.threadId === 'string' ? request.params.threadId : null;
    const t = threadId === null ? undefined : this.threads.get(threadId);
    const v: Violation = {
      rule,
      message,
      request,
      threadId,
      thread: t
        ? { goal: t.goal?.status ?? null, turnId: t.turn.id, turnStatus: t.turn.status, loaded: t.loaded }
        : null,
    };
    if ((this.judge?.(v) ?? 'fail') === 'allow') return false;
    this.failedViolations.push(v);
    this.violations.push(`${rule}: ${message}`);
    this.unreported.push(v);
    // The backstop: unless the test reports it by the next turn of the event loop, it is thrown
    // where node:test sees it (an uncaught exception, a failure of the running test).
    this.armBackstop();
    return true;
  }

  private armBackstop(): void {
    this.backstop ??= setImmediate(() => {
      this.backstop = null;
      if (this.unreported.length === 0) return;
      if (this.checks > 0) return this.armBackstop(); // a harness call will throw it when it ends
      const first = this.unreported[0];
      this.unreported = [];
      throw violationError(first);
    });
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
    const lines = readline.createInterface({ input: connection.fromClient });
    lines.on('line', (line) => this.receive(connection, line));
    return connection;
  }

  count(method: string): number {
    return this.requests.filter((m) => m.method === method).length;
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
      if (usage)
        this.notifySubscribed(id, 'account/rateLimits/updated', {
          rateLimits: { ...NULL_SNAPSHOT, ...opts.rateLimits },
        });
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
          ? reply({ data: [t.turn], nextCursor: null, backwardsCursor: null })
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

  /** The rules for a `thread/goal/set`, on the state as it arrives: true refuses it (a violation that fails). */
  private refusesSet(m: WireMessage, t: FakeThread | undefined): boolean {
    const p = m.params ?? {};
    const shown = JSON.stringify(p);
    if (Object.keys(p).sort().join(',') !== 'origin,status,threadId')
      return this.broke('set-beyond-status', m, `a set that changes more than the goal's status: ${shown}`);
    if (p.origin === 'user') return false; // a person's own command (Pause goal), sent for them
    if (p.origin !== 'automatic')
      return this.broke('set-beyond-status', m, `a set with origin ${JSON.stringify(p.origin)}: ${shown}`);
    if (p.status !== 'active')
      return this.broke(
        'set-beyond-status',
        m,
        `an automatic set to ${JSON.stringify(p.status)}, not "active": ${shown}`,
      );
    if (!t)
      return this.broke('set-not-recoverable', m, `an automatic set on a thread the daemon does not have: ${shown}`);
    const where = `on ${t.id} (goal ${t.goal?.status ?? 'cleared'}, newest turn ${t.turn.id} ${t.turn.status}${t.loaded ? '' : ', not loaded'})`;
    if (t.goal?.status !== 'blocked' && t.goal?.status !== 'usageLimited')
      return this.broke(
        'set-not-recoverable',
        m,
        `an automatic set on a goal that is not blocked or usage-limited ${where}`,
      );
    if (t.turn.status !== 'failed')
      return this.broke('set-not-recoverable', m, `an automatic set while the newest turn has not failed ${where}`);
    if (!t.loaded)
      return this.broke('set-not-loaded', m, `an automatic set on a thread the daemon has not loaded ${where}`);
    const n = this.automaticSets.get(`${t.id}/${t.turn.id}`) ?? 0;
    if (n > 0)
      return this.broke(
        'set-duplicate',
        m,
        `a second automatic set for the failed turn ${t.turn.id} ${where} (${n} took effect before)`,
      );
    return false;
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
    // §g (measured: none on a thread not loaded)
    if (t.loaded && fs.existsSync(t.path)) fs.appendFileSync(t.path, goalEventLine(t.goal));
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

/** What the strict fake daemon throws for a broken rule. */
export class StrictDaemonError extends Error {
  constructor(readonly violation: Violation) {
    super(`the strict fake daemon saw a broken rule (${violation.rule}): ${violation.message}`);
  }
}

function violationError(v: Violation): Error {
  return new StrictDaemonError(v);
}

/** A user goal-status marker line, as the seed's intentLine writes it. */
export function intentLine(status: GoalStatus): string {
  const body = `\nUser set goal status: ${JSON.stringify(status)}.\n`;
  return `${JSON.stringify({
    type: 'response_item',
    payload: {
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: body }],
      internal_chat_message_metadata_passthrough: { content_item_kinds: ['user.goal'] },
    },
  })}\n`;
}

/** The `event_msg/thread_goal_updated` line Codex writes into the rollout for every `thread/goal/set` (§g). */
export function goalEventLine(goal: FakeGoal): string {
  return `${JSON.stringify({ type: 'event_msg', payload: { type: 'thread_goal_updated', threadId: goal.threadId, goal } })}\n`;
}

/** The line Codex writes when the model itself calls `update_goal` (a model block: not a failure). */
export function modelGoalCallLine(status: GoalStatus, callId = 'call-1'): string {
  return `${JSON.stringify({ type: 'response_item', payload: { type: 'function_call', name: 'update_goal', arguments: JSON.stringify({ status }), call_id: callId } })}\n`;
}
