// The decision table: whether a watched thread is recovered, and if not, why not. Pure functions
// of what is known of a watch (its goal, its newest turn, what the daemon said of the thread just
// now, the options, the time): no I/O, no clock reads, no `await`. The engine gathers the facts,
// asks here, and carries out the verdict; the pre-send veto is the same table asked again on
// fresh reads. Each row names the seed scenario (shared/seed/operator_test.go.txt) or the
// measured daemon behaviour (docs/daemon-behaviour.md) it comes from; docs/architecture.md shows
// the states it chooses, test/unit/policy.test.ts has one case per row (the veto's reasons:
// policyVeto.test.ts).
import {
  describeErrorCode,
  type GoalSnapshot,
  type ScheduledState,
  type TurnFailure,
  type Watch,
  type WatchState,
} from '../model/watch';
import { scheduledOf } from '../model/queries';
import { classifyFailure, describeErrorInfo } from './classify';
import { isThreadActive, type LiveThread, turnRuns, waitsForPerson } from './live';
import type { EngineOptions } from './options';
import { halfStepFailed } from './outage';
import { isUntimedCode } from './rateLimits';
import { budgetWhy, givesUp, overBudget } from './stepRules';

/** What is known of a watch when it is decided. Nothing here is changed. */
export interface Facts {
  readonly w: Watch;
  readonly live: Readonly<LiveThread>;
  /** When the user disarmed the thread from the extension, if they did. */
  readonly disarmedAt: number | undefined;
  readonly options: Readonly<EngineOptions>;
  readonly now: number;
}

export type Verdict =
  /** Settle into `state`; nothing is due. `attention`: say so once (a failure a person must see). */
  | { act: 'settle'; state: WatchState; why: string; attention?: boolean }
  /** Keep the state as it is. `scheduled`: the failed turn whose recovery stays due, if one does. */
  | { act: 'keep'; why: string; scheduled?: string }
  /**
   * A failed turn not counted yet: count it, then back off (or give up past `maxAttempts`: the
   * back-off counts it, and decides). `halfStep`: the failure of an outage's half-step try
   * (outage.ts): not counted, it waits for its group's step, due then.
   */
  | { act: 'count'; failure: TurnFailure; why: string; failedAgain: boolean; halfStep: number | null }
  /** A failure counted before, past `maxAttempts` now: give up. */
  | { act: 'giveUp'; failedTurnId: string; why: string }
  /** A usage limit not scheduled yet: read when it resets, then `usageDue`. */
  | { act: 'readReset'; key: string; why: string }
  /** Nothing is left to watch (the goal was cleared): the watch goes, said once. */
  | { act: 'forget'; why: string };

/** The table. Called once the goal, the newest turn and the rollout's markers have been read. */
export function decide(f: Facts): Verdict {
  const { w, live } = f;
  const goal = w.goal;
  // The goal was cleared: nothing left to watch, whoever disarmed it.
  if (!goal) return { act: 'forget', why: 'goal cleared' };
  // The user disarmed the thread from the extension: nothing automatic until Re-arm.
  if (f.disarmedAt !== undefined)
    return w.state.kind === 'disarmed'
      ? { act: 'keep', why: 'disarmed by the user' }
      : {
          act: 'settle',
          // A goal never adopted stays one: its Re-arm is a first arming, from then on.
          state:
            w.state.kind === 'notAdopted'
              ? { kind: 'disarmed', at: f.disarmedAt, neverArmed: true }
              : { kind: 'disarmed', at: f.disarmedAt },
          why: 'disarmed by the user',
        };
  // A person's goal marker in the rollout, newer than the arming (TestPauseDuringRead).
  if (w.state.kind === 'userIntent') return { act: 'keep', why: `the user set the goal ${w.state.requested}` };
  switch (goal.status) {
    case 'active': // TestLiveActivity
      return { act: 'settle', state: activeState(live), why: 'the goal is active' };
    case 'paused': // no marker says a person paused it: left alone all the same
    case 'complete':
    case 'budgetLimited':
      return { act: 'settle', state: { kind: goal.status }, why: `the goal is ${goal.status}` };
    case 'usageLimited':
      return usageLimited(f, goal);
    case 'blocked':
      return blocked(f);
  }
}

