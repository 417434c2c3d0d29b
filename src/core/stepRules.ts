// The rules of a recovery's next step, beside the decision table (policy.ts), which asks them too:
// the give-up threshold and the recovery budget; when a counted failure gives up, is held by the
// budget or backs off, and to which due time; when a usage limit is resumed; an
// outage's half-step try; the state a goal taken over from another app is armed in; the due
// times a lost intent, the provider's answer and a failed write-ahead leave. Pure, so the mutation
// gate reaches them (stryker.config.json): no I/O, no clock reads; transitions.ts carries out what
// they return (test/unit/stepRules.test.ts states them row by row).
import { budgetUse } from '../model/budget';
import { scheduledOf } from '../model/queries';
import type { ScheduledState, TurnFailure, Watch, WatchState } from '../model/watch';
import { jitteredDelay, type Random } from './backoff';
import type { EngineOptions } from './options';
import { followProbe, halfStepDue } from './outage';

type Options = Readonly<EngineOptions>;

/** The give-up threshold, its one place: `failures` in a row (the first failed turn counts) past `maxAttempts`. */
export function givesUp(failures: number, options: Options): boolean {
  return failures > options.maxAttempts;
}

export type BudgetSpentState = Extract<WatchState, { kind: 'budgetSpent' }>;

/**
 * The recovery budget: a recovery about to be scheduled (a failure counted, a usage limit's resume
 * planned, a failure due again after a restart) waits for a person once `recoveryBudget` automatic
 * sets of this goal went out in the rolling 24 h (each counted at its write-ahead: src/core/attempt.ts).
 * Null: within the budget. A recovery already scheduled goes ahead (the veto keeps it): it was
 * within the budget when scheduled, and the count grows only by this goal's own sets, each of
 * which is scheduled through here; a person's Retry now schedules one past the budget.
 */
export function overBudget(w: Watch, options: Options, now: number): BudgetSpentState | null {
  const { used, until } = budgetUse(w, now);
  if (used < options.recoveryBudget) return null;
  // The budget is at least 1 (settings, CLI): spent, a recovery is in the window, so `until` is known.
  return { kind: 'budgetSpent', used, limit: options.recoveryBudget, until: until! };
}

export function budgetWhy(s: BudgetSpentState): string {
  return `the recovery budget is spent: ${s.used} of ${s.limit} automatic recoveries in 24 h; Retry now or re-arm`;
}

/**
 * When a usage-limited goal is resumed: the reset time plus a margin, or, with no reset time
 * known, after the backoff cap.
 */
export function usageDue(now: number, resetsAt: number | null, options: Options): number {
  const reset = resetsAt ?? now; // none known: not in the future either
  return reset > now ? reset + options.usageMarginMs : now + options.maxDelayMs;
}

/** A step: the end (past `maxAttempts`), held by the spent budget, or a backoff; each due at `dueAt`. */
export type Step =
  { act: 'giveUp' } | { act: 'hold'; spent: BudgetSpentState; dueAt: number } | { act: 'backoff'; dueAt: number };

/**
 * One more consecutive failure, counted in `w.failures`: the end past `maxAttempts`; held when the
 * budget is spent (due now, were it not for the budget: the table keeps it there until a person
 * acts); else a backoff of min(cap, base·2^(n−1)) with equal jitter from `now` (`random` drawn only then).
 */
export function countedStep(w: Watch, options: Options, now: number, random: Random): Step {
  if (givesUp(w.failures, options)) return { act: 'giveUp' };
  const spent = overBudget(w, options, now);
  if (spent) return { act: 'hold', spent, dueAt: now };
  const backoff = { baseMs: options.baseDelayMs, capMs: options.maxDelayMs };
  return { act: 'backoff', dueAt: now + jitteredDelay(backoff, w.failures, random) };
}

/**
 * The probe's own try, its group following it to the step due at `stepDueAt` (outage.ts
 * `halfStepDue`): half-way there, alone. Null: the probe takes the step with them (none follow,
 * or the step is too near to halve).
 */
export function probeTryDue(now: number, stepDueAt: number, following: number, options: Options): number | null {
  return following > 0 ? halfStepDue(now, stepDueAt, options.baseDelayMs) : null;
}

/**
 * A half-step try of `failedTurnId` failed again: not counted, so never the end; due with its
 * group's step (`stepDueAt`), held there when the budget is spent (its set was counted when it
 * went out). Null: that failure is no longer the one recorded, nothing to do.
 */
export function halfStepWait(
  w: Watch,
  failedTurnId: string,
  stepDueAt: number,
  options: Options,
  now: number,
): Step | null {
  if (w.lastFailure?.turnId !== failedTurnId) return null;
  const spent = overBudget(w, options, now);
  return spent ? { act: 'hold', spent, dueAt: stepDueAt } : { act: 'backoff', dueAt: stepDueAt };
}

/**
 * A goal that follows its outage's probe, failed again: its count one step on (outage.ts
 * `followProbe`), tried with the probe, due when the probe is (or now, if the probe's due time is
 * gone), never before its own; the end past `maxAttempts`. Its budget is not asked: its own
 * recoveries never went out.
 */
export function followerStep(w: Watch, probe: Watch, options: Options, now: number): Step & { failures: number } {
  const step = followProbe(w, probe.lastFailure?.dueAt ?? now);
  if (givesUp(step.failures, options)) return { act: 'giveUp', failures: step.failures };
  return { act: 'backoff', dueAt: step.dueAt, failures: step.failures };
}

/** A goal of another app, taken over by a person's Retry now: its failure due again (attempt 1), or its usage limit. */
export function takenOverState(goal: 'blocked' | 'usageLimited', failedTurnId: string): ScheduledState {
  return goal === 'blocked' ? { kind: 'backoff', attempt: 1, failedTurnId } : { kind: 'usageLimited', resetsAt: null };
}

/** A usage limit's resume planned (`resetsAt`): held when the budget is spent at `now`, else scheduled. */
export function usageResumeState(
  w: Watch,
  resetsAt: number | null,
  options: Options,
  now: number,
): BudgetSpentState | Extract<ScheduledState, { kind: 'usageLimited' }> {
  return overBudget(w, options, now) ?? { kind: 'usageLimited', resetsAt };
}

/** A set confirmed for a turn recovered already (its reply and the daemon's state both tell): said once. */
export function alreadyRecovered(w: Watch, failedTurnId: string): boolean {
  return w.recovered.includes(failedTurnId);
}

/**
 * An intent for `failedTurnId` that had no effect: due again at once, never before its due time (one
 * prepared ahead, cut short by a crash, is not sent early). Null: its failure is no longer the one recorded.
 */
export function lostIntentDue(f: Readonly<TurnFailure> | null, failedTurnId: string, now: number): number | null {
  return f?.turnId === failedTurnId ? Math.max(now, f.dueAt ?? 0) : null;
}

/** Due by `at` at the latest (the provider answered; a person's Retry now): never later than it was. */
export function dueByAt(f: Readonly<TurnFailure>, at: number): number {
  return Math.min(f.dueAt ?? at, at);
}

/**
 * Due no earlier than `at` (its write-ahead failed: not at once again, against a failing disk).
 * Null: nothing to move (nothing scheduled, another failure recorded, or no due time).
 */
export function dueNotBeforeAt(w: Watch, failedTurnId: string, at: number): number | null {
  const f = w.lastFailure;
  if (!scheduledOf(w.state) || f?.turnId !== failedTurnId || f.dueAt === null) return null;
  return Math.max(f.dueAt, at);
}
