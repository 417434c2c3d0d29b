// No hidden waits (issue 10): a recovery that is due but held by the global limiter shows as
// `waitingSlot`, with when its slot is expected, in the state, the tree's words and the
// snapshot; a blocked goal whose failed turn has not ended yet shows as `turnEnding`.
// Shipped defaults (DEFAULT_OPTIONS): backoff base 30 s (jitter pinned to the full delay), a
// burst of 3 recoveries then one per 5 s, the 200 ms preparation. The fake daemon is strict.
// The goals run on providers of their own (`ownProviders`): failures that shared one outage
// would wait for one probe (test/unit/outageProbe.test.ts) instead of meeting the limiter.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { dueAt } from '../../src/model/queries';
import { describeState } from '../../src/model/stateText';
import { FakeClock } from '../support/fakeClock';
import { FakeDaemon } from '../support/fakeDaemon';
import { makeHarness, type Harness } from '../support/engineHarness';
import { failByEvents, ownProviders } from '../support/fleet';
import { JsonFileStore } from '../../src/store/jsonFileStore';

const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
  for (const h of harnesses) fs.rmSync(h.dir, { recursive: true, force: true });
});

async function armed(ids: string[]): Promise<Harness> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-waiting-'));
  const daemon = new FakeDaemon(dir);
  for (const id of ids) daemon.addThread(id);
  ownProviders(daemon, ids);
  const h = await makeHarness({ dir, daemon });
  harnesses.push(h);
  return h;
}

describe('waiting states', () => {
  it('a due recovery the limiter holds is waitingSlot, counting down to its slot, then recovered', async () => {
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const h = await armed(ids);
    for (const id of ids) failByEvents(h.daemon, id, `${id}-turn-1`);
    await h.settle();
    const due = dueAt(h.engine.watch('a')!)!;
    await h.advance(due - h.clock.now());
    assert.equal(h.daemon.count('thread/goal/set'), 3, 'the burst');
    const held = ids.map((id) => h.engine.watch(id)!).filter((w) => w.state.kind === 'waitingSlot');
    assert.equal(held.length, 2, `held: ${JSON.stringify(ids.map((id) => h.engine.watch(id)!.state))}`);
    // Which goals the burst took depends on the order their looks ended (real file reads): the
    // goal held first is the one with the sooner slot, whatever its id.
    const slotOf = (w: (typeof held)[number]) => (w.state.kind === 'waitingSlot' ? w.state.slotAt : 0);
    held.sort((x, y) => slotOf(x) - slotOf(y));
    const slots = held.map(slotOf);
    const interval = DEFAULT_OPTIONS.limiterIntervalMs;
    assert.ok(
      slots[0] - h.clock.now() > interval - 1_000 && slots[0] - h.clock.now() <= interval + 1_000,
      `${slots[0] - h.clock.now()}`,
    );
    assert.equal(slots[1] - slots[0], interval, 'the next one a slot later');
    const now = h.clock.now();
    // Each counts down to its own slot, give or take the second the countdown rounds to (shipped:
    // 0:04–0:06, then 0:09–0:11).
    const countdown = (ms: number) =>
      new RegExp(
        `^waiting for a recovery slot · next in 0:(${[-1, 0, 1].map((d) => String(ms / 1000 + d).padStart(2, '0')).join('|')})$`,
      );
    assert.match(describeState(held[0], now, DEFAULT_OPTIONS.maxAttempts), countdown(interval));
    assert.match(describeState(held[1], now, DEFAULT_OPTIONS.maxAttempts), countdown(2 * interval));
    const snap = h.engine.snapshot();
    assert.equal(snap.watches.filter((w) => w.state.kind === 'waitingSlot').length, 2, 'the views see it');
    assert.ok(snap.nextDueAt !== null && snap.nextDueAt > now, 'the next action is the slot, not a countdown at zero');
    await h.advance(interval);
    assert.equal(h.daemon.count('thread/goal/set'), 4);
    assert.equal(ids.map((id) => h.engine.watch(id)!).filter((w) => w.state.kind === 'waitingSlot').length, 1);
    await h.advance(interval);
    assert.equal(h.daemon.count('thread/goal/set'), 5);
    assert.equal(ids.map((id) => h.engine.watch(id)!).filter((w) => w.state.kind === 'waitingSlot').length, 0);
  });

  it('Pause auto-recovery releases what the limiter held: each shows as scheduled again', async () => {
    const ids = ['a', 'b', 'c', 'd'];
    const h = await armed(ids);
    for (const id of ids) failByEvents(h.daemon, id, `${id}-turn-1`);
    await h.settle();
    await h.advance(dueAt(h.engine.watch('a')!)! - h.clock.now());
    assert.equal(ids.filter((id) => h.engine.watch(id)!.state.kind === 'waitingSlot').length, 1);
    await h.engine.commands.pauseAll();
    assert.equal(ids.filter((id) => h.engine.watch(id)!.state.kind === 'waitingSlot').length, 0);
    assert.equal(ids.filter((id) => h.engine.watch(id)!.state.kind === 'backoff').length, 1);
    await h.advance(60_000);
    assert.equal(h.daemon.count('thread/goal/set'), 3, 'nothing sent while paused');
  });

  it('a goal blocked while its failed turn has not ended is turnEnding; the end decides', async () => {
    const h = await armed(['thread-1']);
    const t = h.daemon.thread('thread-1');
    t.turn.status = 'inProgress';
    h.daemon.failWithEvents('thread-1', { phase: 'goal' }); // Codex blocks the goal first (§a)
    await h.settle();
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.state.kind, 'turnEnding');
    assert.equal(describeState(w, h.clock.now(), DEFAULT_OPTIONS.maxAttempts), 'stopped · waiting for its turn to end');
    h.daemon.failWithEvents('thread-1', { phase: 'turn' });
    await h.settle();
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'backoff');
    await h.advance(dueAt(h.engine.watch('thread-1')!)! - h.clock.now());
    assert.equal(h.daemon.count('thread/goal/set'), 1);
  });
});

