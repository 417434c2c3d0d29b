// The table's rows for a goal in a thread another Codex app holds (src/core/elsewherePolicy.ts:
// `elsewhere`, `adoptsFromElsewhere`, `resumesRetry`), one case each, pure, with the shipped
// options: no daemon, no clock, no engine (those are test/unit/elsewhere.test.ts). Measured
// (docs/daemon-behaviour.md (k)): the daemon lists such a thread notLoaded, reads its goal and
// turns, refuses its resume while its owner runs, and a set from the daemon only writes the state DB.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import {
  adoptsFromElsewhere,
  elsewhere,
  type ElsewhereFacts,
  type ElsewhereState,
  type ElsewhereVerdict,
  resumesRetry,
} from '../../src/core/elsewherePolicy';
import { type GoalStatus } from '../../src/model/watch';
import type { Turn } from '../../src/protocol/daemon';
import { turn } from '../support/policyFacts';

const NOW = 1_800_000_000_000;
const SINCE = NOW - 600_000;

const failed = (id: string, codexErrorInfo: unknown = 'internalServerError', message = 'boom'): Turn => ({
  id,
  status: 'failed',
  error: { message, codexErrorInfo, additionalDetails: null } as Turn['error'],
});

const shown = (goal: GoalStatus, seenActive = false, retryable = false): ElsewhereState => ({
  kind: 'elsewhere',
  since: SINCE,
  goal,
  seenActive,
  retryable,
});

function facts(p: Partial<ElsewhereFacts>): ElsewhereFacts {
  const status = { type: 'notLoaded' } as const;
  return { previous: null, goal: 'blocked', turn: null, status, knownFailure: null, recovered: [], now: NOW, ...p };
}

interface Row {
  name: string;
  facts: Partial<ElsewhereFacts>;
  expect:
    | { act: 'leave' | 'forget' }
    | {
        act: 'show';
        retryable: boolean;
        seenActive: boolean;
        since: number;
        /** The failed turn whose failure the verdict records; null: cleared; undefined: left unchanged. */
        failure: string | null | undefined;
        announce: boolean;
      };
}

