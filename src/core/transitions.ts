// Where a watch's state and its recovery's due time (the failure's `dueAt`) change: each change is
// a named transition here, as the decision table (policy.ts) or the part that saw it happen (the
// schedule, an attempt, a person's command) asks, carrying out what the rules (policy.ts,
// stepRules.ts) choose; watchWrites.ts writes it, and oneWriter.test.ts lists who else may (the
// clock's guard, a turn that ends a run of failures).
import type { GoalStatus, Marker, ScheduledState, Watch } from '../model/watch';
import { scheduledOf } from '../model/queries';
import type { EngineCore } from './engineCore';
import type { ElsewhereState, ElsewhereVerdict } from './elsewherePolicy';
import { outageKind } from './classify';
import { probeFollowers } from './outage';
import { type MarkerMove, retryNowState, type Verdict } from './policy';
import {
  alreadyRecovered,
  type BudgetSpentState,
  budgetWhy,
  countedStep,
  dueByAt,
  dueNotBeforeAt,
  followerStep,
  halfStepWait,
  lostIntentDue,
  probeTryDue,
  type Step,
  takenOverState,
  usageResumeState,
} from './stepRules';
import type { UsagePlan } from './usagePlan';
import {
  armedAfresh,
  armedAt,
  beforeArmingIs,
  dueAtIs,
  failureIs,
  failuresAre,
  historyAdded,
  pendingIs,
  recoveredAdded,
  recoveriesCleared,
} from './watchWrites';

/**
 * One more consecutive failure of `failedTurnId` (a failed turn, or a rejected set), counted; what
 * comes of it is stepRules.ts `countedStep`. `error`: what failed, for the decision line.
 */
export function backOff(core: EngineCore, w: Watch, failedTurnId: string, error: string, now: number): void {
  failuresAre(w, w.failures + 1);
  core.mark(w.threadId);
  // The provider failed the probe's turn again (not the daemon refusing its set): those that
  // waited for it follow, first (once the probe's state moves, no one waits for it).
  const provider = outageKind(error) !== null;
  const step = countedStep(w, core.options, now, core.deps.random);
  if (step.act === 'giveUp') {
    if (provider) followTheProbe(core, w, now);
    return giveUp(core, w, failedTurnId);
  }
  failedFor(w, failedTurnId, error, now, step.dueAt); // the one place the due time lives
  if (step.act === 'hold') return holdForBudget(core, w, step.spent);
  // Its group takes this step; the probe tries again half-way there, alone (outage.ts).
  const half = provider ? probeTryDue(now, step.dueAt, followTheProbe(core, w, now), core.options) : null;
  if (half !== null) dueAtIs(w, half, step.dueAt);
  backingOff(core, w, failedTurnId, half ?? step.dueAt, now, error);
}

/** The failure's record of `failedTurnId`, due at `due` (a new one when it is not the one recorded). */
function failedFor(w: Watch, failedTurnId: string, error: string, now: number, due: number): void {
  if (w.lastFailure?.turnId === failedTurnId) dueAtIs(w, due);
  else failureIs(w, { turnId: failedTurnId, message: error, code: error, httpStatus: null, at: now, dueAt: due });
}

/** The watch backs off, due at `due` (its failure's record holds it): in the state, and said. */
function backingOff(core: EngineCore, w: Watch, failedTurnId: string, due: number, now: number, why: string) {
  core.setState(w, { kind: 'backoff', attempt: w.failures, failedTurnId });
  saidDue(core, w, w.failures, failedTurnId, due, now, why);
}

/** The one `backoff` line: attempt `attempt` of recovering `failedTurnId` is due at `dueAt`. */
function saidDue(
  core: EngineCore,
  w: Watch,
  attempt: number,
  failedTurnId: string,
  dueAt: number,
  now: number,
  error: string,
) {
  core.emit({ type: 'backoff', threadId: w.threadId, attempt, failedTurnId, dueAt, delayMs: dueAt - now, error });
}

/**
 * An outage's half-step try failed again (policy.ts `count` with `halfStep`): not a step, so not
 * counted; the goal waits for its group's step (`stepDueAt`) with them, and takes it with them.
 * Its set was counted against the recovery budget when it went out.
 */
