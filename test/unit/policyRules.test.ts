// The decision table's rules beyond its one-row verdicts (src/core/policy.ts): what a settled
// state says to a person, the give-up boundary, which usage limit is which, what a pending intent
// turned out to be, what an unload leaves alone, when a usage limit resumes, what a person's goal
// marker does, which turn ends a run of failures.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { describeErrorCode, GOAL_STATUSES, newWatch, type WatchState } from '../../src/model/watch';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import {
  adopts,
  decide,
  endsFailureRun,
  keepsOnUnload,
  markerMove,
  pendingOutcome,
  retryNowState,
  setTookEffect,
} from '../../src/core/policy';
import { usageDue } from '../../src/core/stepRules';
import { EVERY_STATE } from '../support/watchSamples';
import { counted, facts, failed, NOW, type Situation, turn } from '../support/policyFacts';

const MAX = DEFAULT_OPTIONS.maxAttempts;

/** The state a verdict settles into (the verdict must settle). */
function settled(row: Situation): WatchState {
  const v = decide(facts(row));
  assert.equal(v.act, 'settle', JSON.stringify(v));
  return v.act === 'settle' ? v.state : { kind: 'running' };
}

describe('giving up: one failure past maxAttempts, not at it', () => {
  test('a counted failure at maxAttempts, due again → backed off: its last recovery still goes out', () => {
    const state = settled({
      watch: { ...counted('t1'), failures: MAX, state: { kind: 'unloaded' } },
      live: { turn: failed('t1') },
    });
    assert.deepEqual(state, { kind: 'backoff', attempt: MAX, failedTurnId: 't1' });
  });

  test('one past maxAttempts → given up on that turn, saying how many recoveries failed', () => {
    const v = decide(
      facts({
        watch: { ...counted('t1'), failures: MAX + 1, state: { kind: 'unloaded' } },
        live: { turn: failed('t1') },
      }),
    );
    assert.deepEqual(v, { act: 'giveUp', failedTurnId: 't1', why: `${MAX} recoveries failed again` });
  });
});

describe('what a settled state says to a person', () => {
  test('a goal never adopted, disarmed: its Re-arm is a first arming; an armed one’s is not', () => {
    assert.deepEqual(settled({ watch: { state: { kind: 'notAdopted', status: 'blocked' } }, disarmedAt: NOW - 5 }), {
      kind: 'disarmed',
      at: NOW - 5,
      neverArmed: true,
    });
    assert.deepEqual(settled({ watch: { state: { kind: 'idle' } }, disarmedAt: NOW - 5 }), {
      kind: 'disarmed',
      at: NOW - 5,
    });
  });

  test('a failure older than the arming: its code and message, and why it is never recovered', () => {
    const v = decide(facts({ watch: { beforeArming: 't1' }, live: { turn: failed('t1') } }));
    assert.ok(v.act === 'settle');
    assert.deepEqual(v.state, { kind: 'failedBeforeArming', code: 'internalServerError', message: 'boom' });
    assert.match(v.why, /^.+ before the goal was armed: older than the arming, never recovered$/);
    assert.ok(v.why.startsWith(describeErrorCode('internalServerError')), v.why);
  });

  test('a failure older than the arming that says nothing: "turn failed"; a usage limit: "usage limit reached"', () => {
    const bare = { id: 't1', status: 'failed', error: null };
    assert.deepEqual(settled({ watch: { beforeArming: 't1' }, live: { turn: bare } }), {
      kind: 'failedBeforeArming',
      code: 'unknown',
      message: 'turn failed',
    });
    assert.deepEqual(settled({ goal: 'usageLimited', watch: { beforeArming: 't1' }, live: { turn: bare } }), {
      kind: 'failedBeforeArming',
      code: 'usageLimitExceeded',
      message: 'usage limit reached',
    });
    // No turn known: the limit is the goal's update (updatedAt 1 here).
    assert.deepEqual(settled({ goal: 'usageLimited', watch: { beforeArming: 'usage@1' }, live: { turn: null } }), {
      kind: 'failedBeforeArming',
      code: 'usageLimitExceeded',
      message: 'usage limit reached',
    });
  });

  test('a failed turn with no error → a person’s call, said as "turn failed"', () => {
    const state = settled({ live: { turn: { id: 't1', status: 'failed', error: null } } });
    assert.deepEqual(state, { kind: 'needsAttention', code: 'unknown', message: 'turn failed' });
  });

  test('blocked again on a turn recovered once: never twice, and the message says so', () => {
    assert.deepEqual(settled({ watch: { recovered: ['t1'] }, live: { turn: failed('t1') } }), {
      kind: 'needsAttention',
      code: 'recoveredOnce',
      message: 'this failed turn was recovered already; it is never recovered twice',
    });
  });

  test('a usage limit with automatic resume off: a person’s call, saying the resume is off', () => {
    assert.deepEqual(settled({ goal: 'usageLimited', options: { recoverUsageLimited: false } }), {
      kind: 'needsAttention',
      code: 'usageLimitExceeded',
      message: 'usage limit reached (automatic resume is off)',
    });
  });
});

