// One transport-fault schedule, run end to end: a FakeDaemon with a few scripted threads, the
// real engine and JSON-RPC client, the fault proxy between them, and a FakeClock. The
// schedule's faults fire while its steps play; then the faults stop, time runs until
// everything has settled, and every invariant is checked. Returns what was broken (nothing,
// when the engine is right) and what happened, for the property test in test/faults/.
import * as fs from 'node:fs';
import { Engine } from '../../src/core/engine';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import type { Decision } from '../../src/model/decision';
import { FakeClock } from './fakeClock';
import { FakeDaemon, modelGoalCallLine, testGoal, testTurn } from './fakeDaemon';
import { describeFault, type Fault, FaultProxy } from './faultProxy';
import { MemoryStore } from './memoryStore';

/**
 * What a thread does during the schedule:
 * - transient:    active; its running turn fails with a transient error at each `failAt` step
 *                 (when a turn is running then). Must be recovered, once per failed turn.
 * - usage:        like transient, but the failure is a usage limit (goal `usageLimited`).
 * - humanPause:   fails at `failAt[0]`; a person pauses the goal at `eventAt`. Never set after
 *                 the engine was told of the pause.
 * - modelBlock:   the model calls `update_goal blocked` at `eventAt` (its turn then fails or
 *                 completes). Never set.
 * - terminal:     the goal becomes complete or budgetLimited at `eventAt` (its turn then fails or
 *                 completes). Never set.
 * - approval:     an approval request is pending from `eventAt` on. Never set, never answered.
 * - oldBlocked:   blocked by a failed turn before the engine started. Never adopted, never set.
 * - pausedBefore: paused by a person before the engine started. Never set.
 */
export const KINDS = ['transient', 'usage', 'humanPause', 'modelBlock', 'terminal', 'approval', 'oldBlocked', 'pausedBefore'] as const;
export type Kind = (typeof KINDS)[number];

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
  /** Codex's own retry (`error {willRetry:true}`) comes before each failure. */
  retryFirst: boolean;
  /** Index into TRANSIENT_INFOS. */
  errorInfo: number;
  /** The goal is blocked this long (ms) before the turn's end is reported (0: all at once). */
  splitMs: number;
  endTurn: 'completed' | 'failed';
  terminal: 'complete' | 'budgetLimited';
}

export interface Schedule {
  threads: ThreadPlan[];
  /** Fake time (ms) that passes after each step's events. */
  steps: number[];
  faults: Fault[];
  /** Seeds the engine's jitter. */
  seed: number;
}

export interface Outcome {
  /** Broken invariants; empty when the engine behaved. */
  broken: string[];
  stats: { sets: number; recovered: number; fired: number; drops: number; delays: number; errors: number; timeouts: number; races: number; notSeen: number; decisions: number };
  log: string[];
}

export const OPTIONS: EngineOptions = {
  ...DEFAULT_OPTIONS,
  baseDelayMs: 1_000,
  maxDelayMs: 60_000,
  maxAttempts: 6,
  limiterBurst: 2,
  limiterIntervalMs: 5_000,
  resyncMs: 60_000,
  usageMarginMs: 60_000,
  reconnectBaseMs: 500,
  reconnectMaxMs: 30_000,
};

/** Time allowed, after the faults stop, for everything to settle (reconnect, resync, backoff, usage wait, limiter). */
export const SETTLE_MS = 12 * 60_000;

const FORBIDDEN: ReadonlySet<Kind> = new Set(['modelBlock', 'terminal', 'approval', 'oldBlocked', 'pausedBefore']);

interface SetArrival { threadId: string; status: string; turnId: string; turnStatus: string; origin: unknown; at: number }

function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1_664_525) + 1_013_904_223) >>> 0;
    return x / 2 ** 32;
  };
}

