// The decision table (src/core/policy.ts), one row per case, read like the state table of
// docs/architecture.md: given what is known of a watch, the verdict. Pure: no daemon, no clock,
// the shipped options (DEFAULT_OPTIONS) unless a row says otherwise.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import { type LiveThread, newLive } from '../../src/core/live';
import {
  adopts,
  decide,
  type Facts,
  keepsOnUnload,
  overBudget,
  pendingOutcome,
  usageDue,
  type Verdict,
  veto,
} from '../../src/core/policy';
import { newWatch, type GoalStatus, type WatchedThread } from '../../src/model/watch';
import { dueAt } from '../../src/model/queries';
import type { Turn } from '../../src/protocol/daemon';

const NOW = 1_800_000_000_000;
const T = 'thread-1';

const failed = (id: string, codexErrorInfo: unknown = 'internalServerError', message = 'boom'): Turn => ({
  id,
  status: 'failed',
  error: { message, codexErrorInfo, additionalDetails: null } as Turn['error'],
});
const turn = (id: string, status: string): Turn => ({ id, status, error: null });

interface Row {
  name: string;
  goal?: GoalStatus | null;
  watch?: Partial<WatchedThread>;
  live?: Partial<LiveThread>;
  disarmedAt?: number;
  options?: Partial<EngineOptions>;
  /** The verdict's act and, where it settles, the state's kind. */
  expect: {
    act: Verdict['act'];
    kind?: string;
    scheduled?: string;
    giveUp?: boolean;
    attention?: boolean;
    /** A count's `halfStep`: the group's step it waits for, or null. */
    halfStep?: number | null;
  };
}

function facts(row: Omit<Row, 'name' | 'expect'>): Facts {
  const w = newWatch(T, NOW - 60_000);
  w.goal =
    row.goal === null
      ? null
      : { status: row.goal ?? 'blocked', objective: 'o', tokensUsed: 0, tokenBudget: null, updatedAt: 1 };
  Object.assign(w, row.watch);
  const live = { ...newLive(), status: { type: 'idle' } as LiveThread['status'], ...row.live };
  return { w, live, disarmedAt: row.disarmedAt, options: { ...DEFAULT_OPTIONS, ...row.options }, now: NOW };
}

const counted = (turnId: string, dueAt = NOW + 5_000) => ({
  failures: 1,
  lastFailure: { turnId, message: 'boom', code: 'internalServerError', httpStatus: null, at: NOW - 1, dueAt },
});

/** The shipped budget's worth of automatic recoveries, one a minute up to `last`. */
const spentBudget = (last = NOW - 60_000): number[] =>
  Array.from({ length: DEFAULT_OPTIONS.recoveryBudget }, (_, i) => last - i * 60_000).reverse();