const ROWS: Row[] = [
  {
    name: 'active there, first seen → shown running there, seen active, no failure, nothing said',
    facts: { goal: 'active', turn: null },
    expect: { act: 'show', retryable: false, seenActive: true, since: NOW, failure: null, announce: false },
  },
  {
    name: 'active there again after a failure → the failure is cleared, nothing said',
    facts: { previous: shown('blocked', false, true), goal: 'active', knownFailure: 't1' },
    expect: { act: 'show', retryable: false, seenActive: true, since: SINCE, failure: null, announce: false },
  },
  {
    name: 'paused there → forgotten',
    facts: { previous: shown('blocked'), goal: 'paused' },
    expect: { act: 'forget' },
  },
  {
    name: 'complete there → forgotten',
    facts: { previous: shown('active', true), goal: 'complete' },
    expect: { act: 'forget' },
  },
  {
    name: 'over its budget there → forgotten',
    facts: { previous: shown('active', true), goal: 'budgetLimited' },
    expect: { act: 'forget' },
  },
  {
    name: 'blocked, no turn read (none yet) → shown, not retryable, failure unchanged, nothing said',
    facts: { previous: shown('active', true), goal: 'blocked', turn: null, knownFailure: 't0' },
    expect: { act: 'show', retryable: false, seenActive: true, since: SINCE, failure: undefined, announce: false },
  },
  {
    name: 'blocked, its turn still in progress (Codex blocks first) → shown, not retryable, failure unchanged',
    facts: { goal: 'blocked', turn: turn('t1', 'inProgress') },
    expect: { act: 'show', retryable: false, seenActive: false, since: NOW, failure: undefined, announce: false },
  },
  {
    name: 'blocked after a completed turn (the model blocked it) → shown, not a failure, nothing said',
    facts: {
      previous: shown('blocked', true, true),
      goal: 'blocked',
      turn: turn('t2', 'completed'),
      knownFailure: 't1',
    },
    expect: { act: 'show', retryable: false, seenActive: true, since: SINCE, failure: null, announce: false },
  },
  {
    name: 'blocked after an interrupted turn (a person stopped it) → shown, not a failure, nothing said',
    facts: { goal: 'blocked', turn: turn('t1', 'interrupted') },
    expect: { act: 'show', retryable: false, seenActive: false, since: NOW, failure: null, announce: false },
  },
  {
    name: 'blocked, its turn listed interrupted with no end time on a thread not loaded → a stopped turn, not a failure',
    facts: { goal: 'blocked', turn: { ...turn('t1', 'interrupted'), completedAt: null } },
    expect: { act: 'show', retryable: false, seenActive: false, since: NOW, failure: null, announce: false },
  },
  {
    name: "blocked, its turn listed interrupted with no end time on a systemError thread → not ended yet (the daemon's rows)",
    facts: {
      goal: 'blocked',
      turn: { ...turn('t1', 'interrupted'), completedAt: null },
      status: { type: 'systemError' },
      knownFailure: 't0',
    },
    expect: { act: 'show', retryable: false, seenActive: false, since: NOW, failure: undefined, announce: false },
  },
  {
    name: 'blocked by a transient failure, first seen → retryable, the failure recorded, said once',
    facts: { goal: 'blocked', turn: failed('t1') },
    expect: { act: 'show', retryable: true, seenActive: false, since: NOW, failure: 't1', announce: true },
  },
  {
    name: 'blocked by the transient failure already known → retryable, failure unchanged, not said again',
    facts: { previous: shown('blocked', false, true), goal: 'blocked', turn: failed('t1'), knownFailure: 't1' },
    expect: { act: 'show', retryable: true, seenActive: false, since: SINCE, failure: undefined, announce: false },
  },
  {
    name: 'blocked by a newer transient failure than the known one → the new failure recorded, said',
    facts: { previous: shown('blocked', true, true), goal: 'blocked', turn: failed('t2'), knownFailure: 't1' },
    expect: { act: 'show', retryable: true, seenActive: true, since: SINCE, failure: 't2', announce: true },
  },
  {
    name: 'blocked by a permanent failure (context window) → not retryable, the failure recorded, said',
    facts: { goal: 'blocked', turn: failed('t1', 'contextWindowExceeded') },
    expect: { act: 'show', retryable: false, seenActive: false, since: NOW, failure: 't1', announce: true },
  },
  {
    name: 'blocked by an HTTP 400 (`other`, a plain refusal) → not retryable',
    facts: { goal: 'blocked', turn: failed('t1', 'other', 'unexpected status 400 Bad Request') },
    expect: { act: 'show', retryable: false, seenActive: false, since: NOW, failure: 't1', announce: true },
  },
  {
    name: 'blocked on a failed turn recovered once already → not retryable (never twice)',
    facts: { goal: 'blocked', turn: failed('t1'), recovered: ['t1'] },
    expect: { act: 'show', retryable: false, seenActive: false, since: NOW, failure: 't1', announce: true },
  },
  {
    name: 'usage-limited there → retryable (Retry now resumes it once), said',
    facts: { goal: 'usageLimited', turn: failed('t1', 'usageLimitExceeded') },
    expect: { act: 'show', retryable: true, seenActive: false, since: NOW, failure: 't1', announce: true },
  },
  {
    name: 'seen active there, blocked now → seen active carried, its first sighting kept',
    facts: { previous: shown('active', true), goal: 'blocked', turn: failed('t1') },
    expect: { act: 'show', retryable: true, seenActive: true, since: SINCE, failure: 't1', announce: true },
  },
  {
    name: 'watched in the daemon (backoff) → left to the daemon rows',
    facts: { previous: { kind: 'backoff', attempt: 1, failedTurnId: 't1' }, goal: 'blocked', turn: failed('t1') },
    expect: { act: 'leave' },
  },
  {
    name: 'unloaded in the daemon (the engine watched it there) → left to the daemon rows',
    facts: { previous: { kind: 'unloaded' }, goal: 'blocked', turn: failed('t1') },
    expect: { act: 'leave' },
  },
  {
    name: 'not adopted in the daemon → left to the daemon rows, even if paused there now',
    facts: { previous: { kind: 'notAdopted', status: 'blocked' }, goal: 'paused' },
    expect: { act: 'leave' },
  },
];

