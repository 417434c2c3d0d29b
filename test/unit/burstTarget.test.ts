// The leader keeps the window it picked for a burst of decisions that need a person
// (src/leader/notifyTarget.ts, `BurstTarget`): the window that shows them coalesces them into one
// notification, so a burst split across windows would be two. A fake monotonic clock.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BurstTarget, type WindowFocus } from '../../src/leader/notifyTarget';
import type { Decision } from '../../src/model/decision';
import { NOTICE_HOLD_MS, NOTICE_MAX_MS } from '../../src/model/notice';

const w = (viewer: string, focused: boolean, focusedSeq = 0): WindowFocus => ({ viewer, focused, focusedSeq });
const gaveUp = (threadId: string): Decision => ({ type: 'gave-up', threadId, attempts: 6, failedTurnId: 't1' });
const attention = (threadId: string): Decision => ({ type: 'attention', threadId, reason: '401' });
const recovered: Decision = { type: 'recovered', threadId: 'r', attempt: 1, failedTurnId: 't1', how: 'set' };

function world() {
  let now = 0;
  const target = new BurstTarget(() => now);
  return { target, advance: (ms: number) => (now += ms) };
}

test('the focus moving mid-burst: the rest of the burst goes to the window picked for its first', () => {
  const { target, advance } = world();
  assert.equal(target.target([w('A', true, 1), w('B', false)], gaveUp('1')), 'A');
  advance(NOTICE_HOLD_MS - 1);
  assert.equal(target.target([w('A', false, 1), w('B', true, 2)], attention('2')), 'A');
  // Any other decision goes where the focus is now.
  assert.equal(target.target([w('A', false, 1), w('B', true, 2)], recovered), 'B');
});

test('a decision after the burst is over goes to the focused window: a new burst', () => {
  const { target, advance } = world();
  target.target([w('A', true, 1), w('B', false)], gaveUp('1'));
  advance(NOTICE_HOLD_MS);
  assert.equal(target.target([w('A', false, 1), w('B', true, 2)], gaveUp('2')), 'B');
});

test('the cap: a burst that keeps coming is re-picked at most NOTICE_MAX_MS after its first', () => {
  const { target, advance } = world();
  const focusedB = [w('A', false, 1), w('B', true, 2)];
  target.target([w('A', true, 1), w('B', false)], gaveUp('0'));
  const step = NOTICE_HOLD_MS / 2;
  const picks: (string | null)[] = [];
  for (let t = step; t <= NOTICE_MAX_MS; t += step) {
    advance(step);
    picks.push(target.target(focusedB, gaveUp(String(t))));
  }
  assert.deepEqual(picks, [...Array<string>(NOTICE_MAX_MS / step - 1).fill('A'), 'B']);
});

test('the window picked for the burst has gone: the focused one takes the rest', () => {
  const { target, advance } = world();
  target.target([w('A', true, 1), w('B', false)], gaveUp('1'));
  advance(10);
  assert.equal(target.target([w('B', true, 2)], gaveUp('2')), 'B');
  assert.equal(target.target([], gaveUp('3')), null);
});
