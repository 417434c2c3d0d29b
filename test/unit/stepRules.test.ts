// The rules of a recovery's next step (src/core/stepRules.ts), row by row: a counted failure's
// end, budget hold or backoff and its due time; an outage's half-step try, its wait for the group's
// step, and the goals that follow the probe; the state a goal taken over is armed in; a usage
// limit's resume against the budget; a confirmation of a turn recovered already; the due times a
// lost intent, the provider's answer and a failed write-ahead leave. Each row is one case; a rule
// that drifts fails its row. (That transitions.ts carries them out: outageProbe.test.ts,
// crashConsistency.test.ts, recoveryBudget.test.ts and the engine's tests.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUDGET_WINDOW_MS } from '../../src/model/budget';
import { newWatch, type TurnFailure, type WatchedThread, type WatchState } from '../../src/model/watch';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import {
  alreadyRecovered,
  countedStep,
  dueByAt,
  dueNotBeforeAt,
  followerStep,
  halfStepWait,
  lostIntentDue,
  probeTryDue,
  takenOverState,
  usageResumeState,
} from '../../src/core/stepRules';

const NOW = 10_000_000;
const BASE = 1_000;
/** Three failures in a row at most, two automatic recoveries a day, steps of 1 s doubling to 8 s. */
const OPTIONS: EngineOptions = {
  ...DEFAULT_OPTIONS,
  baseDelayMs: BASE,
  maxDelayMs: 8 * BASE,
  maxAttempts: 3,
  recoveryBudget: 2,
};

/** A failure of `turnId` recorded at NOW − 1 s, due at `dueAt`. */
function failure(turnId: string, dueAt: number | null): TurnFailure {
  return { turnId, message: 'm', code: 'internalServerError', httpStatus: 500, at: NOW - 1_000, dueAt };
}

interface Shape {
  failures?: number;
  /** When its automatic recoveries went out. */
  recoveries?: number[];
  /** Its failure (of turn-1 unless named), due at this time; null: no failure recorded. */
  due?: number | null;
  turn?: string;
  state?: WatchState;
  recovered?: string[];
}

/** A watch whose goal a failure of turn-1 stopped, backing off, due at NOW unless told otherwise. */
function watch(s: Shape = {}): WatchedThread {
  const w = newWatch('t', 1);
  w.failures = s.failures ?? 1;
  w.recoveries = s.recoveries ?? [];
  w.lastFailure = s.due === null ? null : failure(s.turn ?? 'turn-1', s.due ?? NOW);
  w.state = s.state ?? { kind: 'backoff', attempt: w.failures, failedTurnId: 'turn-1' };
  w.recovered = s.recovered ?? [];
  return w;
}

/** Two sets out within the day (the budget is two): spent until the older one leaves the window. */
const SPENT_RECOVERIES = [NOW - 5_000, NOW - 2_000];
const SPENT = { kind: 'budgetSpent', used: 2, limit: 2, until: NOW - 5_000 + BUDGET_WINDOW_MS } as const;

/** A random source that says how often it was asked. */
function draws(value: number): { random: () => number; count: () => number } {
  let n = 0;
  return {
    random: () => {
      n += 1;
      return value;
    },
    count: () => n,
  };
}

describe('a counted failure: the end, a hold by the budget, or a backoff', () => {
  // failures (counted already), recoveries, random → step; draws: how often the jitter was drawn.
  const rows: [string, Shape, number, ReturnType<typeof countedStep>, number][] = [
    ['the first failure, random 0: half of one base', { failures: 1 }, 0, { act: 'backoff', dueAt: NOW + 500 }, 1],
    ['the first failure, random 1: one whole base', { failures: 1 }, 1, { act: 'backoff', dueAt: NOW + 1_000 }, 1],
    [
      'the second failure, random ½: three quarters of two',
      { failures: 2 },
      0.5,
      { act: 'backoff', dueAt: NOW + 1_500 },
      1,
    ],
    [
      'the third (maxAttempts): still a backoff, four bases',
      { failures: 3 },
      1,
      { act: 'backoff', dueAt: NOW + 4_000 },
      1,
    ],
    [
      'one recovery in the day, within a budget of two',
      { recoveries: [NOW - 1] },
      1,
      { act: 'backoff', dueAt: NOW + 1_000 },
      1,
    ],
    [
      'two sets, one out of the window: within the budget',
      { recoveries: [NOW - BUDGET_WINDOW_MS, NOW - 1] },
      1,
      { act: 'backoff', dueAt: NOW + 1_000 },
      1,
    ],
    [
      'the budget spent: held, due now, no jitter drawn',
      { recoveries: SPENT_RECOVERIES },
      1,
      { act: 'hold', spent: SPENT, dueAt: NOW },
      0,
    ],
    ['past maxAttempts: the end, no jitter drawn', { failures: 4 }, 1, { act: 'giveUp' }, 0],
    [
      'past maxAttempts with the budget spent: the end first',
      { failures: 4, recoveries: SPENT_RECOVERIES },
      1,
      { act: 'giveUp' },
      0,
    ],
  ];
  for (const [name, shape, value, step, drawn] of rows)
    it(name, () => {
      const r = draws(value);
      assert.deepEqual(countedStep(watch(shape), OPTIONS, NOW, r.random), step);
      assert.equal(r.count(), drawn);
    });

  it('the cap holds the step: the fifth failure of a longer run waits 8 s at most', () => {
    const options = { ...OPTIONS, maxAttempts: 10 };
    assert.deepEqual(
      countedStep(watch({ failures: 5 }), options, NOW, () => 1),
      { act: 'backoff', dueAt: NOW + 8_000 },
    );
  });
});