describe('the elsewhere rows: a goal in a thread another Codex app holds', () => {
  for (const row of ROWS) {
    test(row.name, () => {
      const f = facts(row.facts);
      const v: ElsewhereVerdict = elsewhere(f);
      assert.equal(v.act, row.expect.act, `verdict: ${JSON.stringify(v)}`);
      assert.ok(v.why.length > 0, 'every verdict says why');
      const e = row.expect;
      if (e.act !== 'show' || v.act !== 'show') return;
      assert.deepEqual(v.state, {
        kind: 'elsewhere',
        since: e.since,
        goal: f.goal,
        seenActive: e.seenActive,
        retryable: e.retryable,
      });
      assert.equal(v.announce, e.announce, 'announce');
      if (e.failure === undefined) assert.equal(v.failure, undefined, `failure changed: ${JSON.stringify(v.failure)}`);
      else if (e.failure === null) assert.equal(v.failure, null);
      else assert.equal(v.failure?.turnId, e.failure);
    });
  }

  test('the failure it records says what failed, when, and is due at no time (nothing is scheduled there)', () => {
    const v = elsewhere(
      facts({ goal: 'blocked', turn: failed('t1', { httpConnectionFailed: { httpStatusCode: 503 } }, 'conn reset') }),
    );
    assert.ok(v.act === 'show');
    assert.deepEqual(v.failure, {
      turnId: 't1',
      message: 'conn reset',
      code: 'httpConnectionFailed',
      httpStatus: 503,
      at: NOW,
      dueAt: null,
    });
    assert.match(v.why, /another Codex app/);
  });

  test('a failed turn without an error says "turn failed": unknown, so not a failure a retry gets past', () => {
    const v = elsewhere(facts({ goal: 'blocked', turn: { id: 't1', status: 'failed', error: null } }));
    assert.ok(v.act === 'show');
    assert.equal(v.failure?.message, 'turn failed');
    assert.equal(v.state.retryable, false);
    assert.equal(v.failure?.code, 'unknown');
  });

  test('a person’s Retry now asked there stays with the goal at every look, until the takeover', () => {
    const retryAsked = { failedTurnId: 't1', at: NOW - 5_000 };
    const v = elsewhere(facts({ previous: { ...shown('blocked', true, true), retryAsked }, turn: failed('t1') }));
    assert.ok(v.act === 'show');
    assert.deepEqual(v.state.retryAsked, retryAsked);
    const none = elsewhere(facts({ previous: shown('blocked', true, true), turn: failed('t1') }));
    assert.ok(none.act === 'show' && !('retryAsked' in none.state), 'none asked: none kept');
  });
});

describe('adoptsFromElsewhere: a goal shown elsewhere, now loaded in the daemon', () => {
  const off = { ...DEFAULT_OPTIONS, autoArm: false };
  const cases: [string, ElsewhereState, GoalStatus, typeof DEFAULT_OPTIONS, boolean][] = [
    ['active now → armed', shown('blocked'), 'active', DEFAULT_OPTIONS, true],
    [
      'blocked, seen active there before → armed (not an old block)',
      shown('active', true),
      'blocked',
      DEFAULT_OPTIONS,
      true,
    ],
    ['usage-limited, seen active there before → armed', shown('active', true), 'usageLimited', DEFAULT_OPTIONS, true],
    ['blocked, first seen blocked → not adopted (TestOldBlocked)', shown('blocked'), 'blocked', DEFAULT_OPTIONS, false],
    ['usage-limited, never seen active → not adopted', shown('usageLimited'), 'usageLimited', DEFAULT_OPTIONS, false],
    ['paused, seen active before → not adopted', shown('active', true), 'paused', DEFAULT_OPTIONS, false],
    ['complete, seen active before → not adopted', shown('active', true), 'complete', DEFAULT_OPTIONS, false],
    ['active, autoArm off → not adopted', shown('active', true), 'active', off, false],
    ['blocked, seen active, autoArm off → not adopted', shown('active', true), 'blocked', off, false],
  ];
  for (const [name, state, goal, options, expected] of cases)
    test(name, () => assert.equal(adoptsFromElsewhere(state, goal, options), expected));
});

describe('resumesRetry: Retry now on a goal shown elsewhere, the takeover not saved before a stop', () => {
  const asked = (failedTurnId: string): ElsewhereState => ({
    ...shown('blocked'),
    retryAsked: { failedTurnId, at: NOW },
  });
  const cases: [string, ElsewhereState, GoalStatus, string | null, boolean][] = [
    ['blocked by the very failed turn the person retried → carried out', asked('t1'), 'blocked', 't1', true],
    ['usage-limited by it → carried out', asked('t1'), 'usageLimited', 't1', true],
    ['stopped by another failed turn → not', asked('t1'), 'blocked', 't2', false],
    ['its failed turn not known → not', asked('t1'), 'blocked', null, false],
    ['no Retry now asked → not', shown('blocked'), 'blocked', 't1', false],
    ['active now → not (its own rows decide)', asked('t1'), 'active', 't1', false],
    ['paused now → not (the person’s pause stands)', asked('t1'), 'paused', 't1', false],
  ];
  for (const [name, state, goal, failedTurnId, expected] of cases)
    test(name, () => assert.equal(resumesRetry(state, goal, failedTurnId), expected));
});
