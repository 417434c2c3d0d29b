// One transport-fault schedule, run end to end: a FakeDaemon with a few scripted threads, the
// real engine (the shipped DEFAULT_OPTIONS: 30 s backoff base, 6 attempts, limiter burst 3 then
// one per 5 s, 200 ms prepare lead, 60 s resync) and JSON-RPC client, the fault proxy between
// them, and a FakeClock. The schedule's faults fire while its steps play; then the faults stop,
// time runs until everything has settled, and every invariant is checked. Returns what was
// broken (nothing, when the engine is right), what happened, and which of the cases the
// property names were reached — counted from what the daemon received and what reached the
// engine's socket, not from what the schedule asked for — for the property test in test/faults/.
//
// The oracle classifies every automatic set itself, from the daemon's side (`daemon.before`
// sees each one arrive with the daemon's state at that moment). It forgives exactly one case:
// a set that left the engine before the engine was told of a person's pause, and so arrived
// on a paused goal (the unavoidable race: `thread/goal/set` cannot be made conditional). The
// strict FakeDaemon refuses every other forbidden set at once; its `judge` lets this one case
// through, and the oracle counts it (`races`) and fails a set sent after the engine was told.
import * as fs from 'node:fs';
import { Engine } from '../../src/core/engine';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import type { Decision } from '../../src/model/decision';
import {
  assertNoAutomaticSet,
  assertNoDuplicateSet,
  assertOneRecoveryPerFailedTurn,
  daemonRecordFrom,
  type TurnRow,
} from './daemonJudge';
import { FakeClock } from './fakeClock';
import { FakeDaemon, modelGoalCallLine, testGoal, testTurn, type WireMessage } from './fakeDaemon';
import { describeFault, type Fault, FaultProxy } from './faultProxy';
import { MemoryStore } from './memoryStore';

/**
 * What a thread does during the schedule:
 * - transient:    active; its running turn fails with a transient error at each `failAt` step
 *                 (when a turn is running then). Must be recovered, once per failed turn, unless
 *                 the failures and rejected sets in a row exceed maxAttempts (then given up).
 * - usage:        like transient, but the failure is a usage limit (goal `usageLimited`).
 * - retrying:     like transient, but each failure is Codex retrying first: `error {willRetry:true}`,
 *                 the goal `blocked` while the turn still runs, for `holdMs` (past any due time),
 *                 then the turn's end. Never set before the end; recovered once after it.
 * - humanPause:   fails at `failAt[0]`; a person pauses the goal: at step `eventAt` (`pause:
 *                 'step'`), inside its backoff (`'backoff'`) or inside the prepared send, the
 *                 200 ms between the write-ahead and the due time (`'prepared'`). Never set after
 *                 the engine was told of the pause.
 * - approval:     an approval request on the goal (see `approval`); never answered, never a set
 *                 while it waits, recovered once when its turn failed and it was resolved.
 * - modelBlock:   the model calls `update_goal blocked` at `eventAt` (its turn then fails or
 *                 completes). Never set.
 * - terminal:     the goal becomes complete or budgetLimited at `eventAt` (its turn then fails or
 *                 completes). Never set.
 * - oldBlocked:   blocked by a failed turn before the engine started. Never adopted, never set.
 * - pausedBefore: paused by a person before the engine started. Never set.
 */
export const KINDS = [
  'transient',
  'usage',
  'retrying',
  'humanPause',
  'approval',
  'modelBlock',
  'terminal',
  'oldBlocked',
  'pausedBefore',
] as const;
export type Kind = (typeof KINDS)[number];

/**
 * The approval thread's story, from step `eventAt` on:
 * - stays:            requested while the turn runs, never resolved, the turn never ends.
 * - resolveThenFail:  requested; resolved by the person `holdMs` later; then the turn fails.
 * - failWhilePending: requested; the goal turns `blocked` (the turn still running) with the
 *                     approval pending for `holdMs`; then it is resolved and the turn ends failed.
 * - onBlocked:        the turn fails; within the backoff an approval request arrives on the blocked
 *                     goal (the seed's TestLiveActivity), pending for `holdMs`, then resolved.
 */
export const APPROVALS = ['stays', 'resolveThenFail', 'failWhilePending', 'onBlocked'] as const;
export type ApprovalStory = (typeof APPROVALS)[number];

/** codexErrorInfo values the engine must take as transient (docs/daemon-behaviour.md §a). */
export const TRANSIENT_INFOS: readonly unknown[] = [
  'internalServerError',
  'serverOverloaded',
  { responseTooManyFailedAttempts: { httpStatusCode: 429 } },
  { responseStreamDisconnected: { httpStatusCode: null } },
];

export interface ThreadPlan {
  kind: Kind;
  failAt: number[];
  eventAt: number;
  /** Codex's own retry (`error {willRetry:true}`) comes right before each failure. */
  retryFirst: boolean;
  /** Index into TRANSIENT_INFOS. */
  errorInfo: number;
  /** The goal is blocked this long (ms) before the turn's end is reported (0: all at once). */
  splitMs: number;
  endTurn: 'completed' | 'failed';
  terminal: 'complete' | 'budgetLimited';
  /** The daemon answers the first `rejects` automatic sets that reach it on this thread with an error. */
  rejects: number;
  /** retrying: how long Codex retries with the goal blocked; approval: how long the request waits. */
  holdMs: number;
  /** humanPause: where the pause lands. */
  pause: 'step' | 'backoff' | 'prepared';
  /** humanPause: where in the backoff (a fraction of it), or how far before the due time (of the 200 ms lead). */
  pauseFrac: number;
  approval: ApprovalStory;
  /** approval onBlocked: the thread shows `active:waitingOnApproval` (as in the seed) rather than `systemError`. */
  approvalActive: boolean;
}

export interface Schedule {
  threads: ThreadPlan[];
  /** Fake time (ms) that passes after each step's events. */
  steps: number[];
  /**
   * An outage: at step `at` every thread that can fail does, and `extra` more plain transient
   * threads with it (many recoveries due at once: the limiter's case); or null.
   */
  outage: { at: number; extra: number } | null;
  faults: Fault[];
  /** Seeds the engine's jitter. */
  seed: number;
}

