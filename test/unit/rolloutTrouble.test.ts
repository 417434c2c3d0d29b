// A rollout the engine cannot read as it left it (src/core/humanMarkers.ts): rewritten shorter than
// where the last look stopped (Codex compacted it, a person edited it), or unreadable. Bad input
// gets a clear message and loses nothing: a rewritten rollout is read again from its start and only
// its last marker speaks for the person (the offsets from before mean nothing now); an unreadable
// one is said, and nothing is decided from it.
//
// Options: the shipped defaults (TEST_OPTIONS).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { armedHarness, type Harness } from '../support/engineHarness';
import { goalEventLine, intentLine, testGoal } from '../support/fakeWorld';

const T1 = 'thread-1';
const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
});

const warnings = (h: Harness) => h.decisions.flatMap((d) => (d.type === 'warning' ? [d.message] : []));

/** An armed goal a person paused then resumed: the engine has read its rollout up to its end. */
async function pausedAndResumed(): Promise<Harness> {
  const h = await armedHarness([T1], {}, harnesses);
  h.daemon.human(T1, 'paused');
  await h.settle();
  assert.equal(h.engine.watch(T1)?.state.kind, 'userIntent');
  h.daemon.human(T1, 'active');
  await h.settle();
  assert.equal(h.engine.watch(T1)?.state.kind, 'running');
  return h;
}

describe('a rollout the engine cannot read as it left it', () => {
  it("rewritten shorter: said, read again from its start, and its last marker (a person's pause) speaks", async () => {
    const h = await pausedAndResumed();
    const t = h.daemon.thread(T1);
    const before = fs.statSync(t.path).size;
    // Rewritten: older markers (a resume, then the pause that is now the last), shorter than before.
    const paused = testGoal(T1, 'paused');
    fs.writeFileSync(t.path, intentLine('active') + intentLine('paused') + goalEventLine(paused));
    assert.ok(fs.statSync(t.path).size < before, 'the rewritten rollout is not shorter');
    t.goal = paused;
    h.daemon.notify('thread/goal/updated', { threadId: T1, turnId: null, goal: paused });
    await h.settle();
    assert.deepEqual(warnings(h), [`the rollout ${t.path} was truncated or rewritten; re-read from the start`]);
    const s = h.engine.watch(T1)?.state;
    assert.ok(
      s?.kind === 'userIntent' && s.requested === 'paused',
      `the person's pause did not speak: ${JSON.stringify(s)}`,
    );
  });

  it('unreadable: said with the reason, and the person is not overridden', async () => {
    const h = await pausedAndResumed();
    const t = h.daemon.thread(T1);
    fs.rmSync(t.path);
    fs.mkdirSync(t.path); // a directory where the rollout was: not a file to read
    t.goal = testGoal(T1, 'paused');
    h.daemon.notify('thread/goal/updated', { threadId: T1, turnId: null, goal: t.goal });
    await h.settle();
    assert.deepEqual(warnings(h), [`could not read the rollout: rollout ${t.path} is not a regular file`]);
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'the engine set the goal a person paused');
  });
});