/** A blocked goal: only a transient failure of its newest turn, seen while armed, is recovered. */
function blocked(f: Facts): Verdict {
  const { w, live } = f;
  // Someone else moves next: a running turn, a person's approval, Codex's own retry (TestNoCompetingRetry).
  if (othersMove(live)) return { act: 'settle', state: activeState(live), why: othersWhy(live) };
  // The model chose the block (`update_goal`), even if its turn then failed: never recovered.
  if (w.modelBlockOffset !== null)
    return { act: 'settle', state: { kind: 'modelBlocked' }, why: 'the model blocked the goal itself' };
  const turn = live.turn;
  // Held by the recovery budget, the newest turn not known yet (a restart's first look, its read
  // overtaken by an event): nothing new, so kept; passing through turnEnding would say it again.
  if (!turn && w.state.kind === 'budgetSpent') return { act: 'keep', why: budgetWhy(w.state) };
  // Codex marks the goal blocked before the turn completes (measured): its end decides.
  if (!turn || turnUnended(turn, live.status))
    return { act: 'settle', state: { kind: 'turnEnding' }, why: 'the failed turn has not ended yet' };
  // A completed turn: the model's block (a goal blocked while its turn succeeded).
  if (turn.status === 'completed')
    return { act: 'settle', state: { kind: 'modelBlocked' }, why: 'the latest turn is completed' };
  if (turn.status === 'interrupted')
    return { act: 'settle', state: { kind: 'interrupted' }, why: 'the latest turn is interrupted' };
  // Armed by a person while this failed turn stopped the goal: older than the arming, never recovered.
  if (turn.id === w.beforeArming) return failedBeforeArming(describeErrorInfo(turn.error?.codexErrorInfo).code, turn);
  // At most one effective recovery per failed turn, ever (TestRecovery, TestRestartPending): blocked
  // again on a turn recovered once (no newer turn ran), it is a person's call.
  if (w.recovered.includes(turn.id)) return blockedAgain(w, 'this failed turn was recovered already');
  const info = turn.error?.codexErrorInfo ?? null;
  const message = turn.error?.message ?? 'turn failed';
  const { code, httpStatus } = describeErrorInfo(info);
  // Only a transient failure is recovered (context window, 400/401, unknown: a person's call).
  if (classifyFailure(info, message).kind !== 'transient')
    return {
      act: 'settle',
      state: { kind: 'needsAttention', code, message },
      why: `${describeErrorCode(code)} (${message})`,
      attention: w.state.kind !== 'needsAttention',
    };
  // Counted before (a restart, an unload, an attempt called off): it keeps its stored due time.
  if (w.lastFailure?.turnId === turn.id && w.lastFailure.dueAt !== null) {
    if (w.state.kind === 'gaveUp') return { act: 'keep', why: 'gave up on this failure' };
    if (w.state.kind === 'budgetSpent') return { act: 'keep', why: budgetWhy(w.state) };
    if (isScheduledFor(w.state, 'backoff', turn.id))
      return { act: 'keep', why: 'its recovery is due', scheduled: turn.id };
    if (givesUp(w.failures, f.options))
      return { act: 'giveUp', failedTurnId: turn.id, why: `${f.options.maxAttempts} recoveries failed again` };
    const spent = overBudget(w, f.options, f.now);
    if (spent) return { act: 'settle', state: spent, why: budgetWhy(spent), attention: true };
    return {
      act: 'settle',
      state: { kind: 'backoff', attempt: w.failures, failedTurnId: turn.id },
      why: 'its recovery is due',
    };
  }
  // A new failed turn: counted, then a backoff (TestRecovery), or the end after `maxAttempts`
  // (`backOff` counts it and decides); after an outage's half-step try, a try and not a step: due
  // with its group (outage.ts).
  const halfStep = halfStepFailed(w.lastFailure, w.recovered, f.now, f.options.baseDelayMs);
  return {
    act: 'count',
    failure: { turnId: turn.id, message, code, httpStatus, at: f.now, dueAt: null },
    why: halfStep === null ? `${code} on turn ${turn.id}` : `${code} on turn ${turn.id}, a half-step try of its outage`,
    failedAgain: w.lastFailure !== null && w.recovered.includes(w.lastFailure.turnId),
    halfStep,
  };
}