describe("an outage's half-step try", () => {
  // stepDueAt, goals that follow → the probe's own try (null: it takes the step with them).
  const rows: [string, number, number, number | null][] = [
    ['one follows, the step 4 s away: half-way, alone', NOW + 4_000, 1, NOW + 2_000],
    ['three follow, the step 2 s (two bases) away: half-way', NOW + 2_000, 3, NOW + 1_000],
    ['the step under two bases away: no half-step', NOW + 1_999, 1, null],
    ['none follows: the probe keeps its step', NOW + 4_000, 0, null],
  ];
  for (const [name, stepDueAt, following, due] of rows)
    it(name, () => assert.equal(probeTryDue(NOW, stepDueAt, following, OPTIONS), due));

  // The try failed again (not counted): due with its group's step, held there when the budget is spent.
  const STEP = NOW + 4_000;
  const waits: [string, Shape, string, ReturnType<typeof halfStepWait>][] = [
    ['its failure recorded, within the budget: backs off to the step', {}, 'turn-1', { act: 'backoff', dueAt: STEP }],
    [
      'past maxAttempts all the same: a try is never the end',
      { failures: 9 },
      'turn-1',
      { act: 'backoff', dueAt: STEP },
    ],
    [
      'the budget spent: held, due at the step',
      { recoveries: SPENT_RECOVERIES },
      'turn-1',
      { act: 'hold', spent: SPENT, dueAt: STEP },
    ],
    ['another failure recorded since: nothing', { turn: 'turn-2' }, 'turn-1', null],
    ['no failure recorded: nothing', { due: null }, 'turn-1', null],
  ];
  for (const [name, shape, failedTurnId, step] of waits)
    it(`a failed try: ${name}`, () =>
      assert.deepEqual(halfStepWait(watch(shape), failedTurnId, STEP, OPTIONS, NOW), step));
});

describe("the goals that follow their outage's probe, failed again", () => {
  // follower, the probe's failure due at → step, with the follower's count one on.
  const rows: [string, Shape, number | null | 'none', ReturnType<typeof followerStep>][] = [
    [
      'due sooner than the probe: with the probe',
      { due: NOW + 500 },
      NOW + 4_000,
      { act: 'backoff', dueAt: NOW + 4_000, failures: 2 },
    ],
    [
      'due later than the probe: its own time',
      { due: NOW + 9_000 },
      NOW + 4_000,
      { act: 'backoff', dueAt: NOW + 9_000, failures: 2 },
    ],
    ['the probe with no due time: from now', { due: NOW - 100 }, null, { act: 'backoff', dueAt: NOW, failures: 2 }],
    [
      'the probe with no failure recorded: from now',
      { due: NOW - 100 },
      'none',
      { act: 'backoff', dueAt: NOW, failures: 2 },
    ],
    [
      'its budget spent: not asked, its own sets never went out',
      { recoveries: SPENT_RECOVERIES },
      NOW + 4_000,
      { act: 'backoff', dueAt: NOW + 4_000, failures: 2 },
    ],
    [
      'at maxAttempts after this step: still tried',
      { failures: 2 },
      NOW + 4_000,
      { act: 'backoff', dueAt: NOW + 4_000, failures: 3 },
    ],
    [
      'past maxAttempts after this step: the end, with the probe',
      { failures: 3 },
      NOW + 4_000,
      { act: 'giveUp', failures: 4 },
    ],
  ];
  for (const [name, shape, probeDue, step] of rows)
    it(name, () => {
      const probe = watch({ due: probeDue === 'none' ? null : probeDue, turn: 'turn-p' });
      assert.deepEqual(followerStep(watch(shape), probe, OPTIONS, NOW), step);
    });
});

