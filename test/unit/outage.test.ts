// The rules of an outage's group and probe (src/core/outage.ts), one case per row: pure, no
// daemon, no clock. The engine carrying them out is test/unit/outageProbe.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  actsAt,
  dueGroup,
  dueTurn,
  firstDue,
  type GroupFacts,
  followProbe,
  goesFirst,
  halfStepDue,
  halfStepFailed,
  isProbing,
  keepsSlot,
  mayHoldOthers,
  outageGroup,
  type ProbeFacts,
  type TimingFacts,
  probeFollowers,
  releasedBy,
  stillHeld,
} from '../../src/core/outage';
import { newWatch, type WatchedThread, type WatchState } from '../../src/model/watch';

const NOW = 1_800_000_000_000;
const CAP = 30 * 60_000;

function failed(patch: Partial<WatchedThread> = {}, code = 'internalServerError'): WatchedThread {
  const w = newWatch('t', NOW - 600_000);
  w.runsOn = 'openai/gpt-5.5';
  w.failures = 1;
  w.lastFailure = { turnId: 'turn-1', message: 'boom', code, httpStatus: 500, at: NOW - 60_000, dueAt: NOW };
  w.state = { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' };
  return Object.assign(w, patch);
}

/** Its recovery went out 10 s ago and took effect: its turn runs. */
const probeOut = (patch: Partial<WatchedThread> = {}) =>
  failed({ state: { kind: 'running' }, recoveries: [NOW - 10_000], recovered: ['turn-1'], ...patch });

/** A failure just over the cap ago. */
const early = {
  turnId: 'turn-1',
  message: 'boom',
  code: 'internalServerError',
  httpStatus: 500,
  at: NOW - CAP - 2,
  dueAt: NOW,
};

const facts = (patch: Partial<ProbeFacts> = {}): ProbeFacts => ({
  answeredAt: null,
  turnEnded: false,
  looking: false,
  now: NOW,
  verdictWithinMs: CAP,
  ...patch,
});

describe('the group', () => {
  test('provider and model, then the kind', () => assert.equal(outageGroup(failed()), 'openai/gpt-5.5 · server error'));
  test('what it runs on not known → none', () => assert.equal(outageGroup(failed({ runsOn: null })), null));
  test('no failure → none', () => assert.equal(outageGroup(failed({ lastFailure: null })), null));
  test('not a provider’s failure → none', () => assert.equal(outageGroup(failed({}, 'set rejected')), null));
});

describe('the group a due recovery waits in', () => {
  const at = NOW - 60_000; // the failure's time in failed()
  const rows: [string, WatchedThread, number | undefined, string | null][] = [
    ['a backoff for a provider’s failure → its group', failed(), undefined, 'openai/gpt-5.5 · server error'],
    [
      '…held for a probe, still its group',
      failed({
        state: { kind: 'waitingProbe', probe: 'p', held: { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' } },
      }),
      undefined,
      'openai/gpt-5.5 · server error',
    ],
    ['its provider answered before the failure → still its group', failed(), at - 1, 'openai/gpt-5.5 · server error'],
    ['…at the failure’s very time → still its group', failed(), at, 'openai/gpt-5.5 · server error'],
    ['…after it → none (released: it waits for no probe)', failed(), at + 1, null],
    [
      'a usage limit’s wait → none (it waits for its reset)',
      failed({ state: { kind: 'usageLimited', resetsAt: null } }),
      undefined,
      null,
    ],
    ['not scheduled → none', failed({ state: { kind: 'running' } }), undefined, null],
    ['no failure known → none, whatever answered', failed({ lastFailure: null }), at + 1, null],
    ['not a provider’s failure → none', failed({}, 'set rejected'), undefined, null],
  ];
  for (const [name, w, answeredAt, expected] of rows) test(name, () => assert.equal(dueGroup(w, answeredAt), expected));
});

describe('who goes first in a group', () => {
  /** Scheduled, due at NOW + `dueIn`, with `recoveries` sent. */
  const due = (threadId: string, dueIn: number, recoveries = 0) =>
    failed({
      threadId,
      lastFailure: { ...failed().lastFailure!, dueAt: NOW + dueIn },
      recoveries: Array.from({ length: recoveries }, (_, i) => NOW - 1_000 * (i + 1)),
    });
  const rows: [string, WatchedThread, WatchedThread, boolean][] = [
    ['the sooner due time first', due('b', 0), due('a', 1), true],
    ['…not the later one', due('a', 1), due('b', 0), false],
    ['…even with more recoveries', due('b', 0, 3), due('a', 1, 0), true],
    ['at one due time, fewer recoveries first', due('b', 0, 1), due('a', 0, 2), true],
    ['…not more', due('a', 0, 2), due('b', 0, 1), false],
    ['at one due time and count, the lower thread id', due('a', 0, 1), due('b', 0, 1), true],
    ['…not the higher', due('b', 0, 1), due('a', 0, 1), false],
    ['not before itself', due('a', 0, 1), due('a', 0, 1), false],
  ];
  for (const [name, a, b, expected] of rows) test(name, () => assert.equal(goesFirst(a, b), expected));

  describe('the due goal of a group that goes first', () => {
    const G = 'mock · server error';
    const of = (attempting: string[] = [], other: string[] = []) => ({
      groupOf: (w: { threadId: string }) => (other.includes(w.threadId) ? 'another · server error' : G),
      attempting: (id: string) => attempting.includes(id),
    });
    const first = (ws: WatchedThread[], o = of(), by = NOW) => firstDue(ws, G, o, by)?.threadId ?? null;
    test('the sooner due, whatever the order they come in', () => {
      assert.equal(first([due('a', -5), due('b', -9), due('c', 0)]), 'b');
      assert.equal(first([due('b', -9), due('a', -5)]), 'b');
    });
    test('due by the bound (now plus the lead) → it may go', () =>
      assert.equal(first([due('a', 300)], of(), NOW + 300), 'a'));
    test('due after it → none', () => assert.equal(first([due('a', 301)], of(), NOW + 300), null));
    test('no due time → none', () => assert.equal(first([failed({ threadId: 'a', lastFailure: null })]), null));
    test('its attempt under way → not it (it is out)', () =>
      assert.equal(first([due('a', -9), due('b', -5)], of(['a'])), 'b'));
    test('of another group → not it', () => assert.equal(first([due('a', -9), due('b', -5)], of([], ['a'])), 'b'));
    test('none scheduled → none', () => assert.equal(first([]), null));
  });
});

describe('when a scheduled recovery’s due job comes', () => {
  const LEAD = 300;
  const facts = (patch: Partial<TimingFacts> = {}): TimingFacts => ({
    attempting: false,
    slotAt: null,
    lead: LEAD,
    ...patch,
  });
  const slotShown = failed({
    state: { kind: 'waitingSlot', slotAt: NOW + 9_000, held: { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' } },
  });
  const held = failed({
    state: { kind: 'waitingProbe', probe: 'p', held: { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' } },
  });
  const rows: [string, WatchedThread, TimingFacts, number | null][] = [
    ['backing off → its due time less the lead', failed(), facts(), NOW - LEAD],
    ['its attempt under way → never (its end sets it again)', failed(), facts({ attempting: true }), null],
    ['…even held for a slot', slotShown, facts({ attempting: true, slotAt: NOW + 1_000 }), null],
    [
      'held for a slot kept in this run → that slot, not ahead of it',
      slotShown,
      facts({ slotAt: NOW + 1_000 }),
      NOW + 1_000,
    ],
    ['held for a slot, none kept (a restart) → the slot shown', slotShown, facts(), NOW + 9_000],
    [
      'held for a probe out → the verdict’s bound plus the lead',
      held,
      facts({ heldUntil: NOW + 60_000 }),
      NOW + 60_000 + LEAD,
    ],
    ['held for a probe whose set is under way → not yet', held, facts({ heldUntil: null }), null],
    ['held for a probe out no more → its due time less the lead (its turn lets it go)', held, facts(), NOW - LEAD],
    ['no due time → never', failed({ lastFailure: null }), facts(), null],
  ];
  for (const [name, w, t, expected] of rows) test(name, () => assert.equal(actsAt(w, t), expected));
});

describe('a slot the limiter keeps stays the recovery’s own', () => {
  const held = { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' } as const;
  const rows: [string, WatchState, boolean][] = [
    ['backing off → kept', held, true],
    ['usage-limited, waiting for its reset → kept', { kind: 'usageLimited', resetsAt: null }, true],
    ['waiting for its slot → kept', { kind: 'waitingSlot', slotAt: NOW, held }, true],
    ['held for its probe → kept', { kind: 'waitingProbe', probe: 'p', held }, true],
    ['its failed turn seen still ending (the same recovery) → kept', { kind: 'turnEnding' }, true],
    ['running again → given back', { kind: 'running' }, false],
    ['paused by a person → given back', { kind: 'paused' }, false],
    ['disarmed → given back', { kind: 'disarmed', at: NOW }, false],
    ['given up → given back', { kind: 'gaveUp', attempts: 6 }, false],
  ];
  for (const [name, state, kept] of rows) test(name, () => assert.equal(keepsSlot(state), kept));
});

describe('a due recovery’s turn', () => {
  const other = (slotAt: number | null) => ({ threadId: 'b', slotAt });
  const rows: [string, GroupFacts, ReturnType<typeof dueTurn>][] = [
    ['its group’s probe out → held for it', { probe: 'p', first: null }, { kind: 'hold', probe: 'p' }],
    ['…even when another would go first', { probe: 'p', first: other(NOW + 5_000) }, { kind: 'hold', probe: 'p' }],
    ['alone, or first of its group → it starts', { probe: null, first: null }, { kind: 'start', first: null }],
    [
      'another goes first, no slot kept → the other starts',
      { probe: null, first: other(null) },
      { kind: 'start', first: 'b' },
    ],
    [
      'another goes first at its slot → looked at again then',
      { probe: null, first: other(NOW + 1) },
      { kind: 'later', at: NOW + 1 },
    ],
    ['…its slot come → the other starts', { probe: null, first: other(NOW) }, { kind: 'start', first: 'b' }],
    ['…its slot passed → the other starts', { probe: null, first: other(NOW - 1) }, { kind: 'start', first: 'b' }],
  ];
  for (const [name, g, expected] of rows) test(name, () => assert.deepEqual(dueTurn(g, NOW), expected));
});

describe('still held for its probe', () => {
  const held = (probe = 'p') =>
    failed({ state: { kind: 'waitingProbe', probe, held: { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' } } });
  const p = failed({ threadId: 'p' });
  const of = (w: WatchedThread | undefined) => (id: string) => (id === w?.threadId ? w : undefined);
  const rows: [string, WatchedThread, WatchedThread | undefined, boolean, boolean][] = [
    ['its probe out, of its group → held', held(), p, true, true],
    ['its probe no longer out → not held', held(), p, false, false],
    ['its probe not watched → not held', held(), undefined, true, false],
    ['another thread out → not its probe', held('q'), p, true, false],
    [
      'its probe now of another group → not held',
      held(),
      failed({ threadId: 'p', runsOn: 'other/model' }),
      true,
      false,
    ],
  ];
  for (const [name, w, probe, out, expected] of rows)
    test(name, () =>
      assert.equal(
        stillHeld(w, of(probe), () => out),
        expected,
      ),
    );
  test('not waiting for a probe → not held, whoever is out', () =>
    assert.equal(
      stillHeld(
        failed(),
        () => p,
        () => true,
      ),
      false,
    ));
});

describe('out as the probe', () => {
  const rows: [string, WatchedThread, Partial<ProbeFacts>, boolean][] = [
    [
      'its set is being sent (recovering)',
      failed({ state: { kind: 'recovering', attempt: 1, failedTurnId: 'turn-1', sentAt: NOW } }),
      {},
      true,
    ],
    ['its recovered turn runs, no answer yet', probeOut(), {}, true],
    ['Codex retries its turn', probeOut({ state: { kind: 'codexRetrying', detail: 'x' } }), {}, true],
    ['its goal blocked again, the turn not ended', probeOut({ state: { kind: 'turnEnding' } }), {}, true],
    ['its set replied, its turn not started yet (idle)', probeOut({ state: { kind: 'idle' } }), {}, true],
    ['its goal completed in the turn, the response not in yet', probeOut({ state: { kind: 'complete' } }), {}, true],
    ['its goal reached its token budget in the turn', probeOut({ state: { kind: 'budgetLimited' } }), {}, true],
    ['its goal completed and its turn ended', probeOut({ state: { kind: 'complete' } }), { turnEnded: true }, false],
    ['its turn ended', probeOut(), { turnEnded: true }, false],
    ['its turn ended, the look at it not done yet: still out', probeOut(), { turnEnded: true, looking: true }, true],
    ['a look at it, its turn not ended', probeOut(), { looking: true }, true],
    [
      'a look at it, its set older than the cap',
      probeOut({ recoveries: [NOW - CAP - 1], lastFailure: early }),
      { looking: true },
      false,
    ],
    [
      'a look at it, the provider answered since its set',
      probeOut(),
      { looking: true, answeredAt: NOW - 10_000 },
      false,
    ],
    ['no turn known yet (a restart before the look): still out', probeOut(), { turnEnded: null }, true],
    ['the provider answered since its set', probeOut(), { answeredAt: NOW - 10_000 }, false],
    ['the provider answered before its set only', probeOut(), { answeredAt: NOW - 10_001 }, true],
    ['its set is older than the cap', probeOut({ recoveries: [NOW - CAP - 1], lastFailure: early }), {}, false],
    ['its set exactly the cap ago', probeOut({ recoveries: [NOW - CAP], lastFailure: early }), {}, true],
    ['no failure counted (a turn completed since)', probeOut({ failures: 0 }), {}, false],
    ['the set went out before this failure', probeOut({ recoveries: [NOW - 60_001] }), {}, false],
    ['the set at the failure’s very time', probeOut({ recoveries: [NOW - 60_000] }), {}, true],
    ['never recovered (the set did not take effect)', probeOut({ recovered: [] }), {}, false],
    ['no set at all', probeOut({ recoveries: [] }), {}, false],
    ['paused by a person', probeOut({ state: { kind: 'userIntent', requested: 'paused', at: NOW } }), {}, false],
    ['waiting for approval (the provider answered)', probeOut({ state: { kind: 'waitingApproval' } }), {}, false],
    ['not grouped (what it runs on unknown)', probeOut({ runsOn: null }), {}, false],
    [
      'not grouped, its set being sent',
      failed({ runsOn: null, state: { kind: 'recovering', attempt: 1, failedTurnId: 'turn-1', sentAt: NOW } }),
      {},
      false,
    ],
    ['a failure counted, none recorded', probeOut({ lastFailure: null }), {}, false],
    ['still backing off', failed({ recoveries: [NOW - 10_000], recovered: ['turn-1'] }), {}, false],
  ];
  for (const [name, w, f, out] of rows) test(`${name} → ${out}`, () => assert.equal(isProbing(w, facts(f)), out));

  // A fake clock from zero (tests, the bench): no answer is no answer, even for a set at 0 (null >= 0 in JS).
  test('a set at the clock’s zero, no answer yet → true', () => {
    const zero = { ...early, at: 0, dueAt: 0 };
    assert.equal(isProbing(probeOut({ recoveries: [0], lastFailure: zero }), facts({ now: 10_000 })), true);
  });
});

describe('may hold others', () => {
  test('sent a set, a failure counted → true', () => assert.equal(mayHoldOthers(probeOut()), true));
  test('sent a set, its turn then ended well (none counted) → true', () =>
    assert.equal(mayHoldOthers(probeOut({ failures: 0 })), true));
  test('never sent a set → false', () => assert.equal(mayHoldOthers(failed()), false));
});

describe('released by the provider’s answer', () => {
  const at = NOW - 30_000; // the failure was 60 s before NOW
  const rows: [string, WatchedThread, string, number, boolean][] = [
    ['backing off, on that provider, older than the answer', failed(), 'openai/gpt-5.5', at, true],
    [
      'waiting for the probe',
      failed({
        state: { kind: 'waitingProbe', probe: 'p', held: { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' } },
      }),
      'openai/gpt-5.5',
      NOW + 1,
      true,
    ],
    ['due already (the limiter has it)', failed(), 'openai/gpt-5.5', NOW, false],
    ['another provider answered', failed(), 'openai/gpt-4.1', at, false],
    ['the failure came after the answer', failed(), 'openai/gpt-5.5', NOW - 60_000, false],
    [
      'a usage limit (it waits for its reset)',
      failed({ state: { kind: 'usageLimited', resetsAt: null } }),
      'openai/gpt-5.5',
      at,
      false,
    ],
    ['a rejected set (no provider’s failure)', failed({}, 'set rejected'), 'openai/gpt-5.5', at, false],
    ['no failure recorded', failed({ lastFailure: null }), 'openai/gpt-5.5', at, false],
    [
      'waiting for the probe, no due time kept',
      failed({
        lastFailure: { ...failed().lastFailure!, dueAt: null },
        state: { kind: 'waitingProbe', probe: 'p', held: { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' } },
      }),
      'openai/gpt-5.5',
      at,
      false,
    ],
    ['nothing scheduled', failed({ state: { kind: 'gaveUp', attempts: 6 } }), 'openai/gpt-5.5', at, false],
    [
      'held by the limiter',
      failed({
        state: {
          kind: 'waitingSlot',
          slotAt: NOW + 5_000,
          held: { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' },
        },
      }),
      'openai/gpt-5.5',
      at,
      true,
    ],
  ];
  for (const [name, w, runsOn, when, released] of rows)
    test(`${name} → ${released}`, () =>
      assert.equal(releasedBy(w, runsOn, when, Math.max(when, NOW - 30_000)), released));
});

describe('following the probe', () => {
  test('one more failure, and the probe’s due time', () =>
    assert.deepEqual(followProbe(failed({ failures: 2 }), NOW + 120_000), { failures: 3, dueAt: NOW + 120_000 }));
  test('never an earlier due time than its own', () =>
    assert.deepEqual(followProbe(failed({ failures: 4 }), NOW - 1), { failures: 5, dueAt: NOW }));
  test('no failure of its own recorded: the probe’s due time', () =>
    assert.deepEqual(followProbe(failed({ lastFailure: null }), NOW + 5), { failures: 2, dueAt: NOW + 5 }));
});

describe('who follows the probe', () => {
  // The probe's set went out 10 s ago (its failure 60 s ago); each candidate's failure was 60 s ago too.
  const probe = probeOut({ threadId: 'probe' });
  const backoff = (failedTurnId: string) => ({ kind: 'backoff' as const, attempt: 1, failedTurnId });
  const goal = (threadId: string, patch: Partial<WatchedThread> = {}, code?: string) =>
    failed({ threadId, ...patch }, code);
  const at = (t: number) => ({ ...failed().lastFailure!, at: t });
  const rows: [string, WatchedThread, WatchedThread[], string[]][] = [
    ['one goal of its group, backing off, failed before the set', probe, [goal('a')], ['a turn-1']],
    [
      'two of them, in their order; one waiting for the probe: its held turn',
      probe,
      [goal('b'), goal('a', { state: { kind: 'waitingProbe', probe: 'probe', held: backoff('turn-9') } })],
      ['b turn-1', 'a turn-9'],
    ],
    [
      'held by the limiter: follows',
      probe,
      [goal('a', { state: { kind: 'waitingSlot', slotAt: NOW, held: backoff('turn-1') } })],
      ['a turn-1'],
    ],
    [
      'its failure at the set’s very time: follows',
      probe,
      [goal('a', { lastFailure: at(NOW - 10_000) })],
      ['a turn-1'],
    ],
    ['its failure after the set: not', probe, [goal('a', { lastFailure: at(NOW - 9_999) })], []],
    ['under a usage limit: not', probe, [goal('a', { state: { kind: 'usageLimited', resetsAt: null } })], []],
    ['given up: not', probe, [goal('a', { state: { kind: 'gaveUp', attempts: 6 } })], []],
    ['backing off with no failure recorded: not', probe, [goal('a', { lastFailure: null })], []],
    ['on another provider: not', probe, [goal('a', { runsOn: 'openai/gpt-4.1' })], []],
    ['another kind of failure: not', probe, [goal('a', {}, 'rateLimitExceeded')], []],
    [
      'the probe itself, backing off already: not its own follower',
      probeOut({ threadId: 'probe', state: backoff('turn-1') }),
      [],
      [],
    ],
    [
      'one set of several: the newest is the probe’s',
      probeOut({ threadId: 'probe', recoveries: [NOW - 70_000, NOW - 65_000, NOW - 10_000] }),
      [goal('a', { lastFailure: at(NOW - 20_000) })],
      ['a turn-1'],
    ],
    ['the probe never went out: none', probeOut({ threadId: 'probe', recoveries: [] }), [goal('a')], []],
    [
      'the probe not grouped (what it runs on unknown): none, not even goals as unknown',
      probeOut({ threadId: 'probe', runsOn: null }),
      [goal('a', { runsOn: null })],
      [],
    ],
  ];
  for (const [name, p, others, following] of rows)
    test(name, () => {
      const scheduled = [...others, p];
      const found = probeFollowers(p, scheduled).map(([w, turn]) => `${w.threadId} ${turn}`);
      assert.deepEqual(found, following);
    });
});

describe('the probe’s half-step try', () => {
  const BASE = 30_000;
  const rows: [string, number, number | null][] = [
    ['its group’s step two bases away → half-way', NOW + 2 * BASE, NOW + BASE],
    ['a step 16 min away → 8 min', NOW + 16 * 60_000, NOW + 8 * 60_000],
    ['a step just under two bases away (the second step’s wait) → none', NOW + 2 * BASE - 1, null],
    ['a step one base away → none', NOW + BASE, null],
  ];
  for (const [name, stepDueAt, half] of rows) test(name, () => assert.equal(halfStepDue(NOW, stepDueAt, BASE), half));
});

describe('a half-step try failed', () => {
  const tried = (patch: Partial<WatchedThread['lastFailure'] & object> = {}) =>
    failed({ recovered: ['turn-1'], lastFailure: { ...failed().lastFailure!, stepDueAt: NOW + 60_000, ...patch } });
  const BASE = 30_000;
  const rows: [string, WatchedThread, number | null][] = [
    ['its try went out and took effect → due with its group’s step', tried(), NOW + 60_000],
    [
      'its group’s step the shortest backoff away (half a base) → due with it',
      tried({ stepDueAt: NOW + BASE / 2 }),
      NOW + BASE / 2,
    ],
    [
      'its group’s step nearer than the shortest backoff → counted (never retried sooner)',
      tried({ stepDueAt: NOW + BASE / 2 - 1 }),
      null,
    ],
    ['its group’s step passed while its turn ran → counted', tried({ stepDueAt: NOW - 5_000 }), null],
    [
      'its try never took effect (its failure not recovered) → counted',
      failed({ lastFailure: tried().lastFailure }),
      null,
    ],
    ['an ordinary probe, no step recorded → counted', failed({ recovered: ['turn-1'] }), null],
    ['no failure before → counted', failed({ lastFailure: null }), null],
  ];
  for (const [name, w, due] of rows)
    test(name, () => assert.equal(halfStepFailed(w.lastFailure, w.recovered, NOW, BASE), due));
});
