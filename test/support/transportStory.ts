// The scripted events of one transport-fault run (test/support/transportScenario.ts), played by
// the daemon on the fake clock: a turn's failure (at once, or the goal first and the turn's end
// later), Codex's own retry, a turn's end with the model's block or a terminal status, and a
// person's pause. The approvals are transportApprovals.ts's.
import { testGoal, testTurn } from './fakeDaemon';
import { HOLD_MIN_MS, type Plan, TRANSIENT_INFOS } from './transportPlan';
import type { TransportRun } from './transportRun';

/** Records the thread's current turn as failed, now. */
export function noteFailed(run: TransportRun, p: Plan, usage = false): void {
  const turnId = run.daemon.thread(p.id).turn.id;
  run.failedTurns.set(p.id, [...(run.failedTurns.get(p.id) ?? []), turnId]);
  run.failures.push({ threadId: p.id, turnId, at: run.clock.elapsed(), usage });
}

/** The running turn fails with `info`: all at once, or the goal first and the turn's end `splitMs` later. */
export function fail(run: TransportRun, p: Plan, info: unknown): void {
  const { daemon } = run;
  noteFailed(run, p, info === 'usageLimitExceeded');
  if (p.splitMs === 0) {
    daemon.failWithEvents(p.id, { codexErrorInfo: info, retryFirst: p.retryFirst });
    run.noteTurn(p.id);
    return;
  }
  daemon.failWithEvents(p.id, { codexErrorInfo: info, retryFirst: p.retryFirst, phase: 'goal' });
  run.splitting.add(p.id);
  run.later(() => {
    run.splitting.delete(p.id);
    daemon.failWithEvents(p.id, { codexErrorInfo: info, phase: 'turn' });
    run.noteTurn(p.id);
  }, p.splitMs);
}

/**
 * Codex retries the turn itself: `error {willRetry:true}`, the goal blocked while the turn runs for `holdMs`, then
 * the end.
 */
export function retryThenFail(run: TransportRun, p: Plan, info: unknown): void {
  const { daemon, clock } = run;
  const t = daemon.thread(p.id);
  const key = `${p.id}/${t.turn.id}`;
  noteFailed(run, p);
  daemon.failWithEvents(p.id, { codexErrorInfo: info, retryFirst: true, phase: 'goal' });
  run.splitting.add(p.id);
  const since = clock.elapsed();
  run.later(() => {
    // Reached: the retry was told to the engine and held the blocked goal past a due time.
    if (
      run.retryTold.has(key) &&
      clock.elapsed() - since >= HOLD_MIN_MS &&
      daemon.thread(p.id).goal?.status === 'blocked'
    )
      run.retryHeld.add(key);
    // Invariant: the engine shows Codex's own retry for what it is ("Codex is retrying": never
    // competed with), when it was told on the connection it still has and no fault came since.
    if (run.retryToldAt.get(key) === run.wireMark()) {
      const kind = run.engine.watch(p.id)?.state.kind;
      if (kind !== 'codexRetrying')
        run.broken.push(
          `${key}: Codex retries the turn (told on this connection, the goal blocked), but the engine's state is ${kind}`,
        );
      else run.retryShown += 1;
    }
    run.splitting.delete(p.id);
    daemon.failWithEvents(p.id, { codexErrorInfo: info, phase: 'turn' });
    run.noteTurn(p.id);
  }, p.holdMs);
}

/** The turn ends without a failure, with the goal `status` (the model's own block, complete, budget). */
export function endWith(run: TransportRun, p: Plan, status: 'blocked' | 'complete' | 'budgetLimited'): void {
  const { daemon } = run;
  const t = daemon.thread(p.id);
  if (p.endTurn === 'failed') {
    daemon.failWithEvents(p.id, { codexErrorInfo: TRANSIENT_INFOS[p.errorInfo], goal: status });
    run.noteTurn(p.id);
    return;
  }
  t.goal = testGoal(p.id, status);
  t.status = { type: 'idle' };
  t.turn = testTurn(t.turn.id, 'completed');
  run.noteTurn(p.id);
  daemon.notify('thread/goal/updated', { threadId: p.id, turnId: t.turn.id, goal: t.goal });
  daemon.notify('thread/status/changed', { threadId: p.id, status: t.status });
  daemon.notifySubscribed(p.id, 'turn/completed', { threadId: p.id, turn: t.turn });
}

/** A person pauses the goal (a marker in the rollout, then the goal notification). */
export function humanPause(run: TransportRun, p: Plan, failedTurnId: string | null): void {
  if (run.pausedByHuman.has(p.id)) return;
  const t = run.daemon.thread(p.id);
  if (
    failedTurnId !== null &&
    t.goal?.status === 'blocked' &&
    t.turn.id === failedTurnId &&
    t.turn.status === 'failed' &&
    !run.arrivals.some((a) => a.threadId === p.id && a.turnId === failedTurnId)
  ) {
    // Where the pause landed, as it happened: the engine waiting out the backoff, or holding a set it prepared.
    const w = run.engine.watch(p.id);
    const sentForTurn = run.sent.some(
      (s) =>
        s.threadId === p.id &&
        s.at >= (run.failures.find((f) => f.threadId === p.id && f.turnId === failedTurnId)?.at ?? 0),
    );
    if (w?.state.kind === 'backoff' && w.state.failedTurnId === failedTurnId) run.reached.pauseInBackoff += 1;
    else if (w?.state.kind === 'recovering' && w.pending?.failedTurnId === failedTurnId && !sentForTurn)
      run.reached.pauseInPrepared += 1;
  }
  run.pausedByHuman.set(p.id, run.clock.elapsed());
  run.daemon.human(p.id, 'paused');
}