export function waitForStep(core: EngineCore, w: Watch, failedTurnId: string, stepDueAt: number): void {
  const now = core.now();
  core.mark(w.threadId);
  const step = halfStepWait(w, failedTurnId, stepDueAt, core.options, now);
  const why = `${w.lastFailure?.code ?? ''}: its half-step try failed; due with its group's next step`;
  if (step) stepTaken(core, w, failedTurnId, step, now, why);
}

/** A step that is not the end carried out: due at its time, then held by the budget or backing off. */
function stepTaken(core: EngineCore, w: Watch, failedTurnId: string, step: Step, now: number, why: string): void {
  if (step.act === 'giveUp') return giveUp(core, w, failedTurnId);
  dueAtIs(w, step.dueAt);
  if (step.act === 'hold') return holdForBudget(core, w, step.spent);
  backingOff(core, w, failedTurnId, step.dueAt, now, why);
}

/**
 * `probe` failed again (counted: backed off, or given up): the goals of its group take its step
 * (outage.ts `followProbe`), those that waited for it and those not due yet, so the group is tried
 * again together, one probe first, and gives up together (one burst of notifications). Their own
 * recoveries never went out, so nothing of theirs is counted against the recovery budget.
 * Returns how many follow it (given up: not counted).
 */
function followTheProbe(core: EngineCore, probe: Watch, now: number): number {
  if (!core.options.groupOutages) return 0;
  let following = 0;
  for (const [w, failedTurnId] of probeFollowers(probe, core.scheduledWatches())) {
    const step = followerStep(w, probe, core.options, now);
    failuresAre(w, step.failures);
    core.mark(w.threadId);
    stepTaken(core, w, failedTurnId, step, now, `its outage's probe (${probe.threadId}) failed again`);
    if (step.act !== 'giveUp') following += 1;
  }
  return following;
}

/**
 * A goal from another Codex app, loaded in the daemon by the person's Retry now: armed from its
 * last activation in the rollout (the next look reads back to it, so a person's marker or the
 * model's own block since then still speaks), with its failure counted once and due now.
 */
export function takeOver(core: EngineCore, w: Watch, goal: 'blocked' | 'usageLimited'): void {
  const failure = w.lastFailure;
  if (!failure) return;
  armedAt(w, core.now());
  failuresAre(w, 1);
  dueAtIs(w, core.now());
  core.setState(w, takenOverState(goal, failure.turnId));
  core.emit({ type: 'armed', threadId: w.threadId, title: w.title });
}

/**
 * The recovery budget is spent (the table's `overBudget`): no set until a person's Retry now or
 * re-arm; said once (the state is saved before the decision is delivered, and the table keeps it).
 */
export function holdForBudget(core: EngineCore, w: Watch, spent: BudgetSpentState): void {
  core.setState(w, spent);
  core.emit({ type: 'attention', threadId: w.threadId, reason: budgetWhy(spent) });
}