describe('a new failure, counted', () => {
  test('keeps what failed; it is not a "failed again" when nothing was recovered before it', () => {
    const first = decide(facts({ live: { turn: failed('t1', 'internalServerError', 'upstream 500') } }));
    assert.ok(first.act === 'count');
    assert.equal(first.failure.message, 'upstream 500');
    assert.equal(first.failedAgain, false, 'the first failure');
    const unrecovered = decide(facts({ watch: counted('t0'), live: { turn: failed('t1') } }));
    assert.ok(unrecovered.act === 'count');
    assert.equal(unrecovered.failedAgain, false, 'after a failure never recovered');
  });

  test('an outage’s half-step try is said to be one; an ordinary failure names its code and turn', () => {
    const half = {
      failures: MAX,
      lastFailure: { ...counted('t0').lastFailure, stepDueAt: NOW + 60_000 },
      recovered: ['t0'],
    };
    const v = decide(facts({ watch: half, live: { turn: failed('t1') } }));
    assert.equal(v.why, 'internalServerError on turn t1, a half-step try of its outage');
    assert.equal(decide(facts({ live: { turn: failed('t1') } })).why, 'internalServerError on turn t1');
  });
});

describe('which usage limit is which', () => {
  test('a new usage limit with no turn known is keyed by the goal’s update, and read when it resets', () => {
    assert.deepEqual(decide(facts({ goal: 'usageLimited', live: { turn: null } })), {
      act: 'readReset',
      key: 'usage@1',
      why: 'a new usage limit',
    });
  });

  test('a new usage limit on a turn is keyed by that turn', () => {
    const v = decide(facts({ goal: 'usageLimited', live: { turn: turn('t1', 'failed') } }));
    assert.deepEqual(v, { act: 'readReset', key: 't1', why: 'a new usage limit' });
  });
});

