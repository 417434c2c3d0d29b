// The questions asked of a watch's state (src/model/queries.ts), for every state a watch can be in:
// which states keep a recovery scheduled (a held one too) and when it is due; when "Retry now" and
// "Pause goal" apply; which states leave the thread to a person; and which goals wait for a person
// (the badge, the status bar, `status`): a failed goal on a thread the daemon has not loaded waits for its load.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  canPauseGoal,
  canRetryNow,
  dueAt,
  delayDueAt,
  isDisarmed,
  isScheduled,
  needsPerson,
  personWait,
  type PersonWait,
  scheduledOf,
  waitsForLoad,
} from '../../src/model/queries';
import {
  GOAL_STATUSES,
  newWatch,
  type GoalStatus,
  type WatchedThread,
  type WatchState,
  type WatchStateKind,
} from '../../src/model/watch';
import { EVERY_STATE } from '../support/watchSamples';

/** One state of each kind (a kind missing there fails to compile). */
const STATES = EVERY_STATE;
const KINDS = Object.keys(STATES) as WatchStateKind[];

/** A watch in `state` whose goal `status` was stopped by a failed turn (due at 500) not recovered yet. */
function failed(state: WatchState, status: GoalStatus = 'blocked'): WatchedThread {
  const w = newWatch('t', 1);
  w.state = state;
  w.goal = { status, objective: 'o', tokensUsed: 0, tokenBudget: null, updatedAt: 1 };
  w.lastFailure = { turnId: 'turn-1', message: 'm', code: 'internalServerError', httpStatus: 500, at: 2, dueAt: 500 };
  return w;
}

/** The kinds for which `ask` holds, of a failed watch in each state (each answer a yes or a no). */
function kindsWhere(ask: (w: WatchedThread) => boolean): WatchStateKind[] {
  return KINDS.filter((k) => {
    const answer = ask(failed(STATES[k]));
    assert.equal(typeof answer, 'boolean', k);
    return answer;
  });
}

test('a recovery is scheduled in backoff and under a usage limit, and while the limiter or a probe holds it', () => {
  assert.deepEqual(
    kindsWhere((w) => isScheduled(w.state)),
    ['backoff', 'waitingSlot', 'waitingProbe', 'usageLimited'],
  );
  assert.equal(scheduledOf(STATES.backoff), STATES.backoff);
  assert.equal(scheduledOf(STATES.usageLimited), STATES.usageLimited);
  // A held recovery is the recovery as it was scheduled.
  assert.equal(scheduledOf(STATES.waitingSlot), STATES.waitingSlot.held);
  assert.equal(scheduledOf(STATES.waitingProbe), STATES.waitingProbe.held);
  for (const k of KINDS) if (!isScheduled(STATES[k])) assert.equal(scheduledOf(STATES[k]), null, k);
});

test('a scheduled recovery is due at its failure’s due time; nothing else is due', () => {
  for (const k of KINDS) assert.equal(dueAt(failed(STATES[k])), isScheduled(STATES[k]) ? 500 : null, k);
  // Scheduled with no failure kept: nothing says when, so nothing is due.
  const w = failed(STATES.backoff);
  w.lastFailure = null;
  assert.equal(dueAt(w), null);
});

// Also: a goal given up on or out of budget, a retryable goal elsewhere, and a failed goal not loaded.
test('Retry now applies to a scheduled recovery, and to a stopped goal it can recover', () => {
  assert.deepEqual(kindsWhere(canRetryNow), [
    'backoff',
    'waitingSlot',
    'waitingProbe',
    'usageLimited',
    'gaveUp',
    'budgetSpent',
    'unloaded',
    'elsewhere',
  ]);
});

test('Retry now needs a failure to retry when the engine gave up or the budget is spent', () => {
  for (const state of [STATES.gaveUp, STATES.budgetSpent]) {
    const w = failed(state);
    w.lastFailure = null;
    assert.equal(canRetryNow(w), false, state.kind);
  }
});

test('Retry now applies to a goal in another Codex app only when it is retryable there', () => {
  assert.equal(canRetryNow(failed({ ...STATES.elsewhere, retryable: false })), false);
  assert.equal(canRetryNow(failed({ ...STATES.elsewhere, retryable: true })), true);
});