const immediate = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function runSchedule(schedule: Schedule, dir: string, crashes: () => number): Promise<Outcome> {
  fs.mkdirSync(dir, { recursive: true });
  const crashesBefore = crashes();
  const broken: string[] = [];
  const log: string[] = [];
  const daemon = new FakeDaemon(dir);
  const clock = new FakeClock();
  const decisions: Decision[] = [];
  let changes = 0;

  // ---- the threads ------------------------------------------------------------
  const plans = schedule.threads.map((p, i) => ({ ...p, id: `t${i + 1}-${p.kind}` }));
  const failedTurns = new Map<string, string[]>(); // thread -> transient turns that failed
  const splitting = new Set<string>();
  const pausedByHuman = new Set<string>();
  /** Threads whose model block, terminal status or approval took place. */
  const applied = new Set<string>();
  for (const p of plans) {
    const t = daemon.addThread(p.id);
    t.status = { type: 'active', activeFlags: [] };
    if (p.kind === 'oldBlocked') daemon.fail(p.id, undefined, TRANSIENT_INFOS[p.errorInfo]);
    if (p.kind === 'pausedBefore') {
      daemon.human(p.id, 'paused');
      t.turn = testTurn('turn-1', 'completed');
      t.status = { type: 'idle' };
    }
  }
  const plan = (id: string) => plans.find((p) => p.id === id)!;

  // ---- what the daemon receives, and what the engine was told ----------------------
  const arrivals: SetArrival[] = [];
  daemon.before = (m) => {
    if (m.method !== 'thread/goal/set') return;
    const id = String(m.params?.threadId);
    const t = daemon.threads.get(id);
    arrivals.push({ threadId: id, status: t?.goal?.status ?? 'none', turnId: t?.turn.id ?? '', turnStatus: t?.turn.status ?? '', origin: m.params?.origin, at: clock.now() });
  };
  const toldPaused = new Set<string>();
  /** Threads the engine was told were active before any recovery of theirs: it saw them before they failed. */
  const sawActive = new Set<string>();
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
    onSetSent: (threadId) => {
      // Invariant: never a set after the engine was told a person paused the goal.
      if (toldPaused.has(threadId)) broken.push(`set on ${threadId} after the engine was told the user paused it`);
    },
  });

  const engine = new Engine(OPTIONS, {
    connect: proxy.connector(),
    target: 'fault proxy',
    store: new MemoryStore(),
    clock,
    random: lcg(schedule.seed),
    onDecision: (d) => {
      decisions.push(d);
      log.push(`${clock.now()}: ${JSON.stringify(d)}`);
    },
    onChange: () => { changes += 1; },
  });

  // ---- running ----------------------------------------------------------------------
  /** Until the engine is idle, or waits only for frames the proxy holds back (which only fake time releases). */
  const flush = async (): Promise<void> => {
    let quiet = 0;
    for (let round = 0; round < 5_000; round++) {
      const before = proxy.moved + decisions.length + changes + daemon.requests.length;
      let idle = false;
      void engine.idle().then(() => { idle = true; });
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
      if (proxy.moved + decisions.length + changes + daemon.requests.length === before && proxy.holding() && ++quiet >= 3) return;
    }
    throw new Error('the engine never settled (busy for 5000 rounds)');
  };
  /** Fake time, timer by timer, letting the engine work after each one. */
  const advance = async (ms: number): Promise<void> => {
    let left = ms;
    for (;;) {
      const next = clock.nextIn();
      if (next === null || next > left) {
        clock.advance(left);
        await flush();
        return;
      }
      clock.advance(next);
      left -= next;
      await flush();
    }
  };

  const running = (id: string) => {
    const t = daemon.thread(id);
    return t.goal?.status === 'active' && t.turn.status === 'inProgress' && !splitting.has(id);
  };
  const fail = (p: (typeof plans)[number], info: unknown) => {
    const t = daemon.thread(p.id);
    const turnId = t.turn.id;
    failedTurns.set(p.id, [...(failedTurns.get(p.id) ?? []), turnId]);
    if (p.splitMs === 0) {
      daemon.failWithEvents(p.id, { codexErrorInfo: info, retryFirst: p.retryFirst });
      return;
    }
    daemon.failWithEvents(p.id, { codexErrorInfo: info, retryFirst: p.retryFirst, phase: 'goal' });
    splitting.add(p.id);
    clock.setTimer(() => {
      splitting.delete(p.id);
      daemon.failWithEvents(p.id, { codexErrorInfo: info, phase: 'turn' });
    }, p.splitMs);
  };
  /** The turn ends without a failure, with the goal `status` (the model's own block, complete, budget). */
  const endWith = (p: (typeof plans)[number], status: 'blocked' | 'complete' | 'budgetLimited') => {
    const t = daemon.thread(p.id);
    if (p.endTurn === 'failed') {
      daemon.failWithEvents(p.id, { codexErrorInfo: TRANSIENT_INFOS[p.errorInfo], goal: status });
      return;
    }
    t.goal = testGoal(p.id, status);
    t.status = { type: 'idle' };
    t.turn = testTurn(t.turn.id, 'completed');
    daemon.notify('thread/goal/updated', { threadId: p.id, turnId: t.turn.id, goal: t.goal });
    daemon.notify('thread/status/changed', { threadId: p.id, status: t.status });
    daemon.notifySubscribed(p.id, 'turn/completed', { threadId: p.id, turn: t.turn });
  };
  const play = (step: number) => {
    for (const p of plans) {
      const info = TRANSIENT_INFOS[p.errorInfo];
      switch (p.kind) {
        case 'transient':
        case 'humanPause':
          if (p.failAt.includes(step) && running(p.id) && !pausedByHuman.has(p.id)) fail(p, info);
          if (p.kind === 'humanPause' && p.eventAt === step && !pausedByHuman.has(p.id)) {
            pausedByHuman.add(p.id);
            daemon.human(p.id, 'paused');
          }
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
          if (p.eventAt === step && running(p.id)) {
            const t = daemon.thread(p.id);
            t.status = { type: 'active', activeFlags: ['waitingOnApproval'] };
            daemon.notify('thread/status/changed', { threadId: p.id, status: t.status });
            daemon.serverRequest(`approval-${p.id}`, 'item/commandExecution/requestApproval', { threadId: p.id, turnId: t.turn.id, itemId: 'item-1' });
            applied.add(p.id);
          }
          break;
        default:
          break;
      }
    }
  };

  try {
    await engine.start();
    await flush();
    for (let step = 0; step < schedule.steps.length; step++) {
      play(step);
      await flush();
      await advance(schedule.steps[step]!);
    }
    log.push(`${clock.now()}: faults stop`);
    proxy.calm();
    await flush();
    await advance(SETTLE_MS);
  } catch (error) {
    broken.push(`the run itself failed: ${error instanceof Error ? error.stack : String(error)}`);
  }

  // ---- the invariants -----------------------------------------------------------------
  // Invariant: never a reply to a server request; nothing on the wire beyond the allowed calls.
  for (const v of [...proxy.violations, ...daemon.violations]) broken.push(`wire: ${v}`);

  const perTurn = new Map<string, number>();
  let races = 0;
  for (const a of arrivals) {
    const p = plan(a.threadId);
    const key = `${a.threadId}/${a.turnId}`;
    if (a.origin !== 'automatic') broken.push(`a set with origin ${String(a.origin)} on ${a.threadId}`);
    // Invariant: never a set on a goal that is paused, complete, budget-limited, model-blocked,
    // waiting for an approval, or was blocked before the engine saw it.
    if (FORBIDDEN.has(p.kind) || !sawActive.has(a.threadId)) {
      broken.push(`set on ${a.threadId} (${p.kind}: goal ${a.status}, turn ${a.turnId} ${a.turnStatus})`);
      continue;
    }
    if (p.kind === 'humanPause' && a.status === 'paused') {
      races += 1; // sent before the engine could know (checked when it was sent): the unavoidable race
      continue;
    }
    // Invariant: never competes with a running turn: a set arrives only on a goal blocked by a failed turn.
    const expected = p.kind === 'usage' ? 'usageLimited' : 'blocked';
    if (a.status !== expected || a.turnStatus !== 'failed') broken.push(`set on ${a.threadId} while its goal was ${a.status} and turn ${a.turnId} ${a.turnStatus}`);
    perTurn.set(key, (perTurn.get(key) ?? 0) + 1);
  }
  // Invariant: at most one effective recovery per failed turn.
  for (const [key, n] of perTurn) if (n > 1) broken.push(`${n} sets for the failed turn ${key}`);

  // Invariant: no pending recovery lost: once the faults stop, every transient failure the engine
  // could see is recovered, exactly once, and the engine's view of every thread matches the daemon.
  let recovered = 0;
  let notSeen = 0;
  for (const p of plans) {
    const turns = failedTurns.get(p.id) ?? [];
    const human = pausedByHuman.has(p.id);
    const w = engine.watch(p.id);
    // Rejected sets count as failed attempts: past maxAttempts the engine gives up, as it should.
    const gaveUp = w?.state.kind === 'gaveUp' && w.failures > OPTIONS.maxAttempts;
    const mustRecover = sawActive.has(p.id) && !gaveUp && (p.kind === 'transient' || p.kind === 'usage' || (p.kind === 'humanPause' && !human));
    for (const turnId of turns) {
      const n = perTurn.get(`${p.id}/${turnId}`) ?? 0;
      recovered += n;
      if (mustRecover && n !== 1) broken.push(`failed turn ${p.id}/${turnId} recovered ${n} times, expected once`);
    }
    if (w?.pending) broken.push(`${p.id}: a recovery intent is still pending after everything settled (${JSON.stringify(w.pending)})`);
    let expected: string;
    if (!sawActive.has(p.id)) {
      // Never seen active (blocked or paused before the engine looked, e.g. the connection broke first): never adopted.
      if (turns.length > 0) notSeen += 1;
      expected = 'notAdopted';
    } else if (human) expected = 'userIntent';
    else if (gaveUp) expected = 'gaveUp';
    else if (applied.has(p.id)) expected = p.kind === 'modelBlock' ? 'modelBlocked' : p.kind === 'terminal' ? p.terminal : 'waitingApproval';
    else expected = 'running';
    if ((w?.state.kind ?? 'unwatched') !== expected) broken.push(`${p.id} (${p.kind}): engine state ${w?.state.kind ?? 'unwatched'} after everything settled, expected ${expected}`);
    if (mustRecover && daemon.thread(p.id).goal?.status !== 'active') broken.push(`${p.id}: goal still ${daemon.thread(p.id).goal?.status} after the faults stopped`);
  }

  // Invariant: a clear log line for every fault that broke something: each broken connection is
  // followed by its own connection decision, and a lost set by a warning that names it.
  const connectionLines = decisions.map((d, i) => (d.type === 'connection' && (d.state === 'disconnected' || d.state === 'error') ? i : -1)).filter((i) => i >= 0);
  let next = 0;
  for (const f of proxy.fired.filter((x) => x.broke)) {
    while (next < connectionLines.length && connectionLines[next]! < f.mark) next += 1;
    if (next >= connectionLines.length) broken.push(`no connection log line for the fault ${describeFault(f.fault)}`);
    next += 1;
    if (f.fault.on === 'request' && f.fault.method === 'thread/goal/set' && (f.fault.phase === 'dropBeforeRequest' || f.fault.phase === 'dropBeforeReply')) {
      if (!decisions.slice(f.mark).some((d) => d.type === 'warning' && d.message.includes('thread/goal/set'))) broken.push(`no warning for the set lost by ${describeFault(f.fault)}`);
    }
  }

  // Invariant: an error reply that reached the engine is logged, naming the call that failed. (One that
  // a broken connection overtook is covered by that connection's line.)
  for (const e of proxy.deliveredErrors) {
    if (!decisions.slice(e.mark).some((d) => (d.type === 'warning' || d.type === 'connection') && JSON.stringify(d).includes(e.method))) {
      broken.push(`no log line names ${e.method} after its error reply reached the engine`);
    }
  }

  // Invariant: a request that timed out (a delay past the client's 15 s timeout) ends its connection, and says so.
  const timeoutLines = decisions.filter((d) => d.type === 'connection' && (d.state === 'disconnected' || d.state === 'error') && d.detail.includes('timed out')).length;
  if (timeoutLines < proxy.timeouts) broken.push(`a request timed out on ${proxy.timeouts} connection(s), but only ${timeoutLines} connection log line(s) say so`);

  try {
    await Promise.race([engine.stop(), sleep(5_000).then(() => { throw new Error('engine.stop() did not return'); })]);
  } catch (error) {
    broken.push(String(error));
  }
  await immediate();
  // Invariant: no crash: no unhandled rejection, no uncaught exception.
  if (crashes() !== crashesBefore) broken.push(`${crashes() - crashesBefore} unhandled rejection(s) or uncaught exception(s)`);
  fs.rmSync(dir, { recursive: true, force: true });

  return {
    broken,
    stats: {
      sets: arrivals.length,
      recovered,
      fired: proxy.fired.length,
      drops: proxy.fired.filter((f) => f.broke).length,
      delays: proxy.fired.filter((f) => f.fault.on !== 'connect' && f.fault.phase.startsWith('delay')).length,
      errors: proxy.fired.filter((f) => f.fault.on === 'request' && (f.fault.phase === 'errorReply' || f.fault.phase === 'rejectRequest')).length,
      timeouts: proxy.timeouts,
      races,
      notSeen,
      decisions: decisions.length,
    },
    log,
  };
}
