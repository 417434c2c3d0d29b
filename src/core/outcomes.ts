// What the engine records when a failure is counted, when it gives up, and when a recovery took
// effect: the one place each is written (the history line, the count, the state, the decision).
import { addHistory, markRecovered, type WatchedThread } from '../model/watch';
import { scheduledOf } from '../model/queries';
import { armFromActivation } from './arming';
import { jitteredDelay } from './backoff';
import type { EngineCore } from './core';
import { followProbe, halfStepDue, outageGroup, outageKind } from './outage';
import { type BudgetSpentState, budgetWhy, overBudget } from './policy';

/**
 * One more consecutive failure of `failedTurnId` (a failed turn, or a rejected set): a backoff of
 * min(cap, base·2^(n−1)) with equal jitter from `now`, or the end past `maxAttempts`.
 * `error`: what failed, for the decision line.
 */
export function backOff(core: EngineCore, w: WatchedThread, failedTurnId: string, error: string, now: number): void {
  w.failures += 1;
  core.mark(w.threadId);
  // The provider failed the probe's turn again (not the daemon refusing its set): those that
  // waited for it follow, first (once the probe's state moves, no one waits for it).
  const provider = outageKind(error) !== null;
  if (w.failures > core.options.maxAttempts) {
    if (provider) followTheProbe(core, w, now);
    return giveUp(core, w, failedTurnId);
  }
  const spent = overBudget(w, core.options, now);
  if (spent) {
    // Counted (due now, were it not for the budget): the table keeps it here until a person acts.
    if (w.lastFailure?.turnId === failedTurnId) w.lastFailure.dueAt = now;
    else w.lastFailure = { turnId: failedTurnId, message: error, code: error, httpStatus: null, at: now, dueAt: now };
    return holdForBudget(core, w, spent);
  }
  const delayMs = jitteredDelay(
    { baseMs: core.options.baseDelayMs, capMs: core.options.maxDelayMs },
    w.failures,
    core.deps.random,
  );
  let due = now + delayMs;
  // The one place the due time lives: the failure's record.
  if (w.lastFailure?.turnId === failedTurnId) w.lastFailure.dueAt = due;
  else w.lastFailure = { turnId: failedTurnId, message: error, code: error, httpStatus: null, at: now, dueAt: due };
  if (provider && followTheProbe(core, w, now) > 0) {
    // Its group takes this step; the probe tries again half-way there, alone (outage.ts).
    const half = halfStepDue(now, due, core.options.baseDelayMs);
    if (half !== null) {
      w.lastFailure.stepDueAt = due;
      w.lastFailure.dueAt = due = half;
    }
  }
  backingOff(core, w, failedTurnId, due, now, error);
}

/** The watch backs off, due at `due` (its failure's record holds it): in the state, and said. */
function backingOff(core: EngineCore, w: WatchedThread, failedTurnId: string, due: number, now: number, why: string) {
  core.setState(w, { kind: 'backoff', attempt: w.failures, failedTurnId });
  core.emit({
    type: 'backoff',
    threadId: w.threadId,
    attempt: w.failures,
    failedTurnId,
    dueAt: due,
    delayMs: due - now,
    error: why,
  });
}

/**
 * An outage's half-step try failed again (policy.ts `count` with `halfStep`): not a step, so not
 * counted; the goal waits for its group's step (`stepDueAt`) with them, and takes it with them.
 * Its set was counted against the recovery budget when it went out.
 */
export function waitForStep(core: EngineCore, w: WatchedThread, failedTurnId: string, stepDueAt: number): void {
  const now = core.now();
  core.mark(w.threadId);
  const f = w.lastFailure;
  if (f?.turnId !== failedTurnId) return;
  f.dueAt = stepDueAt;
  const spent = overBudget(w, core.options, now);
  if (spent) return holdForBudget(core, w, spent);
  backingOff(
    core,
    w,
    failedTurnId,
    stepDueAt,
    now,
    `${f.code}: its half-step try failed; due with its group's next step`,
  );
}

