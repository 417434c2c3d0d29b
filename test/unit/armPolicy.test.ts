// The table's rows for a person's arming (src/core/policy.ts, src/core/arming.ts): what `arm` does to a watch by its
// state, which failure the arming finds (never recovered), and how that failure is decided later.
// Pure: no daemon, no clock; the shipped options (DEFAULT_OPTIONS).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { type LiveThread, newLive } from '../../src/core/live';
import { failureAtArming, personArms } from '../../src/core/arming';
import { decide, keepsOnUnload, veto } from '../../src/core/policy';
import { newWatch, type GoalStatus, type WatchedThread, type WatchState } from '../../src/model/watch';
import type { Turn } from '../../src/protocol/daemon';
import { turn } from '../support/policyFacts';

const NOW = 1_800_000_000_000;

const failed = (id: string, codexErrorInfo: unknown = 'internalServerError'): Turn => ({
  id,
  status: 'failed',
  error: { message: 'boom', codexErrorInfo, additionalDetails: null } as Turn['error'],
});

function watch(goal: GoalStatus | null, more: Partial<WatchedThread> = {}): WatchedThread {
  const w = newWatch('thread-1', NOW - 60_000);
  w.goal = goal === null ? null : { status: goal, objective: 'o', tokensUsed: 0, tokenBudget: null, updatedAt: 7 };
  return Object.assign(w, more);
}
const live = (more: Partial<LiveThread> = {}): LiveThread => ({
  ...newLive(),
  status: { type: 'systemError' },
  ...more,
});
const facts = (w: WatchedThread, l: LiveThread) => ({
  w,
  live: l,
  disarmedAt: undefined,
  options: DEFAULT_OPTIONS,
  now: NOW,
});

describe('policy: a person arms a goal', () => {
  const cases: [string, WatchState | null, number | undefined, ReturnType<typeof personArms>['act']][] = [
    ['not adopted', { kind: 'notAdopted', status: 'blocked' }, undefined, 'arm'],
    ['disarmed by the user', { kind: 'disarmed', at: NOW - 1 }, NOW - 1, 'arm'],
    ['a disarm record whatever the state shows', { kind: 'running' }, NOW - 1, 'arm'],
    ['running', { kind: 'running' }, undefined, 'noop'],
    ['in backoff', { kind: 'backoff', attempt: 1, failedTurnId: 't1' }, undefined, 'noop'],
    ['paused by a person in Codex', { kind: 'userIntent', requested: 'paused', at: NOW - 1 }, undefined, 'noop'],
    [
      'in another Codex app',
      { kind: 'elsewhere', since: NOW, goal: 'blocked', seenActive: false, retryable: true },
      undefined,
      'refuse',
    ],
    ['unknown', null, undefined, 'refuse'],
  ];
  for (const [name, state, disarmedAt, act] of cases)
    test(`${name} → ${act}`, () => {
      const w = state ? watch('blocked', { state }) : undefined;
      const verdict = personArms(w, disarmedAt);
      assert.equal(verdict.act, act);
      if (verdict.act !== 'arm') assert.ok(verdict.why.length > 0, 'no reason given');
    });

  test('the failure the arming finds: a blocked goal’s newest turn (ended or not), a usage limit’s key, a failed turn', () => {
    assert.equal(failureAtArming(watch('blocked'), live({ turn: failed('t1') })), 't1');
    assert.equal(failureAtArming(watch('blocked'), live({ turn: turn('t1', 'inProgress') })), 't1');
    assert.equal(failureAtArming(watch('usageLimited'), live({ turn: failed('t1', 'usageLimitExceeded') })), 't1');
    assert.equal(failureAtArming(watch('usageLimited'), live({ turn: null })), 'usage@7');
    assert.equal(failureAtArming(watch('active'), live({ turn: turn('t1', 'inProgress') })), null);
    assert.equal(failureAtArming(watch('active'), live({ turn: turn('t1', 'completed') })), null);
    assert.equal(failureAtArming(watch('paused'), live({ turn: failed('t1') })), 't1');
  });
});

describe('policy: a failure older than the arming', () => {
  test('blocked by it → failedBeforeArming, said without attention, never counted', () => {
    const v = decide(facts(watch('blocked', { beforeArming: 't1' }), live({ turn: failed('t1') })));
    assert.equal(v.act, 'settle');
    if (v.act !== 'settle') return;
    assert.deepEqual(v.state, { kind: 'failedBeforeArming', code: 'internalServerError', message: 'boom' });
    assert.notEqual(v.attention, true);
  });

  test('a permanent one is shown the same way (it is older than the arming, whatever it was)', () => {
    const v = decide(
      facts(watch('blocked', { beforeArming: 't1' }), live({ turn: failed('t1', 'contextWindowExceeded') })),
    );
    assert.equal(v.act === 'settle' && v.state.kind, 'failedBeforeArming');
  });

  test('a newer failed turn → counted (recovered as usual)', () => {
    const v = decide(facts(watch('blocked', { beforeArming: 't1' }), live({ turn: failed('t2') })));
    assert.equal(v.act, 'count');
  });

  test('its turn still running → turnEnding first (its end decides)', () => {
    const v = decide(facts(watch('blocked', { beforeArming: 't1' }), live({ turn: turn('t1', 'inProgress') })));
    assert.equal(v.act === 'settle' && v.state.kind, 'turnEnding');
  });

  test('the model blocked it → modelBlocked (that row comes first)', () => {
    const v = decide(
      facts(watch('blocked', { beforeArming: 't1', modelBlockOffset: 10 }), live({ turn: failed('t1') })),
    );
    assert.equal(v.act === 'settle' && v.state.kind, 'modelBlocked');
  });

  test('usage-limited by it → failedBeforeArming (no reset read, never resumed)', () => {
    const v = decide(
      facts(watch('usageLimited', { beforeArming: 't1' }), live({ turn: failed('t1', 'usageLimitExceeded') })),
    );
    assert.equal(v.act === 'settle' && v.state.kind, 'failedBeforeArming');
    const newer = decide(
      facts(watch('usageLimited', { beforeArming: 't1' }), live({ turn: failed('t2', 'usageLimitExceeded') })),
    );
    assert.equal(newer.act, 'readReset');
  });

  test('the veto calls off a set for it', () => {
    const w = watch('blocked', { beforeArming: 't1', state: { kind: 'backoff', attempt: 1, failedTurnId: 't1' } });
    assert.match(
      veto(facts(w, live({ turn: failed('t1') })), 'blocked', 't1', false) ?? '',
      /before the goal was armed/,
    );
  });

  test('kept when the daemon unloads the thread (nothing waits for it)', () => {
    assert.equal(keepsOnUnload({ kind: 'failedBeforeArming', code: 'internalServerError', message: 'boom' }), true);
  });
});