/** A usage-limited goal: resumed once after the reset, if the user wants that. */
function usageLimited(f: Facts, goal: Readonly<GoalSnapshot>): Verdict {
  const { w, live } = f;
  if (!f.options.recoverUsageLimited)
    return {
      act: 'settle',
      state: {
        kind: 'needsAttention',
        code: 'usageLimitExceeded',
        message: 'usage limit reached (automatic resume is off)',
      },
      why: 'automatic resume after a usage limit is off',
    };
  // Codex may still retry the turn that ran into the limit: its end comes first.
  if (othersMove(live)) return { act: 'settle', state: activeState(live), why: othersWhy(live) };
  const key = usageKey(goal, live);
  // Armed by a person while this usage limit stopped the goal: older than the arming, never resumed.
  if (key === w.beforeArming) return failedBeforeArming('usageLimitExceeded', live.turn);
  if (w.recovered.includes(key)) return blockedAgain(w, 'this usage limit was resumed already');
  // A limit no reset clears (out of credits, a spend cap), found before: a person's call.
  if (w.lastFailure?.turnId === key && isUntimedCode(w.lastFailure.code))
    return w.state.kind === 'needsAttention'
      ? { act: 'keep', why: w.lastFailure.message }
      : {
          act: 'settle',
          state: { kind: 'needsAttention', code: w.lastFailure.code, message: w.lastFailure.message },
          why: w.lastFailure.message,
        };
  if (w.lastFailure?.turnId === key && w.lastFailure.dueAt !== null) {
    if (w.state.kind === 'budgetSpent') return { act: 'keep', why: budgetWhy(w.state) };
    if (isScheduledFor(w.state, 'usageLimited', key)) return { act: 'keep', why: 'its resume is due', scheduled: key };
    const spent = overBudget(w, f.options, f.now);
    if (spent) return { act: 'settle', state: spent, why: budgetWhy(spent), attention: true };
    return { act: 'settle', state: { kind: 'usageLimited', resetsAt: null }, why: 'its resume is due' };
  }
  // Codex marks the goal usage-limited before its turn completes (measured: daemon-behaviour (o)):
  // the turn's end carries the message that names the reset, the last source when nothing else does.
  if (live.turn && turnUnended(live.turn, live.status))
    return { act: 'settle', state: { kind: 'turnEnding' }, why: 'the limited turn has not ended yet' };
  return { act: 'readReset', key, why: 'a new usage limit' };
}

/** What stopped the goal before a person armed it: shown, never recovered (nor said as a new failure). */
function failedBeforeArming(code: string, turn: Readonly<LiveThread['turn']>): Verdict {
  const message = turn?.error?.message ?? (code === 'usageLimitExceeded' ? 'usage limit reached' : 'turn failed');
  return {
    act: 'settle',
    state: { kind: 'failedBeforeArming', code, message },
    why: `${describeErrorCode(code)} before the goal was armed: older than the arming, never recovered`,
  };
}

/** Stopped again on what was recovered once already: never twice, so a person must look (said once). */
function blockedAgain(w: Watch, why: string): Verdict {
  return {
    act: 'settle',
    state: { kind: 'needsAttention', code: 'recoveredOnce', message: `${why}; it is never recovered twice` },
    why,
    attention: w.state.kind !== 'needsAttention',
  };
}

/**
 * The pre-send veto: the table asked again on fresh reads. The set goes out only when the table
 * still keeps this very recovery due; otherwise the reason it gives calls the attempt off.
 * Two rows come first: the user's global pause, and a thread the daemon has not loaded (measured:
 * a set there makes the goal active with no turn and no rollout line).
 */
