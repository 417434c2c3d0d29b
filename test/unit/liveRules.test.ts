// What the engine reads from what it knows of a thread right now (src/core/live.ts), one case per
// row: pure, no daemon. Which thread is active, which waits for a person, and when a resume may
// subscribe to it (measured with 0.169.0: resuming an idle thread whose goal is active starts a turn).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isThreadActive, type LiveThread, newLive, resumeIsSafe, turnRuns, waitsForPerson } from '../../src/core/live';
import type { ThreadStatus, Turn } from '../../src/protocol/daemon';

const IDLE: ThreadStatus = { type: 'idle' };
const ACTIVE: ThreadStatus = { type: 'active', activeFlags: [] };
const APPROVAL: ThreadStatus = { type: 'active', activeFlags: ['waitingOnApproval'] };
const turn = (status: Turn['status']) => ({ id: 'turn-1', status, items: [], error: null }) as unknown as Turn;
const live = (patch: Partial<LiveThread> = {}): LiveThread => ({ ...newLive(), ...patch });

describe('a thread as nothing is known of it yet', () => {
  test('no status, no turn, no retry, no approval, not subscribed, loaded, nothing heard (no goal event either)', () =>
    assert.deepEqual(newLive(), {
      status: null,
      turn: null,
      retrying: null,
      approvals: null,
      seq: 0,
      subscribed: false,
      subscribeFailed: false,
      loaded: true,
      needsLook: false,
      goalUnsure: false,
      turnFromEvent: false,
      limitNotice: null,
      requestSince: null,
    }));
});

describe('active, and waiting for a person', () => {
  const rows: [string, ThreadStatus | null, Set<string> | null, boolean, boolean][] = [
    ['not known', null, null, false, false],
    ['idle', IDLE, null, false, false],
    ['systemError', { type: 'systemError' }, null, false, false],
    ['active, no flags', ACTIVE, null, true, false],
    ['active, waiting on an approval', APPROVAL, null, true, true],
    ['idle, an approval request pending', IDLE, new Set(['r1']), false, true],
    ['idle, the approvals all answered', IDLE, new Set(), false, false],
    [
      'flags on a thread not active (never sent so): only an active thread’s count',
      { type: 'systemError', activeFlags: ['waitingOnApproval'] } as unknown as ThreadStatus,
      null,
      false,
      false,
    ],
  ];
  for (const [name, status, approvals, active, person] of rows)
    test(`${name} → active ${active}, a person's ${person}`, () => {
      assert.equal(isThreadActive(status), active);
      assert.equal(waitsForPerson(live({ status, approvals })), person);
    });
});

describe('a resume may subscribe', () => {
  const rows: [string, string | undefined, ThreadStatus | null, Turn | null, boolean, boolean][] = [
    ['an active goal, its thread active', 'active', ACTIVE, null, true, true],
    ['an active goal, its turn in progress (status not known)', 'active', null, turn('inProgress'), true, true],
    [
      'an active goal, idle, its turn completed: never (a resume would start a turn)',
      'active',
      IDLE,
      turn('completed'),
      false,
      false,
    ],
    ['an active goal, nothing known', 'active', null, null, false, false],
    ['an active goal, idle, its turn interrupted', 'active', IDLE, turn('interrupted'), false, false],
    ['a blocked goal, idle', 'blocked', IDLE, turn('failed'), false, true],
    ['a paused goal, idle', 'paused', IDLE, null, false, true],
    ['no goal known', undefined, IDLE, null, false, true],
  ];
  for (const [name, goal, status, t, runs, safe] of rows)
    test(`${name} → ${safe}`, () => {
      assert.equal(turnRuns({ status, turn: t }), runs);
      assert.equal(resumeIsSafe(goal, { status, turn: t }), safe);
    });
});