describe('the other rows', () => {
  const pending = { pending: { failedTurnId: 't1', attempt: 1, sentAt: NOW - 10 } };
  const refused = { pending: { ...pending.pending, rejected: 'thread/goal/set failed (-32600): no' } };
  const cases: [string, Situation, ReturnType<typeof pendingOutcome>][] = [
    ['an intent, the newest turn not known yet → undecided', { watch: pending, live: { turn: null } }, 'undecided'],
    ['an intent, the goal active → recovered (TestLostSetReply)', { goal: 'active', watch: pending }, 'recovered'],
    [
      'an intent, a newer turn → recovered (TestRestartPending)',
      { watch: pending, live: { turn: failed('t2') } },
      'recovered',
    ],
    [
      'an intent, still blocked on its turn → lost, due again',
      { watch: pending, live: { turn: failed('t1') } },
      'lost',
    ],
    [
      'an intent, the goal paused since → moot',
      { goal: 'paused', watch: pending, live: { turn: failed('t1') } },
      'moot',
    ],
    ['no intent pending → moot: nothing to resolve', { live: { turn: failed('t1') } }, 'moot'],
    [
      'an intent, still usage-limited on its limit → lost, due again',
      { goal: 'usageLimited', watch: pending, live: { turn: failed('t1', 'usageLimitExceeded') } },
      'lost',
    ],
    ['an intent, the goal cleared since → moot', { goal: null, watch: pending, live: { turn: failed('t1') } }, 'moot'],
    [
      'a refused intent, still blocked on its turn → rejected: a failed try (TestResetSetError)',
      { watch: refused, live: { turn: failed('t1') } },
      'rejected',
    ],
    [
      'a refused intent, still usage-limited → rejected',
      { goal: 'usageLimited', watch: refused, live: { turn: failed('t1', 'usageLimitExceeded') } },
      'rejected',
    ],
    ['a refused intent, the goal active since → recovered', { goal: 'active', watch: refused }, 'recovered'],
    [
      'a refused intent, the goal paused since → moot',
      { goal: 'paused', watch: refused, live: { turn: failed('t1') } },
      'moot',
    ],
    [
      'an intent, the goal cleared and the newest turn not known yet → undecided',
      { goal: null, watch: pending, live: { turn: null } },
      'undecided',
    ],
  ];
  for (const [name, row, outcome] of cases) {
    test(name, () => {
      const f = facts(row);
      assert.equal(pendingOutcome(f.w, f.live), outcome);
    });
  }

  test('a set took effect when the goal reads active, or a newer turn than the failed one exists; never by its reply alone', () => {
    assert.equal(setTookEffect('active', null, 't1'), true, 'the goal active, no turn known');
    assert.equal(setTookEffect('active', failed('t1'), 't1'), true, 'the goal active on the failed turn');
    assert.equal(setTookEffect('blocked', turn('t2', 'inProgress'), 't1'), true, 'a newer turn');
    assert.equal(setTookEffect(undefined, turn('t2', 'completed'), 't1'), true, 'a newer turn, the goal not read');
    assert.equal(setTookEffect('blocked', failed('t1'), 't1'), false, 'still blocked on the failed turn');
    assert.equal(setTookEffect('usageLimited', failed('t1'), 't1'), false);
    assert.equal(setTookEffect(undefined, null, 't1'), false, 'nothing read: nothing proves it');
    assert.equal(setTookEffect('paused', null, 't1'), false);
  });

  test('adoption: only a goal seen active, and only with autoArm on (TestOldBlocked)', () => {
    assert.equal(adopts('active', DEFAULT_OPTIONS), true);
    assert.equal(adopts('blocked', DEFAULT_OPTIONS), false);
    assert.equal(adopts('active', { ...DEFAULT_OPTIONS, autoArm: false }), false);
  });

  test('an unload leaves alone what waits for nothing, and shows what waited for the thread', () => {
    const waitsForNothing: WatchState[] = [
      { kind: 'userIntent', requested: 'paused', at: 1 }, // a person's word
      { kind: 'disarmed', at: 1 },
      { kind: 'complete' },
      { kind: 'budgetLimited' },
      { kind: 'modelBlocked' },
      { kind: 'notAdopted', status: 'blocked' },
      { kind: 'failedBeforeArming', code: 'internalServerError', message: 'boom' },
      { kind: 'gaveUp', attempts: 6 }, // a person acts next
      { kind: 'budgetSpent', used: 12, limit: 12, until: 1 },
      { kind: 'needsAttention', code: 'contextWindowExceeded', message: 'm' },
      { kind: 'unloaded' }, // already so
      { kind: 'elsewhere', since: 1, goal: 'blocked', seenActive: false, retryable: false },
    ];
    for (const state of waitsForNothing) assert.equal(keepsOnUnload(state), true, state.kind);
    const waitedForTheThread: WatchState[] = [
      { kind: 'backoff', attempt: 1, failedTurnId: 't' },
      { kind: 'running' },
      { kind: 'turnEnding' },
      { kind: 'usageLimited', resetsAt: null },
    ];
    for (const state of waitedForTheThread) assert.equal(keepsOnUnload(state), false, state.kind);
  });

  test('a usage limit resumes at its reset plus the margin; with none known, after the backoff cap', () => {
    assert.equal(usageDue(NOW, NOW + 60_000, DEFAULT_OPTIONS), NOW + 60_000 + DEFAULT_OPTIONS.usageMarginMs);
    assert.equal(usageDue(NOW, null, DEFAULT_OPTIONS), NOW + DEFAULT_OPTIONS.maxDelayMs);
    assert.equal(usageDue(NOW, NOW - 1, DEFAULT_OPTIONS), NOW + DEFAULT_OPTIONS.maxDelayMs);
  });

  test('a reset at this very instant is not a future one: resumed after the backoff cap; one ms later, at it', () => {
    assert.equal(usageDue(NOW, NOW, DEFAULT_OPTIONS), NOW + DEFAULT_OPTIONS.maxDelayMs);
    assert.equal(usageDue(NOW, NOW + 1, DEFAULT_OPTIONS), NOW + 1 + DEFAULT_OPTIONS.usageMarginMs);
  });
});