test('a goal waits for its load only while unloaded, stopped by a failure or usage limit not recovered yet', () => {
  assert.deepEqual(kindsWhere(waitsForLoad), ['unloaded']);
  const unloaded = STATES.unloaded;
  assert.equal(waitsForLoad(failed(unloaded, 'usageLimited')), true);
  for (const status of GOAL_STATUSES.filter((s) => s !== 'blocked' && s !== 'usageLimited')) {
    assert.equal(waitsForLoad(failed(unloaded, status)), false, status);
  }
  const noGoal = failed(unloaded);
  noGoal.goal = null;
  assert.equal(waitsForLoad(noGoal), false, 'no goal');
  const noFailure = failed(unloaded);
  noFailure.lastFailure = null;
  assert.equal(waitsForLoad(noFailure), false, 'no failure');
  const recovered = failed(unloaded);
  recovered.recovered = ['turn-0', 'turn-1'];
  assert.equal(waitsForLoad(recovered), false, 'its failure recovered already');
  // Retry now loads it: it applies exactly when the goal waits for its load.
  for (const w of [failed(unloaded, 'active'), noGoal, noFailure, recovered]) assert.equal(canRetryNow(w), false);
});

test('Pause goal applies to an active goal, and to one stopped by a failure or a usage limit', () => {
  const pausable = GOAL_STATUSES.filter((status) => canPauseGoal(failed(STATES.running, status)));
  assert.deepEqual(pausable, ['active', 'blocked', 'usageLimited']);
  const noGoal = failed(STATES.running);
  noGoal.goal = null;
  assert.equal(canPauseGoal(noGoal), false);
});

test('a thread is out of the engine’s hands after a person’s goal marker or a disarm from the extension', () => {
  assert.deepEqual(
    kindsWhere((w) => isDisarmed(w.state)),
    ['userIntent', 'disarmed'],
  );
});

// One answer for the badge, the status bar, the tree's order and `status`'s exit code.
test('a goal waits for a person when it needs attention, or is stopped where the engine cannot recover it', () => {
  const because = (reason: PersonWait) => kindsWhere((w) => personWait(w) === reason);
  assert.deepEqual(because('attention'), ['needsAttention', 'gaveUp', 'budgetSpent']);
  assert.deepEqual(because('beforeArming'), ['failedBeforeArming']);
  assert.deepEqual(because('load'), ['unloaded']);
  assert.deepEqual(because('elsewhere'), ['elsewhere']);
  assert.deepEqual(kindsWhere(needsPerson), [
    'needsAttention',
    'gaveUp',
    'budgetSpent',
    'failedBeforeArming',
    'unloaded',
    'elsewhere',
  ]);
  const loadedNothing = failed(STATES.unloaded);
  loadedNothing.lastFailure = null;
  assert.equal(personWait(loadedNothing), null, 'unloaded, with no failure to recover');
  assert.equal(needsPerson(loadedNothing), false);
  const elsewhere = GOAL_STATUSES.filter((goal) => needsPerson(failed({ ...STATES.elsewhere, goal })));
  assert.deepEqual(elsewhere, ['blocked', 'usageLimited']);
});

test('a wall-clock jump back moves the delays the engine chose, never a reset time the provider gave (delayDueAt)', () => {
  // A delay's due time is the failure's own; anything else is null.
  const dueIsDelay = (w: Parameters<typeof delayDueAt>[0]) => {
    const due = delayDueAt(w);
    assert.ok(due === null || due === w.lastFailure?.dueAt, `due ${due}`);
    return due !== null;
  };
  // A failure counted (due at 500), not recovered: a delay in every state but a usage limit with its reset known.
  assert.deepEqual(
    kindsWhere((w) => !dueIsDelay(w)),
    ['usageLimited'],
  );
  const unknownReset = failed({ kind: 'usageLimited', resetsAt: null });
  assert.equal(dueIsDelay(unknownReset), true, 'a usage limit with no reset known waits for a delay of ours');
  const heldLimit = failed({ kind: 'waitingSlot', slotAt: 9_000, held: { kind: 'usageLimited', resetsAt: 8_000 } });
  assert.equal(dueIsDelay(heldLimit), false, 'held for a slot, the reset time is still a point in time');
  // Out of the schedule, a usage limit's failure keeps its point in time; any other failure its delay.
  const limit = failed(STATES.running);
  limit.lastFailure = { ...limit.lastFailure!, code: 'usageLimitExceeded' };
  assert.equal(dueIsDelay(limit), false);
  // A rejected set of a usage limit's recovery backs off: its failure still names the limit, the due time is ours.
  const rejected = failed(STATES.backoff);
  rejected.lastFailure = { ...rejected.lastFailure!, code: 'usageLimitExceeded' };
  assert.equal(dueIsDelay(rejected), true);
  const recovered = failed(STATES.backoff);
  recovered.recovered = ['turn-1'];
  assert.equal(dueIsDelay(recovered), false, 'a recovered failure has nothing due');
  const undated = failed(STATES.backoff);
  undated.lastFailure = { ...undated.lastFailure!, dueAt: null };
  assert.equal(dueIsDelay(undated), false, 'no due time, nothing to move');
  const none = failed(STATES.backoff);
  none.lastFailure = null;
  assert.equal(dueIsDelay(none), false);
});