describe('a restart while recoveries wait for their slot', () => {
  // Restarts like life: by a crash (dropped without stop(), its store holding only what it
  // durably wrote) and by a clean stop. Shipped defaults (a burst of 3, then one per 5 s).
  for (const how of ['crash', 'stop'] as const) {
    it(`after a ${how}, each held recovery goes out once, and none stays shown as waiting`, async () => {
      const ids = ['a', 'b', 'c', 'd', 'e'];
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-waiting-'));
      const statePath = path.join(dir, 'state.json');
      const daemon = new FakeDaemon(dir);
      for (const id of ids) daemon.addThread(id);
      ownProviders(daemon, ids);
      const clock = new FakeClock();
      const first = await makeHarness({ dir, daemon, clock, store: new JsonFileStore(statePath) });
      harnesses.push(first);
      for (const id of ids) failByEvents(daemon, id, `${id}-turn-1`);
      await first.settle();
      await first.advance(dueAt(first.engine.watch('a')!)! - clock.now());
      assert.equal(daemon.count('thread/goal/set'), 3, 'the burst');
      assert.equal(ids.filter((id) => first.engine.watch(id)!.state.kind === 'waitingSlot').length, 2);
      if (how === 'crash') first.crash();
      else await first.engine.stop();
      const second = await makeHarness({ dir, daemon, clock, store: new JsonFileStore(statePath) });
      harnesses.push(second);
      await second.settle();
      await second.advance(3 * DEFAULT_OPTIONS.limiterIntervalMs);
      assert.equal(daemon.count('thread/goal/set'), 5, 'each failed turn recovered once, across the restart');
      for (const id of ids) assert.deepEqual(second.engine.watch(id)!.recovered, [`${id}-turn-1`], id);
      assert.deepEqual(
        ids.filter((id) => second.engine.watch(id)!.state.kind === 'waitingSlot'),
        [],
        'shown as waiting for a slot after the restart',
      );
      await second.advance(2 * DEFAULT_OPTIONS.resyncMs);
      assert.equal(daemon.count('thread/goal/set'), 5, 'recovered twice');
    });
  }
});

describe('first sight', () => {
  it('a goal read active while events overtook the read is adopted: the block that follows is new', async () => {
    // Found by the transport property (seed 1555733365): an event about the thread arrived
    // between the resync's first goal read and its reply; the look that followed the event saw
    // the goal blocked by then, and the engine left it unadopted although it had read it active.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-waiting-'));
    const daemon = new FakeDaemon(dir);
    daemon.addThread('thread-1');
    let first = true;
    daemon.before = (m) => {
      if (m.method !== 'thread/goal/get' || !first) return;
      first = false;
      // An event first (the reply still says active), then the failure right after the reply.
      daemon.notify('thread/status/changed', { threadId: 'thread-1', status: { type: 'active', activeFlags: [] } });
      setImmediate(() => failByEvents(daemon, 'thread-1', 'turn-1'));
    };
    const h = await makeHarness({ dir, daemon });
    harnesses.push(h);
    await h.settle();
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.state.kind, 'backoff', `state ${JSON.stringify(w.state)}`);
    await h.advance(dueAt(w)! - h.clock.now());
    assert.equal(h.daemon.count('thread/goal/set'), 1);
  });
});
