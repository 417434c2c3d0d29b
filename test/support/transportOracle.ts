// The oracle of one transport-fault run (test/support/transportScenario.ts): once everything
// settled, every invariant is checked against the run's record (transportRun.ts), and each broken
// one is added to `run.broken`. It forgives exactly one case: a set that left the engine before
// the engine was told of a person's pause, and so arrived on a paused goal (`races`).
import {
  assertNoAutomaticSet,
  assertNoDuplicateSet,
  assertOneRecoveryPerFailedTurn,
  daemonRecordFrom,
} from './daemonJudge';
import { describeFault } from './faultProxy';
import { FORBIDDEN, OPTIONS, type Plan } from './transportPlan';
import type { TransportRun } from './transportRun';

type Fate = 'must' | 'may' | 'never';

/** Invariant: never a reply to a server request; nothing on the wire beyond the allowed calls. */
export function checkWire(run: TransportRun): void {
  for (const v of [...run.proxy.violations, ...run.daemon.violations]) run.broken.push(`wire: ${v}`);
}

/**
 * Every set, classified at the daemon as it arrived. Returns the accepted sets per failed turn (`thread/turn`) and
 * the races forgiven.
 */
export function checkArrivals(run: TransportRun): { perTurn: Map<string, number>; races: number } {
  const { broken } = run;
  const perTurn = new Map<string, number>();
  let races = 0;
  for (const a of run.arrivals) {
    const p = run.plan(a.threadId);
    if (a.origin !== 'automatic') broken.push(`a set with origin ${String(a.origin)} on ${a.threadId}`);
    // Invariant: never a set on a goal that is complete, budget-limited, model-blocked, paused
    // before, or was blocked before the engine saw it; nor on an approval that never resolves.
    if (FORBIDDEN.has(p.kind) || (p.kind === 'approval' && p.approval === 'stays') || !run.sawActive.has(a.threadId)) {
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
  return { perTurn, races };
}

/**
 * Invariant: the global limiter (burst 3, then one per 5 s) holds for the sets as they left the
 * engine. A set is checked when its time is exact: the engine's attempts take no fake time unless
 * the proxy holds a frame back, so one with no hold around it left when its slot was taken. (A
 * subset of sets that keep the bucket keeps it too: leaving some out never hides an excess.)
 */
export function checkLimiter(run: TransportRun): void {
  const burst = OPTIONS.limiterBurst;
  const interval = OPTIONS.limiterIntervalMs;
  let tokens = burst;
  let at: number | null = null;
  for (const s of run.sent) {
    if (run.proxy.holds.some((h) => h.from <= s.at && h.to >= s.at - 1)) continue;
    if (at !== null) tokens = Math.min(burst, tokens + (s.at - at) / interval);
    at = s.at;
    run.reached.limiterChecked += 1;
    // 0.05 token (500 ms): a set due before another's slot can leave a little ahead of it.
    if (tokens < 1 - 0.05)
      run.broken.push(
        `limiter: the set on ${s.threadId} at ${s.at} ms left with ${tokens.toFixed(2)} tokens in the bucket (burst ${burst}, one per ${interval / 1000} s)`,
      );
    tokens -= 1;
    if (tokens < 0.5) run.reached.limiterAtLimit += 1;
  }
}

/** The failures (not a usage limit) and rejected sets of a thread, in order, each counting toward a give-up. */
function countedEvents(run: TransportRun, p: Plan) {
  return [
    ...run.failures
      .filter((f) => f.threadId === p.id)
      .map((f) => ({ at: f.at, turnId: f.turnId, counts: f.usage ? 0 : 1, rejection: false })),
    ...run.rejections
      .filter((r) => r.threadId === p.id)
      .map((r) => ({ at: r.at, turnId: '', counts: 1, rejection: true })),
  ].sort((a, b) => a.at - b.at);
}

/**
 * Expected give-ups, from what happened: each failed turn (not a usage limit) and each rejected
 * set counts one, in order, and more than maxAttempts in a row is a give-up. A rejection counts
 * once its reply reached the engine, whether or not the engine's read of what the set did came
 * back before the connection dropped (the intent keeps the rejection for the next look).
 *
 * Each failed turn with the rejections of its sets that follow it: the engine gives up at the
 * failure or after a rejection once the count passes maxAttempts. `must`: recovered exactly
 * once; `may`: once or not at all (a person's pause and its race); neither: never (given up).
 */
function fates(run: TransportRun, p: Plan, recovers: boolean) {
  const events = countedEvents(run, p);
  const paused = run.pausedByHuman.has(p.id);
  const must: string[] = [];
  const may: string[] = [];
  const fate = new Map<string, Fate>();
  let inRow = 0;
  let givenUpAt: number | null = null;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (e.rejection) continue;
    inRow += e.counts;
    if (inRow > OPTIONS.maxAttempts && givenUpAt === null) givenUpAt = e.at;
    for (let j = i + 1; j < events.length && events[j].rejection; j++) {
      inRow += events[j].counts;
      if (inRow > OPTIONS.maxAttempts && givenUpAt === null) givenUpAt = events[j].at;
    }
    let f: Fate = inRow > OPTIONS.maxAttempts ? 'never' : 'must';
    if (paused && f !== 'never') f = 'may';
    fate.set(e.turnId, f);
    if (!recovers) continue;
    if (f === 'must') must.push(e.turnId);
    if (f === 'may') may.push(e.turnId);
  }
  return { must, may, fate, givenUpAt };
}

/** The engine's states a thread may end in, after everything settled. */
function expectedStates(run: TransportRun, p: Plan, recovers: boolean, lastFate: Fate | 'none'): string[] {
  if (!run.sawActive.has(p.id)) return ['notAdopted'];
  if (run.pausedByHuman.has(p.id)) return ['userIntent'];
  if (recovers && lastFate === 'never') return ['gaveUp'];
  if (recovers && lastFate === 'may') return ['gaveUp', 'running'];
  if (p.kind === 'approval' && p.approval === 'stays' && run.applied.has(p.id)) return ['waitingApproval'];
  if (run.applied.has(p.id) && p.kind !== 'approval')
    return [p.kind === 'modelBlock' ? 'modelBlocked' : p.kind === 'terminal' ? p.terminal : 'running'];
  return ['running'];
}

/**
 * Each thread: no set after a give-up, exactly the recoveries its failed turns call for (from the daemon's own
 * record), and the engine's view agreeing with the daemon at the end. Returns the recoveries counted and the threads
 * that failed but were never seen active.
 */
export function checkThreads(run: TransportRun, perTurn: Map<string, number>): { recovered: number; notSeen: number } {
  let recovered = 0;
  let notSeen = 0;
  for (const p of run.plans) {
    const r = checkThread(run, p, perTurn);
    recovered += r.recovered;
    notSeen += r.notSeen;
  }
  run.reached.retryOnBlocked = run.retryHeld.size;
  run.reached.retryShown = run.retryShown;
  return { recovered, notSeen };
}

function checkThread(run: TransportRun, p: Plan, perTurn: Map<string, number>): { recovered: number; notSeen: number } {
  const { broken, reached } = run;
  const threadTurns = run.failedTurns.get(p.id) ?? [];
  const w = run.engine.watch(p.id);
  const recovers =
    run.sawActive.has(p.id) &&
    (p.kind === 'transient' ||
      p.kind === 'usage' ||
      p.kind === 'retrying' ||
      (p.kind === 'approval' && p.approval !== 'stays') ||
      p.kind === 'humanPause');
  const { must, may, fate, givenUpAt } = fates(run, p, recovers);
  /** Sets (accepted or not) after the engine must have given up. */
  const afterGiveUp =
    givenUpAt === null ? 0 : run.arrivals.filter((a) => a.threadId === p.id && a.at > givenUpAt).length;
  // Invariant: nothing is sent once the failures in a row passed maxAttempts.
  if (afterGiveUp > 0)
    broken.push(
      `${p.id}: ${afterGiveUp} set(s) after more than ${OPTIONS.maxAttempts} failures and rejections in a row (the engine must give up)`,
    );
  if (givenUpAt !== null && run.sawActive.has(p.id) && recovers) reached.mustGiveUp += 1;
  let recovered = 0;
  for (const turnId of threadTurns) recovered += perTurn.get(`${p.id}/${turnId}`) ?? 0;

  // Reached: recoveries after an approval, after Codex's retry.
  for (const turnId of threadTurns) {
    const setAt = run.arrivals.find((a) => a.threadId === p.id && a.turnId === turnId && a.accepted)?.at;
    if (setAt === undefined) continue;
    const ap = run.approvals.find((a) => a.threadId === p.id && a.resolvedAt !== null && a.story !== 'stays');
    if (ap && ap.resolvedAt! <= setAt) reached.recoveredAfterApproval += 1;
    if (run.retryHeld.has(`${p.id}/${turnId}`)) reached.recoveredAfterRetry += 1;
  }

  // Invariant: at most one effective recovery per failed turn, none lost, none where none may
  // be: judged from the daemon's own record (its turns, its goal, the rollout's automatic
  // activations after each turn).
  const t = run.daemon.thread(p.id);
  const record = daemonRecordFrom(p.id, run.turns.get(p.id) ?? [], t.goal?.status ?? null, t.path);
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
    broken.push(`${p.id}: a recovery intent is still pending after everything settled (${JSON.stringify(w.pending)})`);

  // The engine's own view agrees with the daemon at the end.
  const lastTurn = threadTurns.at(-1);
  const lastFate = lastTurn === undefined ? 'none' : (fate.get(lastTurn) ?? 'none');
  const lastMust = recovers && lastFate === 'must';
  // Never seen active (blocked or paused before the engine looked, e.g. the connection broke first): never adopted.
  const notSeen = !run.sawActive.has(p.id) && threadTurns.length > 0 ? 1 : 0;
  const expected = expectedStates(run, p, recovers, lastFate);
  const kind = w?.state.kind ?? 'unwatched';
  if (!expected.includes(kind))
    broken.push(
      `${p.id} (${p.kind}): engine state ${kind} after everything settled, expected ${expected.join(' or ')}`,
    );
  if (lastMust && t.goal?.status !== 'active')
    broken.push(`${p.id}: goal still ${t.goal?.status} after the faults stopped`);
  if (recovers && lastFate === 'never' && t.goal?.status === 'active')
    broken.push(`${p.id}: goal active although the engine had to give up`);
  return { recovered, notSeen };
}

/**
 * Invariant: a clear log line for every fault that broke something: each broken connection is followed by its own
 * connection decision, and a lost set by a warning that names it; an error reply that reached the engine is logged,
 * naming the call that failed (one that a broken connection overtook is covered by that connection's line); a request
 * that timed out (a delay past the client's 15 s timeout) ends its connection, and says so.
 */
export function checkLogLines(run: TransportRun): void {
  const { broken, decisions, proxy } = run;
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

  for (const e of proxy.deliveredErrors) {
    if (
      !decisions
        .slice(e.mark)
        .some((d) => (d.type === 'warning' || d.type === 'connection') && JSON.stringify(d).includes(e.method))
    ) {
      broken.push(`no log line names ${e.method} after its error reply reached the engine`);
    }
  }

  const timeoutLines = decisions.filter(
    (d) =>
      d.type === 'connection' && (d.state === 'disconnected' || d.state === 'error') && d.detail.includes('timed out'),
  ).length;
  if (timeoutLines < proxy.timeouts)
    broken.push(
      `a request timed out on ${proxy.timeouts} connection(s), but only ${timeoutLines} connection log line(s) say so`,
    );
}