/** The cases the property names, each counted when it actually happened (see `runSchedule`). */
export interface Reached {
  /**
   * An approval reached the engine and stayed pending ≥ HOLD_MIN_MS while the daemon's goal was blocked and its turn
   * failed.
   */
  approvalOnFailedTurn: number;
  /** Likewise, with the goal blocked and its turn still running (it then failed). */
  approvalWhileBlocking: number;
  /** A failed turn of an approval thread recovered by a set that arrived after its approval was resolved. */
  recoveredAfterApproval: number;
  /** `error {willRetry:true}` reached the engine, then the goal stayed blocked with its turn running ≥ HOLD_MIN_MS. */
  retryOnBlocked: number;
  /** …and that failed turn was then recovered (one set, after the turn's end). */
  recoveredAfterRetry: number;
  /** A retry on a blocked goal checked against the engine's state (told, on the same connection, no fault since). */
  retryShown: number;
  /** A person paused while the engine was in backoff for the failed turn (goal blocked, no set yet). */
  pauseInBackoff: number;
  /** A person paused after the write-ahead, before the set was sent (the prepared send). */
  pauseInPrepared: number;
  /** Error replies to a set that the daemon itself gave, delivered to the engine. */
  rejectedByDaemon: number;
  /** Threads whose failures and rejections in a row exceed maxAttempts: the engine must give up. */
  mustGiveUp: number;
  /** Sets whose time the limiter check can know exactly (no frame held back around it). */
  limiterChecked: number;
  /** Sets that left the limiter's bucket below half a token: the limiter was at its limit. */
  limiterAtLimit: number;
}

export interface Outcome {
  /** Broken invariants; empty when the engine behaved. */
  broken: string[];
  stats: {
    sets: number;
    recovered: number;
    fired: number;
    drops: number;
    delays: number;
    errors: number;
    timeouts: number;
    races: number;
    notSeen: number;
    decisions: number;
    fakeMinutes: number;
  };
  reached: Reached;
  log: string[];
}

/** The shipped defaults: the scenario tests the product as it ships. */
export const OPTIONS: EngineOptions = { ...DEFAULT_OPTIONS };

/** A hold (a retry, an approval) this long outlasts the first due time of any backoff (base 30 s). */
export const HOLD_MIN_MS = DEFAULT_OPTIONS.baseDelayMs + 1_000;

/** After the faults stop, time runs in steps of this until nothing is due and nothing moves. */
const SETTLE_STEP_MS = OPTIONS.resyncMs + 1_000;
/** …but never longer than this (six backoffs up to 16 min, a 30 min usage wait, the limiter). */
const SETTLE_MAX_MS = 6 * 60 * 60_000;
/** The requests every resync makes, whatever happened: not a sign that something is still moving. */
const RESYNC_READS = new Set(['thread/loaded/list', 'thread/goal/get', 'thread/list']);

const FORBIDDEN: ReadonlySet<Kind> = new Set(['modelBlock', 'terminal', 'oldBlocked', 'pausedBefore']);
const REJECTABLE: ReadonlySet<Kind> = new Set(['transient', 'retrying', 'humanPause', 'approval']);
const APPROVAL_METHOD = 'item/commandExecution/requestApproval';

interface SetArrival {
  threadId: string;
  status: string;
  turnId: string;
  turnStatus: string;
  origin: unknown;
  at: number;
  accepted: boolean;
  approvalTold: boolean;
}

function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1_664_525) + 1_013_904_223) >>> 0;
    return x / 2 ** 32;
  };
}

const immediate = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function taskStartedLine(turnId: string): string {
  return `${JSON.stringify({ type: 'event_msg', payload: { type: 'task_started', turn_id: turnId } })}\n`;
}