/** `maxAttempts` recoveries in a row failed again: a person must look (once). */
export function giveUp(core: EngineCore, w: Watch, failedTurnId: string): void {
  const attempts = core.options.maxAttempts;
  if (w.state.kind === 'gaveUp') return;
  historyAdded(w, {
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
export function confirmRecovered(core: EngineCore, w: Watch, failedTurnId: string, attempt: number, how: string) {
  pendingIs(w, null);
  core.mark(w.threadId);
  if (alreadyRecovered(w, failedTurnId)) return;
  recoveredAdded(w, failedTurnId);
  historyAdded(w, {
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

/** The table's verdict carried out: all but a new usage limit's, whose reset is read first (`usagePlanned`). */
type Applied = Exclude<Verdict, { act: 'readReset' }>;
export function applyVerdict(core: EngineCore, w: Watch, verdict: Applied): void {
  switch (verdict.act) {
    case 'keep':
      return;
    case 'settle':
      if (verdict.attention) core.emit({ type: 'attention', threadId: w.threadId, reason: verdict.why });
      return core.setState(w, verdict.state);
    case 'giveUp':
      return giveUp(core, w, verdict.failedTurnId);
    case 'forget':
      return core.forget(w.threadId, verdict.why);
    case 'count': {
      const failure = verdict.failure;
      if (verdict.failedAgain && w.lastFailure)
        historyAdded(w, {
          at: failure.at,
          failedTurnId: w.lastFailure.turnId,
          attempt: w.failures,
          error: w.lastFailure.code,
          outcome: 'failed-again',
          detail: failure.code,
        });
      failureIs(w, failure);
      if (verdict.halfStep !== null) return waitForStep(core, w, failure.turnId, verdict.halfStep);
      return backOff(core, w, failure.turnId, failure.code, failure.at);
    }
  }
}

/**
 * A new usage limit (`key`), its reset read (usagePlan.ts): resumed at its due time, held by the
 * recovery budget, or, when no reset clears it, a person's call (said once).
 */
export function usagePlanned(core: EngineCore, w: Watch, key: string, plan: UsagePlan): void {
  const now = core.now();
  if (plan.act === 'attention') {
    failureIs(w, { turnId: key, message: plan.message, code: plan.code, httpStatus: 429, at: now, dueAt: null });
    core.emit({ type: 'attention', threadId: w.threadId, reason: plan.message });
    return core.setState(w, { kind: 'needsAttention', code: plan.code, message: plan.message });
  }
  const message = `usage limit reached; reset from ${plan.source}`;
  failureIs(w, { turnId: key, message, code: 'usageLimitExceeded', httpStatus: 429, at: now, dueAt: plan.dueAt });
  const state = usageResumeState(w, plan.resetsAt, core.options, now);
  if (state.kind === 'budgetSpent') return holdForBudget(core, w, state);
  core.setState(w, state);
  saidDue(core, w, 1, key, plan.dueAt, now, 'usageLimitExceeded');
}

/**
 * A write-ahead intent that had no effect. Refused by the daemon (its reply said so, `rejected`): a
 * failed attempt, backing off further and giving up after the limit (TestResetSetError). Else lost,
 * or never sent: due again at once, never before its due time (an intent prepared ahead, cut short
 * by a crash, is not sent early); the next look decides.
 */
export function intentLost(core: EngineCore, w: Watch): void {
  const pending = w.pending;
  if (!pending) return;
  pendingIs(w, null);
  historyAdded(w, {
    at: core.now(),
    failedTurnId: pending.failedTurnId,
    attempt: pending.attempt,
    error: w.lastFailure?.code ?? '',
    outcome: pending.rejected === undefined ? 'skipped' : 'rejected',
    detail:
      pending.rejected ??
      'no effect on the daemon: the set was lost, or never sent before the engine stopped; due again',
  });
  if (pending.rejected !== undefined) return backOff(core, w, pending.failedTurnId, 'set rejected', core.now());
  const due = lostIntentDue(w.lastFailure, pending.failedTurnId, core.now());
  if (due !== null) dueAtIs(w, due);
  core.setState(w, { kind: 'running' }, true);
  core.mark(w.threadId);
}

/** Armed from now on (first sight of an active goal, `autoArm` on, or a person's goal not adopted): said. */
export function armed(core: EngineCore, w: Watch): void {
  armedAfresh(w, core.now());
  core.setState(w, { kind: 'running' });
  core.emit({ type: 'armed', threadId: w.threadId, title: w.title });
}

/**
 * A person's arming (Watch this goal): from the goal's last activation, the recovery budget
 * afresh, what stopped the goal by now kept in `beforeArming` (never recovered). Said by the
 * caller once saved.
 */
export function armedByPerson(core: EngineCore, w: Watch, beforeArming: string | null): void {
  armedAfresh(w, core.now());
  recoveriesCleared(w);
  beforeArmingIs(w, beforeArming);
  core.setState(w, { kind: 'running' }, true);
  core.mark(w.threadId);
}

/** A person's re-arm of a disarmed thread: from the goal's last activation, the budget afresh. */
export function rearmedByPerson(core: EngineCore, w: Watch): void {
  armedAt(w, core.now());
  recoveriesCleared(w);
  core.setState(w, { kind: 'running' });
  core.mark(w.threadId);
}

/** A goal never adopted (not active when first seen, or `autoArm` off), as its status is now. */
export function notAdopted(core: EngineCore, w: Watch, status: GoalStatus, quiet = false): void {
  core.setState(w, { kind: 'notAdopted', status }, quiet);
}

/** The daemon no longer has the thread loaded: what waited for it says so (policy.ts `keepsOnUnload`). */
export function unloaded(core: EngineCore, w: Watch): void {
  core.setState(w, { kind: 'unloaded' });
}

/** A person's goal marker, newer than the arming, carried out as the table says (`markerMove`). */
export function markerMoved(core: EngineCore, w: Watch, move: MarkerMove, marker: Marker): void {
  const now = core.now();
  switch (move) {
    case 'afresh': // a person set the goal active again after its recovery budget was spent
      return recoveriesCleared(w);
    case 'rearm':
      armedAt(w, now, marker.offset);
      core.setState(w, { kind: 'running' });
      core.emit({ type: 'rearmed', threadId: w.threadId, reason: 'the user set the goal active' });
      return;
    case 'disarm':
      pendingIs(w, null);
      core.setState(w, { kind: 'userIntent', requested: marker.status, at: now });
      core.emit({ type: 'disarmed', threadId: w.threadId, reason: `the user set the goal ${marker.status}` });
      return;
    case 'none':
  }
}

/** A goal of another Codex app shown (elsewherePolicy.ts `show`), with the failure it tells of. */
export function shownElsewhere(core: EngineCore, w: Watch, v: Extract<ElsewhereVerdict, { act: 'show' }>): void {
  if (v.failure !== undefined) failureIs(w, v.failure);
  core.mark(w.threadId);
  core.setState(w, v.state);
}

/**
 * A person's Retry now on a goal of another app, written before the daemon is asked to load it
 * (`asking`), or taken back when it refused (nothing to carry out).
 */
export function elsewhereRetry(core: EngineCore, w: Watch, asked: ElsewhereState, asking: boolean): void {
  const f = w.lastFailure;
  core.setState(w, asking && f ? { ...asked, retryAsked: { at: core.now(), failedTurnId: f.turnId } } : asked);
}

/** Due, held by the global limiter for a slot at `slotAt`. */
export function waitForSlot(core: EngineCore, w: Watch, slotAt: number): void {
  const scheduled = scheduledOf(w.state);
  if (scheduled) core.setState(w, { kind: 'waitingSlot', slotAt, held: scheduled }, true);
}

/** Due, held for its outage's probe; false when it waits for that probe already (or is not a backoff). */
export function waitForProbe(core: EngineCore, w: Watch, probe: string): boolean {
  const scheduled = scheduledOf(w.state);
  if (scheduled?.kind !== 'backoff') return false;
  if (w.state.kind === 'waitingProbe' && w.state.probe === probe) return false;
  core.setState(w, { kind: 'waitingProbe', probe, held: scheduled }, true);
  return true;
}

/** Held no more (for a slot or a probe): as scheduled. True when it was held. */
export function unhold(core: EngineCore, w: Watch): boolean {
  const scheduled = scheduledOf(w.state);
  if (!scheduled || scheduled === w.state) return false;
  core.setState(w, scheduled, true);
  return true;
}

/** Due by `at` at the latest (the provider answered; Retry now, unloaded): the caller moves its due job. */
export function dueBy(core: EngineCore, w: Watch, at: number): void {
  const f = w.lastFailure;
  if (!f) return;
  dueAtIs(w, dueByAt(f, at));
  core.mark(w.threadId);
}

/** Due no earlier than `at` (the write-ahead failed: not at once again, against a failing disk). */
export function dueNotBefore(core: EngineCore, w: Watch, failedTurnId: string, at: number): void {
  const due = dueNotBeforeAt(w, failedTurnId, at);
  if (due === null) return;
  dueAtIs(w, due);
  core.mark(w.threadId);
}

/**
 * A person's Retry now on a recovery scheduled, given up, or held by the budget: due now (one
 * recovery past the budget, the person's, counted with the others at its write-ahead).
 */
export function retriedNow(core: EngineCore, w: Watch): void {
  const due = retryNowState(w);
  if (due) core.setState(w, due, scheduledOf(w.state) !== null);
  dueAtIs(w, core.now());
  core.mark(w.threadId);
  core.followDue(w); // now: its due job follows
}

/** The attempt's intent is on disk: the set is under way. */
export function recovering(core: EngineCore, w: Watch, attempt: number, failedTurnId: string, sentAt: number): void {
  core.setState(w, { kind: 'recovering', attempt, failedTurnId, sentAt });
}

/** An attempt called off or withdrawn before its set: scheduled as it was (if it still shows under way). */
export function setWithdrawn(core: EngineCore, w: Watch, scheduled: ScheduledState): void {
  if (w.state.kind === 'recovering') core.setState(w, scheduled, true);
  core.mark(w.threadId);
}