describe('the state a goal is armed in, and a usage limit resumed against the budget', () => {
  it('a goal of another app taken over: its failure due again as attempt 1, or its usage limit', () => {
    assert.deepEqual(takenOverState('blocked', 'turn-7'), { kind: 'backoff', attempt: 1, failedTurnId: 'turn-7' });
    assert.deepEqual(takenOverState('usageLimited', 'turn-7'), { kind: 'usageLimited', resetsAt: null });
  });

  // recoveries, resetsAt → the state.
  const rows: [string, Shape, number | null, ReturnType<typeof usageResumeState>][] = [
    [
      'within the budget: limited until its reset',
      {},
      NOW + 3_600_000,
      { kind: 'usageLimited', resetsAt: NOW + 3_600_000 },
    ],
    ['within the budget, no reset known', { recoveries: [NOW - 1] }, null, { kind: 'usageLimited', resetsAt: null }],
    ['the budget spent: held', { recoveries: SPENT_RECOVERIES }, NOW + 3_600_000, SPENT],
  ];
  for (const [name, shape, resetsAt, state] of rows)
    it(`a usage limit planned: ${name}`, () =>
      assert.deepEqual(usageResumeState(watch(shape), resetsAt, OPTIONS, NOW), state));
});

describe('a confirmation, and the due times written as they are', () => {
  const recovered: [string, string[], string, boolean][] = [
    ['its turn recovered already: said once', ['turn-0', 'turn-1'], 'turn-1', true],
    ['another turn recovered: this one is new', ['turn-0'], 'turn-1', false],
    ['nothing recovered yet', [], 'turn-1', false],
  ];
  for (const [name, list, turn, already] of recovered)
    it(`confirmed: ${name}`, () => assert.equal(alreadyRecovered(watch({ recovered: list }), turn), already));

  // A lost intent of turn-1: failure (turn, due) → due again (null: nothing to move).
  const lost: [string, TurnFailure | null, number | null][] = [
    ['due later: never early', failure('turn-1', NOW + 5_000), NOW + 5_000],
    ['due already: at once', failure('turn-1', NOW - 5_000), NOW],
    ['no due time kept: at once', failure('turn-1', null), NOW],
    ['another failure recorded since: nothing', failure('turn-2', NOW + 5_000), null],
    ['no failure: nothing', null, null],
  ];
  for (const [name, f, due] of lost)
    it(`an intent lost: ${name}`, () => assert.equal(lostIntentDue(f, 'turn-1', NOW), due));

  const by: [string, number | null, number][] = [
    ['due later: brought to the time', NOW + 5_000, NOW],
    ['due sooner: kept', NOW - 10, NOW - 10],
    ['no due time: the time', null, NOW],
  ];
  for (const [name, dueAt, due] of by)
    it(`due by a time: ${name}`, () => assert.equal(dueByAt(failure('turn-1', dueAt), NOW), due));

  // A write-ahead of turn-1 failed: not before NOW + 3 s (null: nothing to move).
  const AT = NOW + 3_000;
  const backoff: WatchState = { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' };
  const notBefore: [string, Shape, number | null][] = [
    ['due sooner: moved to the time', { due: NOW }, AT],
    ['due later: kept', { due: NOW + 9_000 }, NOW + 9_000],
    ['held for a slot, still scheduled: moved', { state: { kind: 'waitingSlot', slotAt: NOW, held: backoff } }, AT],
    ['not scheduled (running): nothing', { state: { kind: 'running' } }, null],
    ['another failure recorded since: nothing', { turn: 'turn-2' }, null],
    ['no failure recorded: nothing', { due: null }, null],
  ];
  for (const [name, shape, due] of notBefore)
    it(`due not before a time: ${name}`, () => assert.equal(dueNotBeforeAt(watch(shape), 'turn-1', AT), due));

  it('due not before a time: a failure without a due time is not moved', () => {
    const w = watch();
    w.lastFailure = failure('turn-1', null);
    assert.equal(dueNotBeforeAt(w, 'turn-1', AT), null);
  });
});