export async function runSchedule(schedule: Schedule, dir: string, crashes: () => number): Promise<Outcome> {
  fs.mkdirSync(dir, { recursive: true });
  const crashesBefore = crashes();
  const broken: string[] = [];
  const log: string[] = [];
  const daemon = new FakeDaemon(dir);
  const clock = new FakeClock();
  const decisions: Decision[] = [];
  let changes = 0;
  const reached: Reached = {
    approvalOnFailedTurn: 0,
    approvalWhileBlocking: 0,
    recoveredAfterApproval: 0,
    retryOnBlocked: 0,
    recoveredAfterRetry: 0,
    retryShown: 0,
    pauseInBackoff: 0,
    pauseInPrepared: 0,
    rejectedByDaemon: 0,
    mustGiveUp: 0,
    limiterChecked: 0,
    limiterAtLimit: 0,
  };

  // ---- the threads ------------------------------------------------------------
  const outage = schedule.outage;
  const crowd: ThreadPlan[] = Array.from({ length: outage?.extra ?? 0 }, () => ({
    kind: 'transient',
    failAt: [outage!.at],
    eventAt: 0,
    retryFirst: false,
    errorInfo: 0,
    splitMs: 0,
    endTurn: 'failed',
    terminal: 'complete',
    rejects: 0,
    holdMs: HOLD_MIN_MS,
    pause: 'step',
    pauseFrac: 0,
    approval: 'stays',
    approvalActive: false,
  }));
  const plans = [...schedule.threads, ...crowd].map((p, i) => {
    const failAt =
      outage !== null && p.kind !== 'humanPause'
        ? [...new Set([...p.failAt, outage.at])].sort((a, b) => a - b)
        : p.failAt;
    return { ...p, failAt, id: `t${i + 1}-${p.kind}` };
  });
  type Plan = (typeof plans)[number];
  /** Every turn of each thread, as the daemon had them (the fake keeps only the newest). */
  const turns = new Map<string, TurnRow[]>();
  const noteTurn = (id: string) => {
    const t = daemon.thread(id);
    const list = turns.get(id) ?? [];
    const row = list.find((r) => r.id === t.turn.id);
    if (row) row.status = t.turn.status;
    else {
      list.push({ id: t.turn.id, status: t.turn.status });
      fs.appendFileSync(t.path, taskStartedLine(t.turn.id));
    }
    turns.set(id, list);
  };
  const failedTurns = new Map<string, string[]>(); // thread -> turns that failed, in order
  /** When each failed turn failed (monotonic ms) and whether by a usage limit. */
  const failures: { threadId: string; turnId: string; at: number; usage: boolean }[] = [];
  const splitting = new Set<string>();
  const pausedByHuman = new Map<string, number>(); // thread -> when (monotonic ms)
  /** Threads whose model block, terminal status or approval took place. */
  const applied = new Set<string>();
  /** Scenario timers not fired yet: time must run until they have. */
  let ownTimers = 0;
  const later = (fn: () => void, ms: number) => {
    ownTimers += 1;
    clock.setTimer(() => {
      ownTimers -= 1;
      fn();
    }, ms);
  };
  for (const p of plans) {
    const t = daemon.addThread(p.id);
    // Each goal on a provider of its own: the per-goal give-up model below holds (goals of one
    // outage that wait for one probe, and follow its steps, are test/unit/outageProbe.test.ts's
    // and the crash world's); this suite's subject is the wire.
    t.modelProvider = `provider-of-${p.id}`;
    t.status = { type: 'active', activeFlags: [] };
    noteTurn(p.id);
    if (p.kind === 'oldBlocked') {
      daemon.fail(p.id, undefined, TRANSIENT_INFOS[p.errorInfo]);
      noteTurn(p.id);
    }
    if (p.kind === 'pausedBefore') {
      daemon.human(p.id, 'paused');
      t.turn = testTurn('turn-1', 'completed');
      t.status = { type: 'idle' };
      noteTurn(p.id);
    }
  }
  const plan = (id: string) => plans.find((p) => p.id === id)!;
  // The one set the strict daemon lets through: on a goal a person paused, which the oracle
  // below judges by when the set left the engine (before it was told: the race; after: broken).
  daemon.judge = (v) =>
    v.rule === 'set-not-recoverable' &&
    v.thread?.goal === 'paused' &&
    v.threadId !== null &&
    plans.find((p) => p.id === v.threadId)?.kind === 'humanPause'
      ? 'allow'
      : 'fail';

  // ---- approvals -----------------------------------------------------------------
  interface Approval {
    threadId: string;
    id: string;
    story: ApprovalStory;
    since: number;
    resolvedAt: number | null;
    told: Set<number>;
  }
  const approvals: Approval[] = [];
  const pendingApproval = (threadId: string) => approvals.find((a) => a.threadId === threadId && a.resolvedAt === null);

  // ---- what the daemon receives, and what the engine was told ----------------------
  const arrivals: SetArrival[] = [];
  const rejectedSoFar = new Map<string, number>();
  /** The link each set was sent on, by thread, for the arrival that follows (sets of a thread are one at a time). */
  const sentOn = new Map<string, number>();
  daemon.before = (m: WireMessage) => {
    if (m.method !== 'thread/goal/set') return;
    const id = String(m.params?.threadId);
    const t = daemon.threads.get(id);
    const p = plans.find((x) => x.id === id);
    const n = rejectedSoFar.get(id) ?? 0;
    const reject = p !== undefined && REJECTABLE.has(p.kind) && n < p.rejects;
    daemon.setError = reject ? { code: -32600, message: 'synthetic rejection: the daemon refused the set' } : null;
    if (reject) rejectedSoFar.set(id, n + 1);
    const a = pendingApproval(id);
    const accepted = !reject && t?.goal !== null && t !== undefined;
    arrivals.push({
      threadId: id,
      status: t?.goal?.status ?? 'none',
      turnId: t?.turn.id ?? '',
      turnStatus: t?.turn.status ?? '',
      origin: m.params?.origin,
      at: clock.elapsed(),
      accepted,
      approvalTold: a !== undefined && a.told.has(sentOn.get(id) ?? -1),
    });
    // The set starts a new turn: its `task_started` line follows the set's goal event in the rollout.
    if (accepted)
      queueMicrotask(() => {
        if (daemon.thread(id).turn.status === 'inProgress') noteTurn(id);
      });
  };
  const toldPaused = new Set<string>();
  /** Threads the engine was told were active before any recovery of theirs: it saw them before they failed. */
  const sawActive = new Set<string>();
  /** Sets as they left the engine (monotonic ms), for the limiter. */
  const sent: { threadId: string; at: number }[] = [];
  /**
   * Delivered error replies to sets the daemon did not carry out; `readBack`: the engine's two reads after it came
   * back.
   */
  interface Rejection {
    threadId: string;
    link: number;
    at: number;
    byDaemon: boolean;
    reads: Map<string, number | null>;
    ok: Set<number>;
    closed: boolean;
  }
  const rejections: Rejection[] = [];
  /** Which failed turns' `error {willRetry:true}` reached the engine. */
  const retryTold = new Set<string>();
  /** Where the wire stood when each was told: the connection, faults fired, timeouts. */
  const retryToldAt = new Map<string, string>();
  const wireMark = () => `${proxy.linkCount}/${proxy.fired.length}/${proxy.timeouts}`;
  const proxy = new FaultProxy(daemon, clock, schedule.faults, {
    onFault: (fault, brokeIt) => {
      log.push(`${clock.now()}: fault ${describeFault(fault)}${brokeIt ? ' (connection broken)' : ''}`);
      return decisions.length;
    },
    onGoalTold: (threadId, status) => {
      if (status === 'paused' && pausedByHuman.has(threadId)) toldPaused.add(threadId);
      // Until a set reaches the daemon, only the goal's state before its first failure was active.
      if (status === 'active' && !arrivals.some((a) => a.threadId === threadId)) sawActive.add(threadId);
    },
    mark: () => decisions.length,
    onSetSent: (threadId, _params, link) => {
      sent.push({ threadId, at: clock.elapsed() });
      sentOn.set(threadId, link);
      for (const r of rejections) if (r.threadId === threadId) r.closed = true;
      // Invariant: never a set after the engine was told a person paused the goal.
      if (toldPaused.has(threadId)) broken.push(`set on ${threadId} after the engine was told the user paused it`);
    },
    onRequest: (link, n, method, params) => {
      // The first goal and turn reads of the thread after a rejection came back: the engine's look at what the set did.
      const threadId = String(params.threadId);
      for (const r of rejections) {
        if (r.threadId !== threadId || r.link !== link || r.closed) continue;
        if ((method === 'thread/goal/get' || method === 'thread/turns/list') && !r.reads.has(method))
          r.reads.set(method, n);
      }
    },
    onDelivered: (link, m, request, daemonError) => {
      if (request !== null) {
        const threadId = String(request.params.threadId);
        if (request.method === 'thread/goal/set' && m.error !== undefined && daemonError !== false) {
          rejections.push({
            threadId,
            link,
            at: clock.elapsed(),
            byDaemon: daemonError === true,
            reads: new Map(),
            ok: new Set(),
            closed: false,
          });
          if (daemonError === true) reached.rejectedByDaemon += 1;
        }
        if (m.error === undefined)
          for (const r of rejections)
            if (r.threadId === threadId && [...r.reads.values()].includes(request.n)) r.ok.add(request.n);
        return;
      }
      const params = m.params ?? {};
      if (m.method === 'error' && params.willRetry === true) {
        const key = `${String(params.threadId)}/${String(params.turnId)}`;
        retryTold.add(key);
        retryToldAt.set(key, `${link}/${proxy.fired.length}/${proxy.timeouts}`);
      }
      if (m.method === APPROVAL_METHOD)
        for (const a of approvals) if (a.id === m.id && a.resolvedAt === null) a.told.add(link);
    },
  });

  const pauseAt = new Map<string, 'backoff' | 'prepared'>();
  const engine = new Engine(OPTIONS, {
    connect: proxy.connector(),
    target: 'fault proxy',
    store: new MemoryStore(),
    clock,
    random: lcg(schedule.seed),
    onDecision: (d) => {
      decisions.push(d);
      log.push(`${clock.now()}: ${JSON.stringify(d)}`);
      // A pause placed inside the backoff, or inside the prepared send, of the thread's first failure.
      if (d.type === 'backoff') {
        const p = plans.find((x) => x.id === d.threadId);
        if (p?.kind === 'humanPause' && p.pause !== 'step' && !pauseAt.has(p.id) && !pausedByHuman.has(p.id)) {
          pauseAt.set(p.id, p.pause);
          const left = d.dueAt - clock.now();
          const ms =
            p.pause === 'backoff'
              ? Math.floor(left * (0.05 + 0.9 * p.pauseFrac))
              : left - 1 - Math.floor(p.pauseFrac * (OPTIONS.prepareMs - 20));
          later(() => humanPause(p, d.failedTurnId), Math.max(0, ms));
        }
      }
    },
    onChange: () => {
      changes += 1;
    },
  });

  // ---- running ----------------------------------------------------------------------
  /** Until the engine is idle, or waits only for frames the proxy holds back (which only fake time releases). */
  const flush = async (): Promise<void> => {
    let quiet = 0;
    for (let round = 0; round < 5_000; round++) {
      const before = proxy.moved + decisions.length + changes + daemon.requests.length;
      let idle = false;
      void engine.idle().then(() => {
        idle = true;
      });
      await immediate();
      await immediate();
      const moved = proxy.moved + decisions.length + changes + daemon.requests.length !== before;
      if (moved) {
        quiet = 0;
        continue;
      }
      if (idle) {
        if (++quiet >= 2) return;
        continue;
      }
      // Not idle and nothing moved: waiting for held frames, or for a file read to finish.
      await sleep(1);
      if (
        proxy.moved + decisions.length + changes + daemon.requests.length === before &&
        proxy.holding() &&
        ++quiet >= 3
      )
        return;
    }
    throw new Error('the engine never settled (busy for 5000 rounds)');
  };
  /** Fake time, timer by timer, letting the engine work after each one. */
  const advance = async (ms: number): Promise<void> => {
    let left = ms;
    for (let fired = 0; ; fired++) {
      if (fired > 20_000) throw new Error(`more than 20000 timers fired within ${ms} ms of fake time (a busy loop)`);
      const next = clock.nextIn();
      if (next === null || next > left) {
        await clock.advance(left);
        await flush();
        return;
      }
      await clock.advance(next);
      left -= next;
      await flush();
    }
  };

  const running = (id: string) => {
    const t = daemon.thread(id);
    return (
      t.goal?.status === 'active' &&
      t.turn.status === 'inProgress' &&
      !splitting.has(id) &&
      pendingApproval(id) === undefined
    );
  };
  const noteFailed = (p: Plan, usage = false) => {
    const turnId = daemon.thread(p.id).turn.id;
    failedTurns.set(p.id, [...(failedTurns.get(p.id) ?? []), turnId]);
    failures.push({ threadId: p.id, turnId, at: clock.elapsed(), usage });
  };
  const fail = (p: Plan, info: unknown) => {
    noteFailed(p, info === 'usageLimitExceeded');
    if (p.splitMs === 0) {
      daemon.failWithEvents(p.id, { codexErrorInfo: info, retryFirst: p.retryFirst });
      noteTurn(p.id);
      return;
    }
    daemon.failWithEvents(p.id, { codexErrorInfo: info, retryFirst: p.retryFirst, phase: 'goal' });
    splitting.add(p.id);
    later(() => {
      splitting.delete(p.id);
      daemon.failWithEvents(p.id, { codexErrorInfo: info, phase: 'turn' });
      noteTurn(p.id);
    }, p.splitMs);
  };
  /**
   * Codex retries the turn itself: `error {willRetry:true}`, the goal blocked while the turn runs for `holdMs`, then
   * the end.
   */
  const retryThenFail = (p: Plan, info: unknown) => {
    const t = daemon.thread(p.id);
    const key = `${p.id}/${t.turn.id}`;
    noteFailed(p);
    daemon.failWithEvents(p.id, { codexErrorInfo: info, retryFirst: true, phase: 'goal' });
    splitting.add(p.id);
    const since = clock.elapsed();
    later(() => {
      // Reached: the retry was told to the engine and held the blocked goal past a due time.
      if (
        retryTold.has(key) &&
        clock.elapsed() - since >= HOLD_MIN_MS &&
        daemon.thread(p.id).goal?.status === 'blocked'
      )
        retryHeld.add(key);
      // Invariant: the engine shows Codex's own retry for what it is ("Codex is retrying": never
      // competed with), when it was told on the connection it still has and no fault came since.
      if (retryToldAt.get(key) === wireMark()) {
        const kind = engine.watch(p.id)?.state.kind;
        if (kind !== 'codexRetrying')
          broken.push(
            `${key}: Codex retries the turn (told on this connection, the goal blocked), but the engine's state is ${kind}`,
          );
        else retryShown += 1;
      }
      splitting.delete(p.id);
      daemon.failWithEvents(p.id, { codexErrorInfo: info, phase: 'turn' });
      noteTurn(p.id);
    }, p.holdMs);
  };
  const retryHeld = new Set<string>();
  let retryShown = 0;
  /** The turn ends without a failure, with the goal `status` (the model's own block, complete, budget). */
  const endWith = (p: Plan, status: 'blocked' | 'complete' | 'budgetLimited') => {
    const t = daemon.thread(p.id);
    if (p.endTurn === 'failed') {
      daemon.failWithEvents(p.id, { codexErrorInfo: TRANSIENT_INFOS[p.errorInfo], goal: status });
      noteTurn(p.id);
      return;
    }
    t.goal = testGoal(p.id, status);
    t.status = { type: 'idle' };
    t.turn = testTurn(t.turn.id, 'completed');
    noteTurn(p.id);
    daemon.notify('thread/goal/updated', { threadId: p.id, turnId: t.turn.id, goal: t.goal });
    daemon.notify('thread/status/changed', { threadId: p.id, status: t.status });
    daemon.notifySubscribed(p.id, 'turn/completed', { threadId: p.id, turn: t.turn });
  };
  /** A person pauses the goal (a marker in the rollout, then the goal notification). */
  const humanPause = (p: Plan, failedTurnId: string | null) => {
    if (pausedByHuman.has(p.id)) return;
    const t = daemon.thread(p.id);
    if (
      failedTurnId !== null &&
      t.goal?.status === 'blocked' &&
      t.turn.id === failedTurnId &&
      t.turn.status === 'failed' &&
      !arrivals.some((a) => a.threadId === p.id && a.turnId === failedTurnId)
    ) {
      // Where the pause landed, as it happened: the engine waiting out the backoff, or holding a set it prepared.
      const w = engine.watch(p.id);
      const sentForTurn = sent.some(
        (s) =>
          s.threadId === p.id &&
          s.at >= (failures.find((f) => f.threadId === p.id && f.turnId === failedTurnId)?.at ?? 0),
      );
      if (w?.state.kind === 'backoff' && w.state.failedTurnId === failedTurnId) reached.pauseInBackoff += 1;
      else if (w?.state.kind === 'recovering' && w.pending?.failedTurnId === failedTurnId && !sentForTurn)
        reached.pauseInPrepared += 1;
    }
    pausedByHuman.set(p.id, clock.elapsed());
    daemon.human(p.id, 'paused');
  };
  /** A server request for a person's approval on the thread's current turn. */
  const requestApproval = (p: Plan, story: ApprovalStory, status: { type: string; activeFlags?: string[] }) => {
    const t = daemon.thread(p.id);
    const a: Approval = {
      threadId: p.id,
      id: `approval-${p.id}`,
      story,
      since: clock.elapsed(),
      resolvedAt: null,
      told: new Set(),
    };
    approvals.push(a);
    if (JSON.stringify(status) !== JSON.stringify(t.status)) {
      t.status = status;
      daemon.notify('thread/status/changed', { threadId: p.id, status: t.status });
    }
    daemon.serverRequest(a.id, APPROVAL_METHOD, { threadId: p.id, turnId: t.turn.id, itemId: 'item-1' });
    return a;
  };
  /** The person answers it in their own client: `serverRequest/resolved`, and the thread's status after. */
  const resolveApproval = (a: Approval, status: { type: string; activeFlags?: string[] }) => {
    const t = daemon.thread(a.threadId);
    // Reached: told to the engine, pending while the goal was blocked, for longer than a due time.
    const heldBlocked = clock.elapsed() - Math.max(a.since, blockedSince.get(a.threadId) ?? Infinity);
    if (a.told.size > 0 && t.goal?.status === 'blocked' && heldBlocked >= HOLD_MIN_MS) {
      if (t.turn.status === 'failed') reached.approvalOnFailedTurn += 1;
      else reached.approvalWhileBlocking += 1;
    }
    a.resolvedAt = clock.elapsed();
    daemon.resolveServerRequest(a.id);
    if (JSON.stringify(status) !== JSON.stringify(t.status)) {
      t.status = status;
      daemon.notify('thread/status/changed', { threadId: a.threadId, status: t.status });
    }
  };
  const blockedSince = new Map<string, number>();
  const approvalStory = (p: Plan) => {
    const info = TRANSIENT_INFOS[p.errorInfo];
    const t = daemon.thread(p.id);
    const waiting = { type: 'active', activeFlags: ['waitingOnApproval'] };
    applied.add(p.id);
    switch (p.approval) {
      case 'stays':
        requestApproval(p, 'stays', waiting);
        return;
      case 'resolveThenFail': {
        const a = requestApproval(p, 'resolveThenFail', waiting);
        later(() => {
          resolveApproval(a, { type: 'active', activeFlags: [] });
          later(() => {
            if (running(p.id)) fail(p, info);
          }, 1_000);
        }, p.holdMs);
        return;
      }
      case 'failWhilePending': {
        const a = requestApproval(p, 'failWhilePending', waiting);
        later(() => {
          // The goal blocked, the turn still running, the approval still waiting.
          noteFailed(p);
          blockedSince.set(p.id, clock.elapsed());
          daemon.failWithEvents(p.id, { codexErrorInfo: info, phase: 'goal' });
          splitting.add(p.id);
          later(() => {
            resolveApproval(a, daemon.thread(p.id).status);
            splitting.delete(p.id);
            daemon.failWithEvents(p.id, { codexErrorInfo: info, phase: 'turn' });
            noteTurn(p.id);
          }, p.holdMs);
        }, 2_000);
        return;
      }
      case 'onBlocked': {
        noteFailed(p);
        daemon.failWithEvents(p.id, { codexErrorInfo: info });
        noteTurn(p.id);
        const failedTurn = t.turn.id;
        later(
          () => {
            const now = daemon.thread(p.id);
            if (now.goal?.status !== 'blocked' || now.turn.id !== failedTurn) return; // recovered already (it cannot be: the backoff is ≥ 15 s)
            blockedSince.set(p.id, clock.elapsed());
            const a = requestApproval(p, 'onBlocked', p.approvalActive ? waiting : { type: 'systemError' });
            later(() => resolveApproval(a, { type: 'systemError' }), p.holdMs);
          },
          1_000 + Math.floor(p.pauseFrac * 10_000),
        );
        return;
      }
    }
  };
  const play = (step: number) => {
    for (const p of plans) {
      const info = TRANSIENT_INFOS[p.errorInfo];
      switch (p.kind) {
        case 'transient':
        case 'humanPause':
          if (p.failAt.includes(step) && running(p.id) && !pausedByHuman.has(p.id)) fail(p, info);
          if (p.kind === 'humanPause' && p.pause === 'step' && p.eventAt === step) humanPause(p, null);
          break;
        case 'retrying':
          if (p.failAt.includes(step) && running(p.id)) retryThenFail(p, info);
          break;
        case 'usage':
          if (p.failAt.includes(step) && running(p.id)) fail(p, 'usageLimitExceeded');
          break;
        case 'modelBlock':
          if (p.eventAt === step && running(p.id)) {
            fs.appendFileSync(daemon.thread(p.id).path, modelGoalCallLine('blocked'));
            endWith(p, 'blocked');
            applied.add(p.id);
          }
          break;
        case 'terminal':
          if (p.eventAt === step && running(p.id)) {
            endWith(p, p.terminal);
            applied.add(p.id);
          }
          break;
        case 'approval':
          // On a step the schedule has (each approval story is meant to play).
          if (p.eventAt % schedule.steps.length === step && running(p.id) && !applied.has(p.id)) approvalStory(p);
          break;
        default:
          break;
      }
    }
  };

  let settledAfter = 0;
  try {
    await engine.start();
    await flush();
    for (let step = 0; step < schedule.steps.length; step++) {
      play(step);
      await flush();
      await advance(schedule.steps[step]);
    }
    log.push(`${clock.now()}: faults stop`);
    proxy.calm();
    await flush();
    // Settle: until nothing is due, nothing of the scenario is still to come, and two resyncs passed with nothing new.
    let quiet = 0;
    // What moved, less the reads every resync makes (the loaded list, each goal, the home's list).
    const moved = () =>
      `${decisions.length}/${arrivals.length}/${daemon.requests.filter((r) => !RESYNC_READS.has(r.method ?? '')).length}`;
    for (let t = 0; t < SETTLE_MAX_MS && quiet < 2; t += SETTLE_STEP_MS) {
      const before = moved();
      await advance(SETTLE_STEP_MS);
      settledAfter = t + SETTLE_STEP_MS;
      const after = moved();
      const pending = engine.watches().some((w) => w.pending !== null);
      quiet = before === after && engine.nextDueAt() === null && ownTimers === 0 && !pending ? quiet + 1 : 0;
    }
    if (quiet < 2)
      broken.push(`nothing settled within ${SETTLE_MAX_MS / 60_000} min of fake time after the faults stopped`);
  } catch (error) {
    broken.push(`the run itself failed: ${error instanceof Error ? error.stack : String(error)}`);
  }

  // ---- the invariants -----------------------------------------------------------------
  // Invariant: never a reply to a server request; nothing on the wire beyond the allowed calls.
  for (const v of [...proxy.violations, ...daemon.violations]) broken.push(`wire: ${v}`);

  // Every set, classified at the daemon as it arrived.
  const perTurn = new Map<string, number>();
  let races = 0;
  for (const a of arrivals) {
    const p = plan(a.threadId);
    if (a.origin !== 'automatic') broken.push(`a set with origin ${String(a.origin)} on ${a.threadId}`);
    // Invariant: never a set on a goal that is complete, budget-limited, model-blocked, paused
    // before, or was blocked before the engine saw it; nor on an approval that never resolves.
    if (FORBIDDEN.has(p.kind) || (p.kind === 'approval' && p.approval === 'stays') || !sawActive.has(a.threadId)) {
      broken.push(`set on ${a.threadId} (${p.kind}: goal ${a.status}, turn ${a.turnId} ${a.turnStatus})`);
      continue;
    }
    // Invariant: never a set while an approval the engine was told of waits for the person.
    if (a.approvalTold)
      broken.push(
        `set on ${a.threadId} while the approval it was told of was pending (goal ${a.status}, turn ${a.turnId} ${a.turnStatus})`,
      );
    if (p.kind === 'humanPause' && a.status === 'paused') {
      races += 1; // sent before the engine could know (checked when it was sent): the unavoidable race
      continue;
    }
    // Invariant: never competes with a running turn or Codex's own retry: a set arrives only on a
    // goal blocked by a failed turn (a retrying turn is still in progress).
    const expected = p.kind === 'usage' ? 'usageLimited' : 'blocked';
    if (a.status !== expected || a.turnStatus !== 'failed')
      broken.push(`set on ${a.threadId} while its goal was ${a.status} and turn ${a.turnId} ${a.turnStatus}`);
    if (a.accepted) perTurn.set(`${a.threadId}/${a.turnId}`, (perTurn.get(`${a.threadId}/${a.turnId}`) ?? 0) + 1);
  }

  // Invariant: the global limiter (burst 3, then one per 5 s) holds for the sets as they left the
  // engine. A set is checked when its time is exact: the engine's attempts take no fake time unless
  // the proxy holds a frame back, so one with no hold around it left when its slot was taken. (A
  // subset of sets that keep the bucket keeps it too: leaving some out never hides an excess.)
  {
    const burst = OPTIONS.limiterBurst;
    const interval = OPTIONS.limiterIntervalMs;
    let tokens = burst;
    let at: number | null = null;
    for (const s of sent) {
      if (proxy.holds.some((h) => h.from <= s.at && h.to >= s.at - 1)) continue;
      if (at !== null) tokens = Math.min(burst, tokens + (s.at - at) / interval);
      at = s.at;
      reached.limiterChecked += 1;
      // 0.05 token (500 ms): a set due before another's slot can leave a little ahead of it.
      if (tokens < 1 - 0.05)
        broken.push(
          `limiter: the set on ${s.threadId} at ${s.at} ms left with ${tokens.toFixed(2)} tokens in the bucket (burst ${burst}, one per ${interval / 1000} s)`,
        );
      tokens -= 1;
      if (tokens < 0.5) reached.limiterAtLimit += 1;
    }
  }

  // Expected give-ups, from what happened: each failed turn (not a usage limit) and each rejected
  // set counts one, in order, and more than maxAttempts in a row is a give-up. A rejection counts
  // for the engine only once it read back what the set did (its two reads answered): counted as
  // certain then, as possible before (a lost read leaves the engine to try again, uncounted).
  let recovered = 0;
  let notSeen = 0;
  for (const p of plans) {
    const threadTurns = failedTurns.get(p.id) ?? [];
    const w = engine.watch(p.id);
    const paused = pausedByHuman.has(p.id);
    const events = [
      ...failures
        .filter((f) => f.threadId === p.id)
        .map((f) => ({
          at: f.at,
          turnId: f.turnId,
          certain: f.usage ? 0 : 1,
          possible: f.usage ? 0 : 1,
          rejection: false,
        })),
      ...rejections
        .filter((r) => r.threadId === p.id)
        .map((r) => ({
          at: r.at,
          turnId: '',
          certain: r.reads.size === 2 && r.ok.size === 2 ? 1 : 0,
          possible: 1,
          rejection: true,
        })),
    ].sort((a, b) => a.at - b.at);
    const recovers =
      sawActive.has(p.id) &&
      (p.kind === 'transient' ||
        p.kind === 'usage' ||
        p.kind === 'retrying' ||
        (p.kind === 'approval' && p.approval !== 'stays') ||
        p.kind === 'humanPause');
    // Each failed turn with the rejections of its sets that follow it: the engine gives up at the
    // failure or after a rejection once the count passes maxAttempts. `must`: recovered exactly
    // once; `may`: once or not at all (a give-up that hangs on a lost read, or a person's pause
    // and its race); neither: never (given up for certain).
    const must: string[] = [];
    const may: string[] = [];
    const fate = new Map<string, 'must' | 'may' | 'never'>();
    let certain = 0;
    let possible = 0;
    /** Sets (accepted or not) after the engine must have given up. */
    let afterGiveUp = 0;
    let givenUpAt: number | null = null;
    for (let i = 0; i < events.length; i++) {
      const e = events[i];
      if (e.rejection) continue;
      certain += e.certain;
      possible += e.possible;
      const atFailure = { certain, possible };
      let j = i + 1;
      for (; j < events.length && events[j].rejection; j++) {
        certain += events[j].certain;
        possible += events[j].possible;
        if (certain > OPTIONS.maxAttempts && givenUpAt === null) givenUpAt = events[j].at;
      }
      if (atFailure.certain > OPTIONS.maxAttempts && givenUpAt === null) givenUpAt = e.at;
      let f: 'must' | 'may' | 'never';
      if (atFailure.certain > OPTIONS.maxAttempts || certain > OPTIONS.maxAttempts) f = 'never';
      else if (possible > OPTIONS.maxAttempts) f = 'may';
      else f = 'must';
      if (paused && f !== 'never') f = 'may';
      fate.set(e.turnId, f);
      if (!recovers) continue;
      if (f === 'must') must.push(e.turnId);
      if (f === 'may') may.push(e.turnId);
    }
    if (givenUpAt !== null) afterGiveUp = arrivals.filter((a) => a.threadId === p.id && a.at > givenUpAt).length;
    // Invariant: nothing is sent once the failures in a row passed maxAttempts.
    if (afterGiveUp > 0)
      broken.push(
        `${p.id}: ${afterGiveUp} set(s) after more than ${OPTIONS.maxAttempts} failures and rejections in a row (the engine must give up)`,
      );
    if (givenUpAt !== null && sawActive.has(p.id) && recovers) reached.mustGiveUp += 1;
    for (const turnId of threadTurns) recovered += perTurn.get(`${p.id}/${turnId}`) ?? 0;

    // Reached: recoveries after an approval, after Codex's retry.
    for (const turnId of threadTurns) {
      const setAt = arrivals.find((a) => a.threadId === p.id && a.turnId === turnId && a.accepted)?.at;
      if (setAt === undefined) continue;
      const ap = approvals.find((a) => a.threadId === p.id && a.resolvedAt !== null && a.story !== 'stays');
      if (ap && ap.resolvedAt! <= setAt) reached.recoveredAfterApproval += 1;
      if (retryHeld.has(`${p.id}/${turnId}`)) reached.recoveredAfterRetry += 1;
    }

    // Invariant: at most one effective recovery per failed turn, none lost, none where none may
    // be: judged from the daemon's own record (its turns, its goal, the rollout's automatic
    // activations after each turn).
    const t = daemon.thread(p.id);
    const record = daemonRecordFrom(p.id, turns.get(p.id) ?? [], t.goal?.status ?? null, t.path);
    try {
      if (!recovers) {
        if (p.kind !== 'humanPause')
          assertNoAutomaticSet(record, `${p.id} (${p.kind}): an automatic set on a goal the engine must leave alone`);
      } else {
        assertNoDuplicateSet(record);
        assertOneRecoveryPerFailedTurn(record, must, may);
      }
    } catch (error) {
      broken.push(`${p.id} (${p.kind}): ${error instanceof Error ? error.message : String(error)}`);
    }
    if (w?.pending)
      broken.push(
        `${p.id}: a recovery intent is still pending after everything settled (${JSON.stringify(w.pending)})`,
      );

    // The engine's own view agrees with the daemon at the end.
    const lastTurn = threadTurns.at(-1);
    const lastFate = lastTurn === undefined ? 'none' : (fate.get(lastTurn) ?? 'none');
    const lastMust = recovers && lastFate === 'must';
    let expected: string[];
    if (!sawActive.has(p.id)) {
      // Never seen active (blocked or paused before the engine looked, e.g. the connection broke first): never adopted.
      if (threadTurns.length > 0) notSeen += 1;
      expected = ['notAdopted'];
    } else if (paused) expected = ['userIntent'];
    else if (recovers && lastFate === 'never') expected = ['gaveUp'];
    else if (recovers && lastFate === 'may') expected = ['gaveUp', 'running'];
    else if (p.kind === 'approval' && p.approval === 'stays' && applied.has(p.id)) expected = ['waitingApproval'];
    else if (applied.has(p.id) && p.kind !== 'approval')
      expected = [p.kind === 'modelBlock' ? 'modelBlocked' : p.kind === 'terminal' ? p.terminal : 'running'];
    else expected = ['running'];
    const kind = w?.state.kind ?? 'unwatched';
    if (!expected.includes(kind))
      broken.push(
        `${p.id} (${p.kind}): engine state ${kind} after everything settled, expected ${expected.join(' or ')}`,
      );
    if (lastMust && t.goal?.status !== 'active')
      broken.push(`${p.id}: goal still ${t.goal?.status} after the faults stopped`);
    if (recovers && lastFate === 'never' && t.goal?.status === 'active')
      broken.push(`${p.id}: goal active although the engine had to give up`);
  }
  reached.retryOnBlocked = retryHeld.size;
  reached.retryShown = retryShown;

  // Invariant: a clear log line for every fault that broke something: each broken connection is
  // followed by its own connection decision, and a lost set by a warning that names it.
  const connectionLines = decisions
    .map((d, i) => (d.type === 'connection' && (d.state === 'disconnected' || d.state === 'error') ? i : -1))
    .filter((i) => i >= 0);
  let next = 0;
  for (const f of proxy.fired.filter((x) => x.broke)) {
    while (next < connectionLines.length && connectionLines[next] < f.mark) next += 1;
    if (next >= connectionLines.length) broken.push(`no connection log line for the fault ${describeFault(f.fault)}`);
    next += 1;
    if (
      f.fault.on === 'request' &&
      f.fault.method === 'thread/goal/set' &&
      (f.fault.phase === 'dropBeforeRequest' || f.fault.phase === 'dropBeforeReply')
    ) {
      if (!decisions.slice(f.mark).some((d) => d.type === 'warning' && d.message.includes('thread/goal/set')))
        broken.push(`no warning for the set lost by ${describeFault(f.fault)}`);
    }
  }

  // Invariant: an error reply that reached the engine is logged, naming the call that failed. (One that
  // a broken connection overtook is covered by that connection's line.)
  for (const e of proxy.deliveredErrors) {
    if (
      !decisions
        .slice(e.mark)
        .some((d) => (d.type === 'warning' || d.type === 'connection') && JSON.stringify(d).includes(e.method))
    ) {
      broken.push(`no log line names ${e.method} after its error reply reached the engine`);
    }
  }

  // Invariant: a request that timed out (a delay past the client's 15 s timeout) ends its connection, and says so.
  const timeoutLines = decisions.filter(
    (d) =>
      d.type === 'connection' && (d.state === 'disconnected' || d.state === 'error') && d.detail.includes('timed out'),
  ).length;
  if (timeoutLines < proxy.timeouts)
    broken.push(
      `a request timed out on ${proxy.timeouts} connection(s), but only ${timeoutLines} connection log line(s) say so`,
    );

  try {
    await Promise.race([
      engine.stop(),
      sleep(5_000).then(() => {
        throw new Error('engine.stop() did not return');
      }),
    ]);
  } catch (error) {
    broken.push(String(error));
  }
  await immediate();
  // Invariant: no crash: no unhandled rejection, no uncaught exception.
  if (crashes() !== crashesBefore)
    broken.push(`${crashes() - crashesBefore} unhandled rejection(s) or uncaught exception(s)`);
  fs.rmSync(dir, { recursive: true, force: true });

  return {
    broken,
    stats: {
      sets: arrivals.length,
      recovered,
      fired: proxy.fired.length,
      drops: proxy.fired.filter((f) => f.broke).length,
      delays: proxy.fired.filter((f) => f.fault.on !== 'connect' && f.fault.phase.startsWith('delay')).length,
      errors: proxy.fired.filter(
        (f) => f.fault.on === 'request' && (f.fault.phase === 'errorReply' || f.fault.phase === 'rejectRequest'),
      ).length,
      timeouts: proxy.timeouts,
      races,
      notSeen,
      decisions: decisions.length,
      fakeMinutes: Math.round((schedule.steps.reduce((a, b) => a + b, 0) + settledAfter) / 60_000),
    },
    reached,
    log,
  };
}
