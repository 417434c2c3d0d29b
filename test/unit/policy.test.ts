// The decision table (src/core/policy.ts), one row per case, read like a state table: given what
// is known of a watch, the verdict. Pure: no daemon, no clock, the shipped options
// (DEFAULT_OPTIONS) unless a row says otherwise.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
// The veto is in policyVeto.test.ts, the other rules of the table in policyRules.test.ts.
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { decide, type Verdict, veto } from '../../src/core/policy';
import { overBudget } from '../../src/core/stepRules';
import { newWatch } from '../../src/model/watch';
import { dueAt } from '../../src/model/queries';
import { counted, facts, failed, NOW, type Situation, spentBudget, T, turn } from '../support/policyFacts';

/** A usage limit no reset clears, counted on turn t1. */
const OUT_OF_CREDITS = {
  turnId: 't1',
  message: 'out of credits',
  code: 'creditsDepleted',
  httpStatus: 429,
  at: NOW,
  dueAt: null,
};

interface Row extends Situation {
  name: string;
  /** The verdict's act and, where it settles, the state's kind. */
  expect: {
    act: Verdict['act'];
    kind?: string;
    scheduled?: string;
    attention?: boolean;
    /** A count's `halfStep`: the group's step it waits for, or null. */
    halfStep?: number | null;
  };
}

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
  { name: 'goal cleared → forgotten: nothing left to watch', goal: null, expect: { act: 'forget' } },
  {
    name: 'goal cleared on a thread the user disarmed → forgotten all the same',
    goal: null,
    disarmedAt: NOW - 5,
    watch: { state: { kind: 'disarmed', at: NOW - 5 } },
    expect: { act: 'forget' },
  },
  {
    name: "goal cleared after a person's marker (userIntent) → forgotten",
    goal: null,
    watch: { state: { kind: 'userIntent', requested: 'paused', at: NOW - 5 } },
    expect: { act: 'forget' },
  },
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
  {
    name: 'blocked, the turn read before its end (listed interrupted, no end time, the thread systemError) → turnEnding (daemon-behaviour (q))',
    live: { turn: { ...turn('t1', 'interrupted'), completedAt: null }, status: { type: 'systemError' } },
    expect: { act: 'settle', kind: 'turnEnding' },
  },
  {
    name: 'blocked, the turn interrupted with no end time on an idle thread (a crash cut it short) → interrupted',
    live: { turn: { ...turn('t1', 'interrupted'), completedAt: null } },
    expect: { act: 'settle', kind: 'interrupted' },
  },
  {
    name: 'blocked, the turn interrupted with an end time, the thread systemError → interrupted',
    live: { turn: { ...turn('t1', 'interrupted'), completedAt: 1_800_000_000 }, status: { type: 'systemError' } },
    expect: { act: 'settle', kind: 'interrupted' },
  },
  {
    name: 'blocked, the turn interrupted with no end time, the thread status not known → interrupted',
    live: { turn: { ...turn('t1', 'interrupted'), completedAt: null }, status: null },
    expect: { act: 'settle', kind: 'interrupted' },
  },
  {
    name: 'blocked, a failed turn listed with no end time, the thread systemError → counted: only an interrupted listing is a turn still ending',
    live: { turn: { ...failed('t1'), completedAt: null }, status: { type: 'systemError' } },
    expect: { act: 'count' },
  },
  {
    name: 'blocked, the turn interrupted, its end time not said (a daemon without it), the thread systemError → interrupted',
    live: { turn: turn('t1', 'interrupted'), status: { type: 'systemError' } },
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
    expect: { act: 'count' },
  },
  {
    name: 'a dropped stream ("other", stream disconnected) → counted',
    live: { turn: failed('t1', 'other', 'stream disconnected before completion') },
    expect: { act: 'count' },
  },
  {
    name: 'a new transient failure past maxAttempts → counted (its back-off gives up)',
    watch: { failures: DEFAULT_OPTIONS.maxAttempts },
    live: { turn: failed('t1') },
    expect: { act: 'count' },
  },
  {
    name: 'the failure of an outage’s half-step try → a try, not a step: due with its group, never given up here',
    watch: {
      failures: DEFAULT_OPTIONS.maxAttempts,
      lastFailure: { ...counted('t0').lastFailure, stepDueAt: NOW + 60_000 },
      recovered: ['t0'],
    },
    live: { turn: failed('t1') },
    expect: { act: 'count', halfStep: NOW + 60_000 },
  },
  {
    name: 'a new failure after an ordinary recovery → counted (no half-step)',
    watch: { ...counted('t0'), recovered: ['t0'] },
    live: { turn: failed('t1') },
    expect: { act: 'count', halfStep: null },
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
    name: 'a new usage limit, its turn read before its end (interrupted, no end time, the thread systemError) → turnEnding: the message comes with the end',
    goal: 'usageLimited',
    live: { turn: { ...turn('t1', 'interrupted'), completedAt: null }, status: { type: 'systemError' } },
    expect: { act: 'settle', kind: 'turnEnding' },
  },
  {
    name: 'a new usage limit, its turn interrupted with no end time on an idle thread (a crash) → readReset',
    goal: 'usageLimited',
    live: { turn: { ...turn('t1', 'interrupted'), completedAt: null } },
    expect: { act: 'readReset' },
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
      lastFailure: OUT_OF_CREDITS,
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
  // Who armed what, when: a failure older than the arming is shown, never recovered.
  {
    name: 'armed by a person while this failed turn stopped the goal → failedBeforeArming, never recovered',
    watch: { beforeArming: 't1' },
    live: { turn: failed('t1') },
    expect: { act: 'settle', kind: 'failedBeforeArming' },
  },
  {
    name: 'armed by a person while this usage limit stopped the goal → failedBeforeArming, never resumed',
    goal: 'usageLimited',
    watch: { beforeArming: 't1' },
    live: { turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'settle', kind: 'failedBeforeArming' },
  },
  {
    name: 'a failed turn that says nothing of why (no error) → needsAttention, a person’s call',
    live: { turn: { id: 't1', status: 'failed', error: null } },
    expect: { act: 'settle', kind: 'needsAttention', attention: true },
  },
  {
    name: 'a failure seen first in another Codex app (recorded, never scheduled) → counted now',
    watch: { ...counted('t1', null), failures: 0 },
    live: { turn: failed('t1') },
    expect: { act: 'count', halfStep: null },
  },
  {
    name: 'a usage limit seen first in another Codex app (never scheduled) → read when it resets',
    goal: 'usageLimited',
    watch: { ...counted('t1', null), failures: 0 },
    live: { turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'readReset' },
  },
  // What keeps a recovery due: its own backoff, waiting or under way; nothing else.
  {
    name: 'a recovery under way for this failed turn (recovering) → kept, its recovery due',
    watch: { ...counted('t1'), state: { kind: 'recovering', attempt: 1, failedTurnId: 't1', sentAt: NOW - 10 } },
    live: { turn: failed('t1') },
    expect: { act: 'keep', scheduled: 't1' },
  },
  {
    name: 'a counted failure held for the outage’s probe → kept, its recovery due',
    watch: {
      ...counted('t1'),
      state: { kind: 'waitingProbe', probe: 'thread-0', held: { kind: 'backoff', attempt: 1, failedTurnId: 't1' } },
    },
    live: { turn: failed('t1') },
    expect: { act: 'keep', scheduled: 't1' },
  },
  {
    name: 'a backoff of another failed turn does not keep this one due → a backoff of this one',
    watch: { ...counted('t1'), state: { kind: 'backoff', attempt: 1, failedTurnId: 't0' } },
    live: { turn: failed('t1') },
    expect: { act: 'settle', kind: 'backoff' },
  },
  {
    name: 'a recovery under way for another failed turn does not keep this one due → a backoff of this one',
    watch: { ...counted('t1'), state: { kind: 'recovering', attempt: 1, failedTurnId: 't0', sentAt: NOW - 10 } },
    live: { turn: failed('t1') },
    expect: { act: 'settle', kind: 'backoff' },
  },
  {
    name: 'blocked on a failure whose usage-limit resume was scheduled → a backoff of it, not the resume',
    watch: { ...counted('t1'), state: { kind: 'usageLimited', resetsAt: null } },
    live: { turn: failed('t1') },
    expect: { act: 'settle', kind: 'backoff' },
  },
  {
    name: 'a usage limit no reset clears, already shown → kept, not said again',
    goal: 'usageLimited',
    watch: {
      lastFailure: OUT_OF_CREDITS,
      state: { kind: 'needsAttention', code: 'creditsDepleted', message: 'out of credits' },
    },
    live: { turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'keep' },
  },
  {
    name: 'usage-limited again on a limit resumed once, already shown → needsAttention, not said again',
    goal: 'usageLimited',
    watch: { recovered: ['t1'], state: { kind: 'needsAttention', code: 'recoveredOnce', message: 'm' } },
    live: { turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'settle', kind: 'needsAttention', attention: false },
  },
  // An active goal: what its thread is doing.
  {
    name: 'active, its turn in progress while the thread reads idle → running',
    goal: 'active',
    live: { turn: turn('t1', 'inProgress') },
    expect: { act: 'settle', kind: 'running' },
  },
  {
    name: 'active, the latest turn interrupted → interrupted',
    goal: 'active',
    live: { turn: turn('t1', 'interrupted') },
    expect: { act: 'settle', kind: 'interrupted' },
  },
  {
    name: 'active, the thread’s status not read yet → running',
    goal: 'active',
    live: { status: null },
    expect: { act: 'settle', kind: 'running' },
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