export function veto(
  f: Facts,
  expected: 'blocked' | 'usageLimited',
  failedTurnId: string,
  paused: boolean,
): string | null {
  if (paused) return 'auto-recovery is paused';
  if (f.live.status?.type === 'notLoaded') return 'the thread is not loaded in the daemon';
  const goal = f.w.goal;
  if (f.disarmedAt === undefined && f.w.state.kind !== 'userIntent') {
    if (!goal) return 'the goal was cleared';
    if (goal.status !== expected) return `the goal is ${goal.status} now`;
  }
  const verdict = decide(f);
  // Only a `keep` carries `scheduled`.
  if ((verdict as { scheduled?: string }).scheduled === failedTurnId) return null;
  if (verdict.act === 'count' || verdict.act === 'readReset') return 'a newer turn exists';
  if (expected === 'blocked' && f.live.turn && f.live.turn.id !== failedTurnId && verdict.act === 'settle')
    return 'a newer turn exists';
  return verdict.why;
}

/** What a pending intent (the write-ahead of a set) says, read against the daemon's state. */
export type PendingOutcome =
  /** The newest turn is not known yet: undecided until it is. */
  | 'undecided'
  /** The goal is active, or a newer turn exists: the set took effect (TestLostSetReply, TestRestartPending). */
  | 'recovered'
  /** Still blocked or usage-limited: the set was lost, or never sent (due again, never early); or `rejected`
   * by the daemon's reply: a failed attempt (TestResetSetError). */
  | 'lost'
  | 'rejected'
  /** The goal moved on otherwise (paused, complete, cleared): the intent is dropped. */
  | 'moot';

export function pendingOutcome(w: Watch, live: Readonly<LiveThread>): PendingOutcome {
  const pending = w.pending;
  if (!pending) return 'moot';
  if (live.turn === null && w.goal?.status !== 'active') return 'undecided';
  if (setTookEffect(w.goal?.status, live.turn, pending.failedTurnId)) return 'recovered';
  const still = w.goal?.status === 'blocked' || w.goal?.status === 'usageLimited';
  return !still ? 'moot' : pending.rejected === undefined ? 'lost' : 'rejected';
}

/**
 * What a person's goal marker in the rollout, newer than the arming, does (TestPauseDuringRead):
 * `active` re-arms a thread their earlier marker disarmed (`rearm`), and starts a spent recovery
 * budget afresh (`afresh`); any other status disarms the thread (`disarm`: `userIntent`), unless it
 * already says that very status.
 */
export type MarkerMove = 'rearm' | 'afresh' | 'disarm' | 'none';

export function markerMove(state: WatchState, status: GoalSnapshot['status']): MarkerMove {
  if (state.kind !== 'userIntent') {
    if (status !== 'active') return 'disarm';
    return state.kind === 'budgetSpent' ? 'afresh' : 'none';
  }
  if (status === 'active') return 'rearm';
  return state.requested === status ? 'none' : 'disarm';
}

/**
 * A person's Retry now (TestRetryNow): the state it makes due, now. A scheduled recovery as it is
 * (no longer held for a slot or a probe: the person's goes first); one given up, the backoff of its
 * last failure; one held by the budget, what it was held from (its usage limit, or its backoff).
 * Null: nothing to make due (the state stays; its failure, if any, is due now all the same).
 */
export function retryNowState(w: Watch): ScheduledState | null {
  const scheduled = scheduledOf(w.state);
  if (scheduled) return scheduled;
  const failed = w.lastFailure?.turnId;
  if (failed === undefined) return null;
  if (w.state.kind === 'gaveUp') return { kind: 'backoff', attempt: w.failures, failedTurnId: failed };
  if (w.state.kind !== 'budgetSpent') return null;
  return w.goal?.status === 'usageLimited'
    ? { kind: 'usageLimited', resetsAt: null }
    : { kind: 'backoff', attempt: Math.max(1, w.failures), failedTurnId: failed };
}

/** A turn that completed ends the run of consecutive failures: the next failure counts from one. */
export function endsFailureRun(turnStatus: string): boolean {
  return turnStatus === 'completed';
}