const ROWS: Row[] = [
  // The user's own word.
  { name: 'disarmed by the user → disarmed', disarmedAt: NOW - 5, expect: { act: 'settle', kind: 'disarmed' } },
  {
    name: 'disarmed, already shown so → kept',
    disarmedAt: NOW - 5,
    watch: { state: { kind: 'disarmed', at: NOW - 5 } },
    expect: { act: 'keep' },
  },
  {
    name: "a person's marker in the rollout (userIntent) → kept (TestPauseDuringRead)",
    watch: { state: { kind: 'userIntent', requested: 'paused', at: NOW - 5 } },
    live: { turn: failed('t1') },
    expect: { act: 'keep' },
  },
  { name: 'goal cleared → kept (the look removes the watch)', goal: null, expect: { act: 'keep' } },
  // The goal's own status.
  {
    name: 'active, a turn running → running (TestLiveActivity)',
    goal: 'active',
    live: { status: { type: 'active', activeFlags: [] } },
    expect: { act: 'settle', kind: 'running' },
  },
  { name: 'active, thread idle → idle', goal: 'active', expect: { act: 'settle', kind: 'idle' } },
  {
    name: 'active, an approval pending → waitingApproval',
    goal: 'active',
    live: { approvals: new Set(['r1']) },
    expect: { act: 'settle', kind: 'waitingApproval' },
  },
  {
    name: 'paused (no marker says who) → paused, left alone',
    goal: 'paused',
    expect: { act: 'settle', kind: 'paused' },
  },
  { name: 'complete → complete', goal: 'complete', expect: { act: 'settle', kind: 'complete' } },
  { name: 'budgetLimited → budgetLimited', goal: 'budgetLimited', expect: { act: 'settle', kind: 'budgetLimited' } },
  // Blocked: whose move is it?
  {
    name: 'blocked, its turn still running → running',
    live: { status: { type: 'active', activeFlags: [] }, turn: turn('t1', 'inProgress') },
    expect: { act: 'settle', kind: 'running' },
  },
  {
    name: 'blocked, an approval pending on a thread no longer active → waitingApproval',
    live: { approvals: new Set(['r1']), turn: failed('t1') },
    expect: { act: 'settle', kind: 'waitingApproval' },
  },
  {
    name: 'blocked, Codex retrying the turn itself → codexRetrying (TestNoCompetingRetry)',
    live: { retrying: 'reconnecting 1/5', turn: failed('t1') },
    expect: { act: 'settle', kind: 'codexRetrying' },
  },
  {
    name: 'blocked by the model (update_goal), even if its turn then failed → modelBlocked',
    watch: { modelBlockOffset: 120 },
    live: { turn: failed('t1') },
    expect: { act: 'settle', kind: 'modelBlocked' },
  },
  {
    name: 'blocked, the newest turn has not ended → turnEnding (Codex blocks the goal first)',
    live: { turn: turn('t1', 'inProgress') },
    expect: { act: 'settle', kind: 'turnEnding' },
  },
  {
    name: 'blocked, no turn known yet → turnEnding',
    live: { turn: null },
    expect: { act: 'settle', kind: 'turnEnding' },
  },
  {
    name: 'blocked while its turn completed → modelBlocked',
    live: { turn: turn('t1', 'completed') },
    expect: { act: 'settle', kind: 'modelBlocked' },
  },
  {
    name: 'blocked, the turn interrupted → interrupted',
    live: { turn: turn('t1', 'interrupted') },
    expect: { act: 'settle', kind: 'interrupted' },
  },
  // Blocked by a failed turn.
  {
    name: 'blocked again on a failed turn recovered once already → needsAttention, never twice (TestRecovery)',
    watch: { recovered: ['t1'] },
    live: { turn: failed('t1') },
    expect: { act: 'settle', kind: 'needsAttention', attention: true },
  },
  {
    name: 'a permanent failure (context window) → needsAttention, said once',
    live: { turn: failed('t1', 'contextWindowExceeded') },
    expect: { act: 'settle', kind: 'needsAttention', attention: true },
  },
  {
    name: 'a permanent failure already shown → needsAttention, not said again',
    watch: { state: { kind: 'needsAttention', code: 'contextWindowExceeded', message: 'm' } },
    live: { turn: failed('t1', 'contextWindowExceeded') },
    expect: { act: 'settle', kind: 'needsAttention', attention: false },
  },
  {
    name: 'a plain HTTP 400 ("other", no transient words) → needsAttention',
    live: { turn: failed('t1', 'other', 'invalid request') },
    expect: { act: 'settle', kind: 'needsAttention', attention: true },
  },
  {
    name: 'a new transient failure (5xx) → counted, backed off',
    live: { turn: failed('t1') },
    expect: { act: 'count', giveUp: false },
  },
  {
    name: 'a dropped stream ("other", stream disconnected) → counted',
    live: { turn: failed('t1', 'other', 'stream disconnected before completion') },
    expect: { act: 'count', giveUp: false },
  },
  {
    name: 'a new transient failure past maxAttempts → counted, then given up',
    watch: { failures: DEFAULT_OPTIONS.maxAttempts },
    live: { turn: failed('t1') },
    expect: { act: 'count', giveUp: true },
  },
  {
    name: 'the failure of an outage’s half-step try → a try, not a step: due with its group, never given up here',
    watch: {
      failures: DEFAULT_OPTIONS.maxAttempts,
      lastFailure: { ...counted('t0').lastFailure, stepDueAt: NOW + 60_000 },
      recovered: ['t0'],
    },
    live: { turn: failed('t1') },
    expect: { act: 'count', giveUp: false, halfStep: NOW + 60_000 },
  },
  {
    name: 'a new failure after an ordinary recovery → counted (no half-step)',
    watch: { ...counted('t0'), recovered: ['t0'] },
    live: { turn: failed('t1') },
    expect: { act: 'count', giveUp: false, halfStep: null },
  },
  {
    name: 'a counted failure in backoff → kept, its recovery due',
    watch: { ...counted('t1'), state: { kind: 'backoff', attempt: 1, failedTurnId: 't1' } },
    live: { turn: failed('t1') },
    expect: { act: 'keep', scheduled: 't1' },
  },
  {
    name: 'a counted failure held for a recovery slot → kept, its recovery due',
    watch: {
      ...counted('t1'),
      state: {
        kind: 'waitingSlot',
        slotAt: NOW + 8_000,
        held: { kind: 'backoff', attempt: 1, failedTurnId: 't1' },
      },
    },
    live: { turn: failed('t1') },
    expect: { act: 'keep', scheduled: 't1' },
  },
  {
    name: 'a counted failure after a restart or an unload → backoff again, at its stored due time',
    watch: { ...counted('t1'), state: { kind: 'unloaded' } },
    live: { turn: failed('t1') },
    expect: { act: 'settle', kind: 'backoff' },
  },
  // The recovery budget (shipped: 12 automatic recoveries per goal in a rolling 24 h).
  {
    name: 'a counted failure due again, the budget spent in the last 24 h → budgetSpent, said once',
    watch: { ...counted('t1'), state: { kind: 'unloaded' }, recoveries: spentBudget() },
    live: { turn: failed('t1') },
    expect: { act: 'settle', kind: 'budgetSpent', attention: true },
  },
  {
    name: 'a counted failure due again, the budget spent more than 24 h ago (the window rolled) → backoff',
    watch: { ...counted('t1'), state: { kind: 'unloaded' }, recoveries: spentBudget(NOW - 24 * 3600_000) },
    live: { turn: failed('t1') },
    expect: { act: 'settle', kind: 'backoff' },
  },
  {
    name: 'budgetSpent already → kept, never scheduled (a person acts next)',
    watch: { ...counted('t1'), state: { kind: 'budgetSpent', used: 12, limit: 12, until: NOW }, recoveries: [] },
    live: { turn: failed('t1') },
    expect: { act: 'keep' },
  },
  {
    name: "budgetSpent, the newest turn not known yet (a restart's first look) → kept, not said again",
    watch: { ...counted('t1'), state: { kind: 'budgetSpent', used: 12, limit: 12, until: NOW }, recoveries: [] },
    live: { turn: null },
    expect: { act: 'keep' },
  },
  {
    name: "a recovery scheduled past the budget (a person's Retry now) → kept, its recovery due",
    watch: { ...counted('t1'), state: { kind: 'backoff', attempt: 1, failedTurnId: 't1' }, recoveries: spentBudget() },
    live: { turn: failed('t1') },
    expect: { act: 'keep', scheduled: 't1' },
  },
  {
    name: 'a usage limit resumed later, the budget spent → budgetSpent, said once',
    goal: 'usageLimited',
    watch: { ...counted('t1'), state: { kind: 'unloaded' }, recoveries: spentBudget() },
    live: { turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'settle', kind: 'budgetSpent', attention: true },
  },
  {
    name: 'a usage limit whose budget is spent, shown → kept',
    goal: 'usageLimited',
    watch: { ...counted('t1'), state: { kind: 'budgetSpent', used: 12, limit: 12, until: NOW }, recoveries: [] },
    live: { turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'keep' },
  },
  {
    name: 'a counted failure past maxAttempts → gave up',
    watch: { ...counted('t1'), failures: DEFAULT_OPTIONS.maxAttempts + 1, state: { kind: 'running' } },
    live: { turn: failed('t1') },
    expect: { act: 'giveUp' },
  },
  {
    name: 'given up on this failure → kept',
    watch: { ...counted('t1'), state: { kind: 'gaveUp', attempts: 6 } },
    live: { turn: failed('t1') },
    expect: { act: 'keep' },
  },
  // Usage limits.
  {
    name: 'usage-limited with automatic resume off → needsAttention',
    goal: 'usageLimited',
    options: { recoverUsageLimited: false },
    expect: { act: 'settle', kind: 'needsAttention' },
  },
  {
    name: 'usage-limited while Codex still retries its turn → codexRetrying',
    goal: 'usageLimited',
    live: { retrying: 'usage limit', turn: turn('t1', 'inProgress') },
    expect: { act: 'settle', kind: 'codexRetrying' },
  },
  {
    name: 'a new usage limit → read when it resets',
    goal: 'usageLimited',
    live: { turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'readReset' },
  },
  {
    name: 'a new usage limit whose turn has not ended (Codex limits the goal first) → turnEnding: its end names the reset',
    goal: 'usageLimited',
    live: { turn: turn('t1', 'inProgress') },
    expect: { act: 'settle', kind: 'turnEnding' },
  },
  {
    name: 'a usage limit scheduled → kept, its resume due',
    goal: 'usageLimited',
    watch: { ...counted('t1'), state: { kind: 'usageLimited', resetsAt: null } },
    live: { turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'keep', scheduled: 't1' },
  },
  {
    name: 'a backoff after a rejected resume, the goal still usage-limited → usageLimited again (resumed at its time)',
    goal: 'usageLimited',
    watch: { ...counted('t1'), state: { kind: 'backoff', attempt: 2, failedTurnId: 't1' } },
    live: { turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'settle', kind: 'usageLimited' },
  },
  {
    name: 'a usage limit found to be one no reset clears (out of credits) → needsAttention, never a schedule',
    goal: 'usageLimited',
    watch: {
      lastFailure: {
        turnId: 't1',
        message: 'out of credits',
        code: 'creditsDepleted',
        httpStatus: 429,
        at: NOW,
        dueAt: null,
      },
      state: { kind: 'running' },
    },
    live: { turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'settle', kind: 'needsAttention' },
  },
  {
    name: 'usage-limited again on a limit resumed once already → needsAttention, never twice',
    goal: 'usageLimited',
    watch: { recovered: ['t1'] },
    live: { turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'settle', kind: 'needsAttention', attention: true },
  },
];

