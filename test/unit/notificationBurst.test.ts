// One notification per burst (src/views/notificationBurst.ts): goals that need a person within a
// few seconds of each other are told in one notification, a single goal keeps today's text and
// buttons, a burst shown is never added to, and the `notifications` setting decides. A fake clock:
// time moves only when the test says so.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Decision } from '../../src/model/decision';
import { emptySnapshot, type EngineSnapshot } from '../../src/model/snapshot';
import { newWatch } from '../../src/model/watch';
import { BURST_HOLD_MS, BURST_MAX_MS, BurstNotifier, type BurstTimers } from '../../src/views/notificationBurst';
import { RecordedWindow } from '../support/recordedWindow';

const SHOW_COMMAND = 'codexGoalRecovery.watchedGoals.focus';

class FakeTimers implements BurstTimers {
  private at = 0;
  private timers: { at: number; callback: () => void }[] = [];
  now(): number {
    return this.at;
  }
  set(callback: () => void, ms: number): () => void {
    const timer = { at: this.at + ms, callback };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((t) => t !== timer));
  }
  /** Moves time on by `ms`, firing each timer due on the way at its own time. */
  advance(ms: number): void {
    const end = this.at + ms;
    for (;;) {
      const next = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.at = next.at;
      next.callback();
    }
    this.at = end;
  }
}

function world() {
  const timers = new FakeTimers();
  const window = new RecordedWindow(() => timers.now());
  const notifier = new BurstNotifier(window, SHOW_COMMAND, timers);
  const snap: EngineSnapshot = emptySnapshot('/tmp/daemon.sock', 0);
  for (let i = 1; i <= 30; i++) snap.watches.push({ ...newWatch(`t-${i}`, 0), title: `Goal ${i}` });
  const gaveUp = (i: number): Decision => ({ type: 'gave-up', threadId: `t-${i}`, attempts: 6, failedTurnId: 'x' });
  const attention = (i: number): Decision => ({ type: 'attention', threadId: `t-${i}`, reason: '401 Unauthorized' });
  return { timers, window, notifier, snap, gaveUp, attention };
}