/**
 * `probe` failed again (counted: backed off, or given up): the goals of its group take its step
 * (outage.ts `followProbe`), those that waited for it and those not due yet, so the group is tried
 * again together, one probe first, and gives up together (one burst of notifications). Their own
 * recoveries never went out, so nothing of theirs is counted against the recovery budget.
 * Returns how many follow it (given up: not counted).
 */
function followTheProbe(core: EngineCore, probe: WatchedThread, now: number): number {
  const probeDue = probe.lastFailure?.dueAt ?? now;
  const sentAt = probe.recoveries.at(-1);
  const group = outageGroup(probe);
  if (sentAt === undefined || group === null || !core.options.groupOutages) return 0;
  // Its group: every goal whose recovery is scheduled for a failure of that kind on that provider
  // older than the probe's set, waiting for it or not due yet (the outage failed them together),
  // found before any state moves (a move looks again at who still waits).
  const waiting: [WatchedThread, string][] = [];
  for (const w of core.scheduledWatches()) {
    const held = scheduledOf(w.state);
    if (w === probe || held?.kind !== 'backoff' || w.lastFailure === null || w.lastFailure.at > sentAt) continue;
    if (outageGroup(w) === group) waiting.push([w, held.failedTurnId]);
  }
  let following = 0;
  for (const [w, failedTurnId] of waiting) {
    const step = followProbe(w, probeDue);
    w.failures = step.failures;
    core.mark(w.threadId);
    if (w.failures > core.options.maxAttempts) {
      giveUp(core, w, failedTurnId);
      continue;
    }
    if (w.lastFailure) w.lastFailure.dueAt = step.dueAt;
    backingOff(core, w, failedTurnId, step.dueAt, now, `its outage's probe (${probe.threadId}) failed again`);
    following += 1;
  }
  return following;
}

/**
 * A goal from another Codex app, loaded in the daemon by the person's Retry now: armed from its
 * last activation in the rollout (the next look reads back to it, so a person's marker or the
 * model's own block since then still speaks), with its failure counted once and due now.
 */
export function takeOver(core: EngineCore, w: WatchedThread, goal: 'blocked' | 'usageLimited'): void {
  const failure = w.lastFailure;
  if (!failure) return;
  armFromActivation(w, core.now());
  w.failures = 1;
  failure.dueAt = core.now();
  core.setState(
    w,
    goal === 'blocked'
      ? { kind: 'backoff', attempt: 1, failedTurnId: failure.turnId }
      : { kind: 'usageLimited', resetsAt: null },
  );
  core.emit({ type: 'armed', threadId: w.threadId, title: w.title });
}

/**
 * The recovery budget is spent (the table's `overBudget`): no set until a person's Retry now or
 * re-arm; said once (the state is saved before the decision is delivered, and the table keeps it).
 */
export function holdForBudget(core: EngineCore, w: WatchedThread, spent: BudgetSpentState): void {
  core.setState(w, spent);
  core.emit({ type: 'attention', threadId: w.threadId, reason: budgetWhy(spent) });
}

/** `maxAttempts` recoveries in a row failed again: a person must look (once). */
export function giveUp(core: EngineCore, w: WatchedThread, failedTurnId: string): void {
  const attempts = core.options.maxAttempts;
  if (w.state.kind === 'gaveUp') return;
  addHistory(w, {
    at: core.now(),
    failedTurnId,
    attempt: w.failures,
    error: w.lastFailure?.code ?? '',
    outcome: 'gave-up',
  });
  core.setState(w, { kind: 'gaveUp', attempts });
  core.emit({ type: 'gave-up', threadId: w.threadId, attempts, failedTurnId });
}

/** The set took effect (its reply, or the daemon's state after the fact): never again for this turn. */
export function confirmRecovered(
  core: EngineCore,
  w: WatchedThread,
  failedTurnId: string,
  attempt: number,
  how: string,
): void {
  w.pending = null;
  core.mark(w.threadId);
  if (w.recovered.includes(failedTurnId)) return;
  markRecovered(w, failedTurnId);
  addHistory(w, {
    at: core.now(),
    failedTurnId,
    attempt,
    error: w.lastFailure?.code ?? '',
    outcome: 'recovered',
    detail: how,
  });
  core.emit({ type: 'recovered', threadId: w.threadId, attempt, failedTurnId, how });
  core.changed();
}