describe('the decision table', () => {
  for (const row of ROWS) {
    test(row.name, () => {
      const verdict = decide(facts(row));
      assert.equal(verdict.act, row.expect.act, `verdict: ${JSON.stringify(verdict)}`);
      if (row.expect.kind !== undefined) {
        assert.ok(verdict.act === 'settle');
        assert.equal(verdict.state.kind, row.expect.kind);
      }
      if (row.expect.scheduled !== undefined)
        assert.equal(verdict.act === 'keep' && verdict.scheduled, row.expect.scheduled);
      if (row.expect.giveUp !== undefined) assert.equal(verdict.act === 'count' && verdict.giveUp, row.expect.giveUp);
      if (row.expect.halfStep !== undefined)
        assert.equal(verdict.act === 'count' ? verdict.halfStep : undefined, row.expect.halfStep);
      if (row.expect.attention !== undefined)
        assert.equal(verdict.act === 'settle' && (verdict.attention ?? false), row.expect.attention);
      assert.ok(verdict.why.length > 0, 'every verdict says why');
    });
  }

  test('a counted failure keeps its stored due time, attempt and turn', () => {
    const f = facts({ watch: { ...counted('t1', NOW + 7_000), failures: 2 }, live: { turn: failed('t1') } });
    const v = decide(f);
    assert.ok(v.act === 'settle');
    assert.deepEqual(v.state, { kind: 'backoff', attempt: 2, failedTurnId: 't1' });
    assert.equal(dueAt({ state: v.state, lastFailure: f.w.lastFailure }), NOW + 7_000, "due at the failure's due time");
  });

  test('a new failure after a recovered one is marked failed-again, with what failed', () => {
    const watch = { ...counted('t0'), recovered: ['t0'] };
    const v = decide(facts({ watch, live: { turn: failed('t1', { httpConnectionFailed: { httpStatusCode: 503 } }) } }));
    assert.ok(v.act === 'count');
    assert.equal(v.failedAgain, true);
    assert.deepEqual(
      { turnId: v.failure.turnId, code: v.failure.code, httpStatus: v.failure.httpStatus, at: v.failure.at },
      { turnId: 't1', code: 'httpConnectionFailed', httpStatus: 503, at: NOW },
    );
  });
});