describe("a person's goal marker, newer than the arming (TestPauseDuringRead)", () => {
  const states = Object.values(EVERY_STATE);
  test('any status but active disarms the thread, unless its marker already says that very status', () => {
    for (const status of GOAL_STATUSES.filter((g) => g !== 'active'))
      for (const state of states) {
        const same = state.kind === 'userIntent' && state.requested === status;
        assert.equal(markerMove(state, status), same ? 'none' : 'disarm', `${status} on ${state.kind}`);
      }
    assert.equal(markerMove({ kind: 'userIntent', requested: 'paused', at: 1 }, 'complete'), 'disarm');
    assert.equal(markerMove({ kind: 'userIntent', requested: 'paused', at: 1 }, 'paused'), 'none');
  });

  test('active re-arms what a marker disarmed, starts a spent budget afresh, and changes nothing else', () => {
    for (const state of states) {
      const expected = state.kind === 'userIntent' ? 'rearm' : state.kind === 'budgetSpent' ? 'afresh' : 'none';
      assert.equal(markerMove(state, 'active'), expected, state.kind);
    }
  });
});

test('only a completed turn ends the run of consecutive failures', () => {
  assert.equal(endsFailureRun('completed'), true);
  for (const status of ['failed', 'interrupted', 'inProgress']) assert.equal(endsFailureRun(status), false, status);
});

describe("a person's Retry now (TestRetryNow): the state it makes due", () => {
  const failure = {
    turnId: 'turn-7',
    message: 'boom',
    code: 'internalServerError',
    httpStatus: 500,
    at: NOW,
    dueAt: null,
  };
  const watch = (state: WatchState, failures: number, withFailure: boolean, goal: 'blocked' | 'usageLimited') => {
    const w = newWatch('thread-1', NOW);
    w.state = state;
    w.failures = failures;
    w.lastFailure = withFailure ? { ...failure } : null;
    w.goal = { status: goal, objective: 'ship it', tokensUsed: 0, tokenBudget: null, updatedAt: NOW };
    return w;
  };

  test('a scheduled recovery stays as it is, no longer held for a slot or a probe', () => {
    const { backoff, usageLimited, waitingSlot, waitingProbe } = EVERY_STATE;
    for (const state of [backoff, usageLimited, waitingSlot, waitingProbe])
      for (const withFailure of [true, false])
        assert.deepEqual(
          retryNowState(watch(state, 2, withFailure, 'blocked')),
          'held' in state ? state.held : state,
          state.kind,
        );
  });

  test('given up: the backoff of its last failure, at its count', () => {
    assert.deepEqual(retryNowState(watch(EVERY_STATE.gaveUp, 7, true, 'blocked')), {
      kind: 'backoff',
      attempt: 7,
      failedTurnId: 'turn-7',
    });
  });

  test('held by the budget: its usage limit (its reset unknown now), or its backoff, counted from one at least', () => {
    const spent = EVERY_STATE.budgetSpent;
    assert.deepEqual(retryNowState(watch(spent, 3, true, 'usageLimited')), { kind: 'usageLimited', resetsAt: null });
    assert.deepEqual(retryNowState(watch(spent, 3, true, 'blocked')), {
      kind: 'backoff',
      attempt: 3,
      failedTurnId: 'turn-7',
    });
    assert.deepEqual(retryNowState(watch(spent, 0, true, 'blocked')), {
      kind: 'backoff',
      attempt: 1,
      failedTurnId: 'turn-7',
    });
    const unread = watch(spent, 2, true, 'blocked');
    unread.goal = null; // not read since a restart: a usage limit only when the goal says so
    assert.deepEqual(retryNowState(unread), { kind: 'backoff', attempt: 2, failedTurnId: 'turn-7' });
  });

  test('nothing to make due: no failure to retry, or a state that schedules nothing', () => {
    for (const state of [EVERY_STATE.gaveUp, EVERY_STATE.budgetSpent])
      assert.equal(retryNowState(watch(state, 3, false, 'blocked')), null, `${state.kind} without a failure`);
    const schedules = new Set(['backoff', 'usageLimited', 'waitingSlot', 'waitingProbe', 'gaveUp', 'budgetSpent']);
    for (const state of Object.values(EVERY_STATE).filter((s) => !schedules.has(s.kind)))
      for (const goal of ['blocked', 'usageLimited'] as const)
        assert.equal(retryNowState(watch(state, 3, true, goal)), null, `${state.kind}, goal ${goal}`);
  });
});