describe('one notification per burst', () => {
  it("one goal alone: today's text and buttons, after the hold; its buttons act on that goal", async () => {
    const { timers, window, notifier, snap, gaveUp } = world();
    notifier.decided(gaveUp(3), snap);
    timers.advance(BURST_HOLD_MS - 1);
    assert.equal(window.shown.length, 0, 'shown before the hold was over');
    timers.advance(1);
    assert.deepEqual(
      window.shown.map(({ text, buttons }) => ({ text, buttons })),
      [{ text: 'Codex Goal Recovery gave up on "Goal 3" after 6 tries.', buttons: ['Retry now', 'Open rollout'] }],
    );
    await window.shown[0].click('Retry now');
    assert.deepEqual(window.ran, [{ command: 'codexGoalRecovery.retryNow', arg: { threadId: 't-3' } }]);
  });

  it('an attention on a goal that cannot be retried: its reason, Open rollout only', () => {
    const { timers, window, notifier, snap, attention } = world();
    notifier.decided(attention(2), snap);
    timers.advance(BURST_HOLD_MS);
    assert.deepEqual(
      window.shown.map(({ text, buttons }) => ({ text, buttons })),
      [{ text: '"Goal 2" needs attention: 401 Unauthorized', buttons: ['Open rollout'] }],
    );
  });

  it('12 goals within the window: one "12 goals need attention"; Show reveals the view', async () => {
    const { timers, window, notifier, snap, gaveUp, attention } = world();
    for (let i = 1; i <= 12; i++) {
      notifier.decided(i % 2 ? gaveUp(i) : attention(i), snap);
      timers.advance(BURST_HOLD_MS / 4); // each within the hold of the one before, 5.5 s in all
    }
    timers.advance(BURST_HOLD_MS);
    assert.deepEqual(
      window.shown.map(({ text, buttons }) => ({ text, buttons })),
      [{ text: '12 goals need attention', buttons: ['Show', "Don't show again"] }],
    );
    await window.shown[0].click('Show');
    assert.deepEqual(window.ran, [{ command: SHOW_COMMAND }]);
  });

  it("Don't show again sets notifications to none: the next burst shows nothing", async () => {
    const { timers, window, notifier, snap, gaveUp } = world();
    notifier.decided(gaveUp(1), snap);
    notifier.decided(gaveUp(2), snap);
    timers.advance(BURST_HOLD_MS);
    await window.shown[0].click("Don't show again");
    assert.equal(window.setting, 'none');
    assert.deepEqual(window.ran, []);
    notifier.decided(gaveUp(3), snap);
    timers.advance(BURST_MAX_MS);
    assert.equal(window.shown.length, 1);
  });

  it('a goal told twice in one burst counts once', () => {
    const { timers, window, notifier, snap, gaveUp, attention } = world();
    notifier.decided(attention(4), snap);
    notifier.decided(gaveUp(4), snap);
    timers.advance(BURST_HOLD_MS);
    assert.deepEqual(
      window.shown.map((s) => s.text),
      ['Codex Goal Recovery gave up on "Goal 4" after 6 tries.'],
    );
  });

  it('two bursts apart: two notifications; one shown is never added to', () => {
    const { timers, window, notifier, snap, gaveUp } = world();
    notifier.decided(gaveUp(1), snap);
    notifier.decided(gaveUp(2), snap);
    timers.advance(BURST_HOLD_MS);
    assert.equal(window.shown.length, 1, 'the first burst was not shown at the end of its hold');
    notifier.decided(gaveUp(3), snap);
    notifier.decided(gaveUp(4), snap);
    notifier.decided(gaveUp(5), snap);
    timers.advance(BURST_HOLD_MS);
    assert.deepEqual(
      window.shown.map((s) => [s.at, s.text]),
      [
        [BURST_HOLD_MS, '2 goals need attention'],
        [2 * BURST_HOLD_MS, '3 goals need attention'],
      ],
    );
  });

  it('the cap: a burst that keeps coming is shown at most BURST_MAX_MS after its first', () => {
    const { timers, window, notifier, snap, gaveUp } = world();
    const step = BURST_HOLD_MS / 4; // 50 goals, one every 0.5 s: 25 s of them
    for (let i = 1; i <= 50; i++) {
      notifier.decided(gaveUp(i), snap);
      timers.advance(step);
    }
    timers.advance(BURST_HOLD_MS);
    const perBurst = BURST_MAX_MS / step;
    assert.deepEqual(
      window.shown.map((s) => [s.at, s.text]),
      [
        [BURST_MAX_MS, `${perBurst} goals need attention`],
        [2 * BURST_MAX_MS, `${perBurst} goals need attention`],
        [49 * step + BURST_HOLD_MS, `${50 - 2 * perBurst} goals need attention`],
      ],
    );
  });

  it('notifications none: nothing, neither a burst nor a goal alone nor a recovery', () => {
    const { timers, window, notifier, snap, gaveUp } = world();
    window.setting = 'none';
    notifier.decided(gaveUp(1), snap);
    timers.advance(BURST_MAX_MS);
    for (let i = 1; i <= 12; i++) notifier.decided(gaveUp(i), snap);
    notifier.decided({ type: 'recovered', threadId: 't-1', attempt: 1, failedTurnId: 'x', how: 'set' }, snap);
    timers.advance(BURST_MAX_MS);
    assert.deepEqual([window.shown, window.infos], [[], []]);
  });

  it('a decision that came under none is never shown, even if the setting changes before the burst ends', () => {
    const { timers, window, notifier, snap, gaveUp } = world();
    window.setting = 'none';
    notifier.decided(gaveUp(1), snap);
    window.setting = 'attention';
    timers.advance(BURST_MAX_MS);
    assert.deepEqual(window.shown, []);
  });

  it('none chosen while a burst is held: it is not shown', () => {
    const { timers, window, notifier, snap, gaveUp } = world();
    notifier.decided(gaveUp(1), snap);
    notifier.decided(gaveUp(2), snap);
    window.setting = 'none';
    timers.advance(BURST_MAX_MS);
    assert.deepEqual(window.shown, []);
  });

  it('recoveries only with all, at once and one by one, as before; routine decisions never', () => {
    const { timers, window, notifier, snap } = world();
    const recovered = (i: number): Decision => ({
      type: 'recovered',
      threadId: `t-${i}`,
      attempt: 1,
      failedTurnId: 'x',
      how: 'set',
    });
    notifier.decided(recovered(1), snap);
    notifier.decided({ type: 'armed', threadId: 't-1', title: 'Goal 1' }, snap);
    window.setting = 'all';
    notifier.decided(recovered(2), snap);
    assert.deepEqual(window.infos, ['Codex Goal Recovery re-activated "Goal 2" (attempt 1).']);
    timers.advance(BURST_MAX_MS);
    assert.deepEqual(window.shown, []);
  });

  it('disposed (the window closes): what was held is dropped', () => {
    const { timers, window, notifier, snap, gaveUp } = world();
    notifier.decided(gaveUp(1), snap);
    notifier.dispose();
    timers.advance(BURST_MAX_MS);
    assert.deepEqual(window.shown, []);
  });
});