describe('the recovery budget (overBudget)', () => {
  test('spent at the budget: how many, of what, and when the oldest leaves the window', () => {
    const w = { ...newWatch(T, NOW), recoveries: spentBudget() };
    const first = w.recoveries[0];
    assert.deepEqual(overBudget(w, DEFAULT_OPTIONS, NOW), {
      kind: 'budgetSpent',
      used: 12,
      limit: 12,
      until: first + 24 * 3600_000,
    });
    assert.equal(overBudget({ ...w, recoveries: w.recoveries.slice(1) }, DEFAULT_OPTIONS, NOW), null, 'one short');
    assert.equal(overBudget(w, DEFAULT_OPTIONS, first + 24 * 3600_000), null, 'the oldest left the window');
  });

  test('the veto lets a recovery scheduled past the budget go out: the table keeps it', () => {
    const watch = {
      ...counted('t1'),
      state: { kind: 'backoff', attempt: 1, failedTurnId: 't1' },
      recoveries: spentBudget(),
    } as const;
    assert.equal(veto(facts({ watch, live: { turn: failed('t1') } }), 'blocked', 't1', false), null);
  });
});

describe('the veto: the same table on fresh reads', () => {
  const due = { ...counted('t1'), state: { kind: 'backoff', attempt: 1, failedTurnId: 't1' } } as const;
  const cases: [string, Omit<Row, 'name' | 'expect'>, boolean, string | null][] = [
    ['nothing changed → the set goes out', { watch: due, live: { turn: failed('t1') } }, false, null],
    ['Pause auto-recovery → called off', { watch: due, live: { turn: failed('t1') } }, true, 'auto-recovery is paused'],
    [
      'the daemon unloaded the thread → called off (a set there starts nothing: measured)',
      { watch: due, live: { turn: failed('t1'), status: { type: 'notLoaded' } } },
      false,
      'the thread is not loaded in the daemon',
    ],
    [
      'a person paused the goal while it was read → called off (TestPauseDuringRead)',
      { goal: 'paused', watch: due, live: { turn: failed('t1') } },
      false,
      'the goal is paused now',
    ],
    [
      'someone set it active → called off',
      { goal: 'active', watch: due, live: { turn: failed('t1') } },
      false,
      'the goal is active now',
    ],
    [
      "a person's marker read during the attempt → called off",
      { watch: { ...due, state: { kind: 'userIntent', requested: 'paused', at: NOW } }, live: { turn: failed('t1') } },
      false,
      'the user set the goal paused',
    ],
    [
      'disarmed meanwhile → called off',
      { watch: due, disarmedAt: NOW, live: { turn: failed('t1') } },
      false,
      'disarmed by the user',
    ],
    ['a newer failed turn → called off', { watch: due, live: { turn: failed('t2') } }, false, 'a newer turn exists'],
    [
      'a newer completed turn → called off',
      { watch: due, live: { turn: turn('t2', 'completed') } },
      false,
      'a newer turn exists',
    ],
    [
      'an approval came → called off',
      { watch: due, live: { turn: failed('t1'), approvals: new Set(['r']) } },
      false,
      'waiting for approval',
    ],
    [
      'a turn runs → called off',
      { watch: due, live: { turn: failed('t1'), status: { type: 'active', activeFlags: [] } } },
      false,
      'a turn is running',
    ],
    [
      'recovered meanwhile → called off',
      { watch: { ...due, recovered: ['t1'] }, live: { turn: failed('t1') } },
      false,
      'this failed turn was recovered already',
    ],
  ];
  for (const [name, row, paused, reason] of cases) {
    test(name, () => assert.equal(veto(facts(row), 'blocked', 't1', paused), reason));
  }

  test('a usage limit still scheduled → the resume goes out; past it, a newer turn calls it off', () => {
    const usage = { ...counted('t1'), state: { kind: 'usageLimited', resetsAt: null } } as const;
    assert.equal(
      veto(facts({ goal: 'usageLimited', watch: usage, live: { turn: failed('t1') } }), 'usageLimited', 't1', false),
      null,
    );
    assert.equal(
      veto(facts({ goal: 'usageLimited', watch: usage, live: { turn: failed('t2') } }), 'usageLimited', 't1', false),
      'a newer turn exists',
    );
  });
});

