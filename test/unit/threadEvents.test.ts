// What the daemon's thread-lifecycle notifications do to a watch, at once (not at the next resync,
// a minute later): they reach every connection (docs/daemon-behaviour.md). A goal cleared in Codex
// (`thread/goal/cleared`): the watch goes, said once. A thread the daemon closes (`thread/closed`)
// or reports not loaded (`thread/status/changed` notLoaded): shown "not loaded"; when a client loads
// it again, the engine subscribes anew (the close ended its subscription) and watches it as before.
// And "Pause goal", a person's own set (origin "user"): Codex records it as theirs, so the engine
// shows it as the person's and never resumes it. The fake daemon (test/support/fakeDaemon.ts) stands
// for the real one; the clock moves only where a test says so, so no resync does the work instead.
//
// Options: the shipped defaults (TEST_OPTIONS).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { armedHarness, type Harness } from '../support/engineHarness';

const T1 = 'thread-1';
const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
});

const skipped = (h: Harness) =>
  h.decisions.flatMap((d) => (d.type === 'skipped' && d.threadId === T1 ? [d.reason] : []));

describe("the daemon's thread events", () => {
  it('a goal cleared in Codex: the watch goes at once, said once', async () => {
    const h = await armedHarness([T1], {}, harnesses);
    h.daemon.thread(T1).goal = null;
    h.daemon.notify('thread/goal/cleared', { threadId: T1 });
    await h.settle();
    assert.equal(h.engine.watch(T1), undefined);
    assert.deepEqual(skipped(h), ['goal cleared']);
  });

  for (const how of ['thread/closed', 'thread/status/changed notLoaded'] as const) {
    it(`${how}: shown not loaded at once; loaded again by a client, subscribed anew and watched as before`, async () => {
      const h = await armedHarness([T1], {}, harnesses);
      const t = h.daemon.thread(T1);
      t.loaded = false;
      if (how === 'thread/closed') h.daemon.notify('thread/closed', { threadId: T1 });
      else h.daemon.notify('thread/status/changed', { threadId: T1, status: { type: 'notLoaded' } });
      await h.settle();
      assert.equal(h.engine.watch(T1)?.state.kind, 'unloaded');
      const resumes = h.daemon.count('thread/resume');
      // A person opens the thread in their Codex app: the daemon loads it, its turn runs.
      t.loaded = true;
      t.status = { type: 'active', activeFlags: [] };
      h.daemon.notify('thread/status/changed', { threadId: T1, status: t.status });
      await h.settle();
      assert.equal(h.engine.watch(T1)?.state.kind, 'running');
      assert.equal(h.daemon.count('thread/resume') - resumes, 1, 'not subscribed anew once loaded again');
    });
  }
});

describe('Pause goal', () => {
  it("pauses the goal in Codex as the person's own set: Codex records it, the engine shows it as theirs and never resumes it", async () => {
    const h = await armedHarness([T1], {}, harnesses);
    await h.engine.commands.pauseGoal(T1);
    await h.settle();
    assert.equal(h.daemon.thread(T1).goal?.status, 'paused');
    const s = h.engine.watch(T1)?.state;
    assert.ok(s?.kind === 'userIntent' && s.requested === 'paused', JSON.stringify(s));
    assert.equal(h.engine.watch(T1)?.goal?.status, 'paused');
    await h.advance(10 * 60_000);
    assert.equal(h.daemon.thread(T1).goal?.status, 'paused', 'the engine resumed a goal the person paused');
  });

  it('not connected: refused, saying why', async () => {
    const h = await armedHarness([T1], {}, harnesses);
    h.daemon.down = true;
    h.daemon.disconnect();
    await h.settle();
    await assert.rejects(h.engine.commands.pauseGoal(T1), /^Error: not connected to the Codex daemon \(.+\)$/);
  });
});