/**
 * Whether a set for failed turn `failedTurnId` took effect, read from the daemon's state, never
 * from a reply alone: the goal is active, or a newer turn than the failed one exists (whatever the
 * reply said: TestLostSetReply, TestRestartPending). `goal`: its status as just read or replied.
 */
export function setTookEffect(
  goal: string | undefined,
  turn: Readonly<LiveThread['turn']>,
  failedTurnId: string,
): boolean {
  return goal === 'active' || (turn !== null && turn.id !== failedTurnId);
}

/** First sight of a goal: armed only if it was active (never an old block: TestOldBlocked) and `autoArm` is on. */
export function adopts(seenStatus: string, options: Readonly<EngineOptions>): boolean {
  return seenStatus === 'active' && options.autoArm;
}

/** States that stay as they are when the daemon unloads the thread: nothing there waits for it. */
export function keepsOnUnload(state: WatchState): boolean {
  return UNLOAD_KEEPS.has(state.kind);
}
const UNLOAD_KEEPS = new Set<WatchState['kind']>([
  'userIntent',
  'disarmed',
  'complete',
  'budgetLimited',
  'modelBlocked',
  'notAdopted',
  'failedBeforeArming',
  'gaveUp',
  'budgetSpent',
  'needsAttention',
  'unloaded',
  'elsewhere',
]);

/** Which usage limit this is: its turn, or (no turn known) the usage-limited goal's update. */
export function usageKey(goal: Readonly<GoalSnapshot>, live: Readonly<LiveThread>): string {
  return live.turn?.id ?? `usage@${goal.updatedAt}`;
}

/**
 * The turn has not ended: running, or read in the instant a failure ends it (the daemon lists it
 * `interrupted`, with no error and no end time, while the thread is `systemError` already:
 * daemon-behaviour (q)). A turn a crash cut short lists the same, but on an idle thread.
 */
export function turnUnended(turn: Readonly<NonNullable<LiveThread['turn']>>, status: LiveThread['status']): boolean {
  if (turn.status === 'inProgress') return true;
  return turn.status === 'interrupted' && turn.completedAt === null && status?.type === 'systemError';
}

/**
 * The thread's next move is someone else's, so nothing is due for a blocked or usage-limited goal:
 * a running turn; a person's approval (even with the thread no longer `active`: a re-attempt would
 * be called off by the veto and fall due again at once); Codex's own retry (its turn has not
 * ended, even when the retry ran into a usage limit). `activeState` says which.
 */
function othersMove(live: Readonly<LiveThread>): boolean {
  return isThreadActive(live.status) || waitsForPerson(live) || live.retrying !== null;
}

function othersWhy(live: Readonly<LiveThread>): string {
  if (waitsForPerson(live)) return 'waiting for approval';
  if (live.retrying !== null) return 'Codex is retrying';
  return 'a turn is running';
}

/** The state of a goal whose thread is someone else's to move, or simply active. */
function activeState(live: Readonly<LiveThread>): WatchState {
  if (waitsForPerson(live)) return { kind: 'waitingApproval' };
  if (live.retrying) return { kind: 'codexRetrying', detail: live.retrying };
  if (turnRuns(live)) return { kind: 'running' };
  if (live.turn?.status === 'interrupted') return { kind: 'interrupted' };
  return live.status === null ? { kind: 'running' } : { kind: 'idle' };
}

/**
 * The state keeps this recovery due, waiting or under way: a backoff of failed turn `key`, or the
 * resume after usage limit `key` (a backoff after a rejected resume is not one: it goes back to
 * `usageLimited`, as a usage limit is resumed at its reset, never on a backoff).
 */
function isScheduledFor(state: WatchState, kind: 'backoff' | 'usageLimited', key: string): boolean {
  switch (state.kind) {
    case 'backoff':
      return kind === 'backoff' && state.failedTurnId === key;
    case 'usageLimited':
      return kind === 'usageLimited';
    case 'recovering':
      return state.failedTurnId === key;
    case 'waitingSlot':
    case 'waitingProbe':
      return isScheduledFor(state.held, kind, key);
  }
  return false;
}
