// A goal event whose status is older than one told before it: measured on the real daemon
// (docs/daemon-behaviour.md (s)), a connection's `thread/resume` re-emits the goal as it read it,
// and that copy can leave after the completion's own `thread/goal/updated`. After the look a goal
// event with news asks for (a status or `updatedAt` not known), the engine reads the goal, and looks
// again if it differs. Both orders are forced here (the fake's reordering mode keeps two goal events
// of one transition in order).
// Shipped defaults (DEFAULT_OPTIONS).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { testGoal, testTurn } from '../support/fakeDaemon';
import { armedHarness, type Harness } from '../support/engineHarness';

const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
  for (const h of harnesses) fs.rmSync(h.dir, { recursive: true, force: true });
});

/** thread-1, armed, its goal's turn running; then the goal completes and the turn ends. */
async function completed(): Promise<{ h: Harness; stale: unknown; fresh: unknown }> {
  const h = await armedHarness(['thread-1'], {}, harnesses);
  const t = h.daemon.thread();
  t.goal = testGoal('thread-1', 'complete');
  t.turn = testTurn('turn-1', 'completed');
  t.status = { type: 'idle' };
  // The copy a resume read while the turn still ran: active, in the same clock second.
  const stale = { threadId: 'thread-1', turnId: null, goal: { ...t.goal, status: 'active' } };
  const fresh = { threadId: 'thread-1', turnId: 'turn-1', goal: t.goal };
  return { h, stale, fresh };
}

describe('a goal event older than the one before it', () => {
  for (const order of ['the completion, then the stale copy', 'the stale copy, then the completion'] as const) {
    it(`${order}: the goal is complete, and so is the watch`, async () => {
      const { h, stale, fresh } = await completed();
      const [first, second] = order.startsWith('the completion') ? [fresh, stale] : [stale, fresh];
      h.daemon.notify('thread/goal/updated', first);
      h.daemon.notify('thread/goal/updated', second);
      h.daemon.notify('thread/status/changed', { threadId: 'thread-1', status: { type: 'idle' } });
      await h.settle();
      const w = h.engine.watch('thread-1')!;
      assert.equal(w.goal?.status, 'complete', 'the last goal event was taken for what the daemon holds');
      assert.equal(w.state.kind, 'complete');
      assert.equal(h.daemon.count('thread/goal/set'), 0);
    });
  }

  it('a goal event while the goal is read: the answer, older than that event, is not kept; the next look reads again', async () => {
    const h = await armedHarness(['thread-1'], {}, harnesses);
    const t = h.daemon.thread();
    const done = testGoal('thread-1', 'complete');
    let reads = 0;
    h.daemon.before = (m) => {
      if (m.method !== 'thread/goal/get' || reads++ > 0) return;
      // The goal completes while this read is on its way: its event leaves before the answer,
      // which was read before (still active); the daemon holds the completion once it is sent.
      h.daemon.notify('thread/goal/updated', { threadId: 'thread-1', turnId: 'turn-1', goal: done });
      queueMicrotask(() => {
        t.goal = done;
        t.turn = testTurn('turn-1', 'completed');
        t.status = { type: 'idle' };
      });
    };
    // News of the goal while the turn runs (updated: a newer `updatedAt`): the look reads the goal.
    t.goal = testGoal('thread-1', 'active');
    h.daemon.notify('thread/goal/updated', { threadId: 'thread-1', turnId: null, goal: { ...t.goal } });
    await h.settle();
    assert.ok(reads >= 2, `the goal was read ${reads} time(s)`);
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.goal?.status, 'complete', 'an answer older than the event before it was kept');
    assert.equal(w.state.kind, 'complete');
  });

  it('a copy of the goal known (a resume’s, a token count’s): no read, the count shown', async () => {
    // Each arming's resume and each turn's token count bring such a copy: read again, they cost one
    // `thread/goal/get` each (10,000 threads armed: 10,000 reads more).
    const h = await armedHarness(['thread-1'], {}, harnesses);
    const t = h.daemon.thread();
    const reads = h.daemon.count('thread/goal/get');
    h.daemon.notify('thread/goal/updated', { threadId: 'thread-1', turnId: null, goal: { ...t.goal } });
    h.daemon.notify('thread/goal/updated', {
      threadId: 'thread-1',
      turnId: 'turn-1',
      goal: { ...t.goal, tokensUsed: 900 },
    });
    await h.settle();
    assert.equal(h.daemon.count('thread/goal/get'), reads);
    assert.equal(h.engine.watch('thread-1')?.goal?.tokensUsed, 900);
    assert.equal(h.engine.watch('thread-1')?.state.kind, 'running');
  });

  it("a resync's read of the goal overtaken by a status event: the goal, changed while no event told it, is read again", async () => {
    // As after a reconnect: the goal completed while the engine was away (no goal event reached
    // it); the resync reads the goal, and the thread's status event (not about the goal) comes first.
    const h = await armedHarness(['thread-1'], {}, harnesses);
    const t = h.daemon.thread();
    t.goal = testGoal('thread-1', 'complete');
    t.turn = testTurn('turn-1', 'completed');
    let reads = 0;
    h.daemon.before = (m) => {
      if (m.method !== 'thread/goal/get' || reads++ > 0) return;
      t.status = { type: 'idle' };
      h.daemon.notify('thread/status/changed', { threadId: 'thread-1', status: t.status });
    };
    await h.reconcile();
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.goal?.status, 'complete', 'the goal the overtaken read found was never read again');
    assert.equal(w.state.kind, 'complete');
  });
});
