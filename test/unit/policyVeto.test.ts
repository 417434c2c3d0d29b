// The pre-send veto (src/core/policy.ts): the decision table asked again on fresh reads right
// before a recovery is sent. The set goes out only when the table still keeps this very recovery
// due; any other answer calls it off with the reason a person reads. The last line of defence of
// "never compete with a turn, never override a person": one case per reason a fresh read can give.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { veto } from '../../src/core/policy';
import { counted, facts, failed, NOW, type Situation, turn } from '../support/policyFacts';

describe('the veto: the same table on fresh reads', () => {
  const due = { ...counted('t1'), state: { kind: 'backoff', attempt: 1, failedTurnId: 't1' } } as const;
  const cases: [string, Situation, boolean, string | null][] = [
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
    [
      'Codex retries the turn itself → called off',
      { watch: due, live: { turn: failed('t1'), retrying: 'reconnecting 2/5' } },
      false,
      'Codex is retrying',
    ],
    [
      'a turn runs, the newest turn not read yet → called off',
      { watch: due, live: { turn: null, status: { type: 'active', activeFlags: [] } } },
      false,
      'a turn is running',
    ],
    [
      'its failed turn seen running again (not ended) → called off',
      { watch: due, live: { turn: turn('t1', 'inProgress') } },
      false,
      'the failed turn has not ended yet',
    ],
    [
      'a newer turn runs → called off',
      { watch: due, live: { turn: turn('t2', 'inProgress'), status: { type: 'active', activeFlags: [] } } },
      false,
      'a newer turn exists',
    ],
    [
      'the thread’s status not read yet, nothing else changed → the set goes out',
      { watch: due, live: { turn: failed('t1'), status: null } },
      false,
      null,
    ],
    [
      'the goal cleared → called off',
      { goal: null, watch: due, live: { turn: failed('t1') } },
      false,
      'the goal was cleared',
    ],
    ['the goal completed → called off', { goal: 'complete', watch: due }, false, 'the goal is complete now'],
    [
      'the model blocked the goal itself meanwhile → called off',
      { watch: { ...due, modelBlockOffset: 300 }, live: { turn: failed('t1') } },
      false,
      'the model blocked the goal itself',
    ],
    [
      'given up meanwhile → called off',
      { watch: { ...due, state: { kind: 'gaveUp', attempts: 6 } }, live: { turn: failed('t1') } },
      false,
      'gave up on this failure',
    ],
    [
      'the recovery budget spent meanwhile → called off, and says how to go on',
      {
        watch: { ...due, state: { kind: 'budgetSpent', used: 12, limit: 12, until: NOW + 1 } },
        live: { turn: failed('t1') },
      },
      false,
      'the recovery budget is spent: 12 of 12 automatic recoveries in 24 h; Retry now or re-arm',
    ],
    [
      'disarmed while the goal went paused → called off, the disarm named',
      { goal: 'paused', watch: due, disarmedAt: NOW, live: { turn: failed('t1') } },
      false,
      'disarmed by the user',
    ],
    [
      "a person's marker pausing the goal → called off, the person named, not the status",
      {
        goal: 'paused',
        watch: { ...due, state: { kind: 'userIntent', requested: 'paused', at: NOW } },
        live: { turn: failed('t1') },
      },
      false,
      'the user set the goal paused',
    ],
    [
      "a person's marker and a newer turn → called off, the person named first",
      { watch: { ...due, state: { kind: 'userIntent', requested: 'paused', at: NOW } }, live: { turn: failed('t2') } },
      false,
      'the user set the goal paused',
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

  describe('a usage limit’s resume: the table’s own reason', () => {
    const usage = { ...counted('t1'), state: { kind: 'usageLimited', resetsAt: null } } as const;
    const cases: [string, Situation, string][] = [
      [
        'a turn runs → called off',
        { live: { turn: turn('t2', 'inProgress'), status: { type: 'active', activeFlags: [] } } },
        'a turn is running',
      ],
      [
        'an approval came → called off',
        { live: { turn: failed('t2'), approvals: new Set(['r']) } },
        'waiting for approval',
      ],
      [
        'Codex retries → called off',
        { live: { turn: turn('t2', 'inProgress'), retrying: 'usage limit' } },
        'Codex is retrying',
      ],
      [
        'the goal blocked instead → called off',
        { goal: 'blocked', live: { turn: failed('t1') } },
        'the goal is blocked now',
      ],
    ];
    for (const [name, row, reason] of cases) {
      test(name, () => {
        const f = facts({ goal: 'usageLimited', watch: usage, ...row });
        assert.equal(veto(f, 'usageLimited', 't1', false), reason);
      });
    }
  });
});