describe('the other rows', () => {
  const pending = { pending: { failedTurnId: 't1', attempt: 1, sentAt: NOW - 10 } };
  const cases: [string, Omit<Row, 'name' | 'expect'>, ReturnType<typeof pendingOutcome>][] = [
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
  ];
  for (const [name, row, outcome] of cases) {
    test(name, () => {
      const f = facts(row);
      assert.equal(pendingOutcome(f.w, f.live), outcome);
    });
  }

  test('adoption: only a goal seen active, and only with autoArm on (TestOldBlocked)', () => {
    assert.equal(adopts('active', DEFAULT_OPTIONS), true);
    assert.equal(adopts('blocked', DEFAULT_OPTIONS), false);
    assert.equal(adopts('active', { ...DEFAULT_OPTIONS, autoArm: false }), false);
  });

  test('an unload leaves alone what waits for nothing, and shows what waited for the thread', () => {
    assert.equal(keepsOnUnload({ kind: 'gaveUp', attempts: 6 }), true);
    assert.equal(keepsOnUnload({ kind: 'budgetSpent', used: 12, limit: 12, until: 1 }), true);
    assert.equal(keepsOnUnload({ kind: 'disarmed', at: 1 }), true);
    assert.equal(keepsOnUnload({ kind: 'backoff', attempt: 1, failedTurnId: 't' }), false);
    assert.equal(keepsOnUnload({ kind: 'running' }), false);
  });

  test('a usage limit resumes at its reset plus the margin; with none known, after the backoff cap', () => {
    assert.equal(usageDue(NOW, NOW + 60_000, DEFAULT_OPTIONS), NOW + 60_000 + DEFAULT_OPTIONS.usageMarginMs);
    assert.equal(usageDue(NOW, null, DEFAULT_OPTIONS), NOW + DEFAULT_OPTIONS.maxDelayMs);
    assert.equal(usageDue(NOW, NOW - 1, DEFAULT_OPTIONS), NOW + DEFAULT_OPTIONS.maxDelayMs);
  });
});
