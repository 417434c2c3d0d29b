// The saver (src/core/saving.ts): what a pass's hold does to the saves that can wait. Held, an
// announcement waits for the pass's own save, or for the lazy save a second later, whichever
// comes first; it is never announced before the save that holds it. No engine: a fake clock and
// a store in memory.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import type { Decision } from '../../src/model/decision';
import { Saver } from '../../src/core/saving';
import { emptyState, newWatch, type PersistedState } from '../../src/model/watch';
import { FakeClock } from '../support/fakeClock';
import { MemoryStore } from '../support/memoryStore';
import { HandoverStore } from '../../src/leader/handover';
import { JsonFileStore } from '../../src/store/jsonFileStore';
import { turns } from '../support/wait';

function saverWorld(): {
  saver: Saver;
  clock: FakeClock;
  store: MemoryStore;
  state: PersistedState;
  /** Each announcement, with whether the store held its thread when it went out. */
  said: Array<{ decision: Decision; saved: boolean }>;
  arm: (threadId: string) => void;
  /** How many times the views were told of a change. */
  viewsTold: () => number;
  /** Why the saver may not act (the lease's fence), or null. */
  fenced: { reason: string | null };
} {
  const clock = new FakeClock();
  const store = new MemoryStore();
  const state = emptyState();
  const said: Array<{ decision: Decision; saved: boolean }> = [];
  const fenced: { reason: string | null } = { reason: null };
  let told = 0;
  const saver = new Saver({
    onChange: () => (told += 1),
    store,
    clock,
    onDecision: (decision) =>
      said.push({ decision, saved: 'threadId' in decision && store.saved.watches[decision.threadId!] !== undefined }),
    state: () => state,
    track: (p) => p,
    stopped: () => false,
    fence: () => fenced.reason,
  });
  const arm = (threadId: string): void => {
    state.watches[threadId] = newWatch(threadId, clock.now());
    saver.emit({ type: 'armed', threadId, title: threadId });
  };
  return { saver, clock, store, state, said, arm, fenced, viewsTold: () => told };
}

describe('Saver and the fence (src/leader/lease.ts)', () => {
  test('a leader whose lease ran out saves nothing and announces nothing', async () => {
    const { saver, store, said, arm, fenced } = saverWorld();
    arm('thread-1');
    await turns(5);
    assert.equal(store.saves, 1);
    fenced.reason = 'lease lost';
    arm('thread-2');
    await turns(5);
    assert.equal(await saver.persist(), false);
    await saver.compact();
    assert.equal(store.saves, 1, 'saved past the fence');
    assert.equal(store.saved.watches['thread-2'], undefined);
    assert.deepEqual(
      said.map((s) => s.decision.type === 'armed' && s.decision.threadId),
      ['thread-1'],
      'announced past the fence',
    );
  });

  test('a lease lost while the save was written: saved, but not announced', async () => {
    const { store, said, arm, fenced } = saverWorld();
    const save = store.save.bind(store);
    store.save = async (...args) => {
      await save(...args);
      fenced.reason = 'lease lost during the save';
    };
    arm('thread-1');
    await turns(5);
    assert.equal(store.saves, 1);
    assert.equal(said.length, 0, 'announced by a leader that lost its lease during the save');
  });

  // Found by test/faults/stalls.test.ts: a runner woken after its lease ran out dropped its engine
  // with the journal still open, and Node closed the descriptor on garbage collection with a
  // warning on the runner's stderr. The fenced stop writes nothing, but lets go of the journal.
  test("a stale leader's stop writes nothing and leaves no journal open (the runner's file store)", async (t) => {
    if (process.platform !== 'linux') return t.skip('reads /proc/self/fd');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-saver-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'state.json');
    const store = new HandoverStore(new JsonFileStore(file), null);
    const state = (await store.load()).state;
    const fenced: { reason: string | null } = { reason: null };
    const saver = new Saver({
      store,
      clock: new FakeClock(),
      onDecision: () => undefined,
      state: () => state,
      track: (p) => p,
      stopped: () => false,
      fence: () => fenced.reason,
    });
    const journalOpen = () =>
      fs.readdirSync('/proc/self/fd').some((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`) === `${file}.journal`;
        } catch {
          return false;
        }
      });
    for (const id of ['thread-1', 'thread-2']) {
      state.watches[id] = newWatch(id, 0);
      saver.mark(id);
      assert.equal(await saver.persist(), true);
    }
    assert.ok(journalOpen(), 'the second save did not append to the journal: nothing to check');
    const journal = fs.readFileSync(`${file}.journal`, 'utf8');
    const snapshot = fs.readFileSync(file, 'utf8');
    fenced.reason = 'lease lost';
    await saver.compact();
    assert.equal(journalOpen(), false, 'the journal is still open after the stale leader stopped');
    assert.equal(fs.readFileSync(`${file}.journal`, 'utf8'), journal, 'the stale leader wrote its journal');
    assert.equal(fs.readFileSync(file, 'utf8'), snapshot, 'the stale leader wrote its snapshot');
  });
});

describe('Saver.hold', () => {
  test('unheld: an announcement goes out after the save of the next turn', async () => {
    const { store, said, arm } = saverWorld();
    arm('thread-1');
    await turns(5);
    assert.equal(store.saves, 1);
    assert.deepEqual(
      said.map((s) => [s.decision.type, s.saved]),
      [['armed', true]],
    );
  });

  test("held: announcements wait for the pass's save, which holds them all; nothing is saved per turn", async () => {
    const { saver, store, said, arm } = saverWorld();
    const letGo = saver.hold();
    for (let i = 1; i <= 5; i++) {
      arm(`thread-${i}`);
      await turns(5);
    }
    assert.equal(store.saves, 0, 'saved while held');
    assert.equal(said.length, 0, 'announced while held, before any save');
    await saver.persist(); // the pass's own save
    assert.equal(store.saves, 1);
    assert.equal(said.length, 5);
    assert.ok(
      said.every((s) => s.saved),
      'announced before the save that holds it',
    );
    letGo();
    await turns(5);
    assert.equal(store.saves, 1, 'nothing was held since the last save: no save at letting go');
  });

  test('held: the last to let go saves what was held, then announces it', async () => {
    const { saver, store, said, arm } = saverWorld();
    const first = saver.hold();
    const second = saver.hold();
    arm('thread-1');
    await turns(5);
    first();
    first(); // letting go twice counts once
    await turns(5);
    assert.equal(store.saves, 0, 'saved while another pass still holds');
    second();
    await turns(5);
    assert.equal(store.saves, 1);
    assert.deepEqual(
      said.map((s) => [s.decision.type, s.saved]),
      [['armed', true]],
    );
  });

  test('held: what waits is saved and announced a second later, whatever the pass does', async () => {
    const { saver, clock, store, said, arm } = saverWorld();
    saver.hold(); // a pass whose look waits on the daemon: never lets go here
    arm('thread-1');
    await clock.advance(999);
    await turns(5);
    assert.equal(said.length, 0, 'announced before the lazy save');
    await clock.advance(1);
    await turns(5);
    assert.equal(store.saves, 1);
    assert.deepEqual(
      said.map((s) => [s.decision.type, s.saved]),
      [['armed', true]],
    );
  });
});

describe('Saver: what a save holds, and who hears of it', () => {
  test('a change the views show reaches them after the save that holds it, once; a save with nothing new tells them nothing', async () => {
    const { saver, store, viewsTold } = saverWorld();
    assert.equal(await saver.persist(), true);
    assert.equal(viewsTold(), 0, 'the views were told of a change before any');
    store.hold();
    saver.changed();
    await turns(5);
    assert.equal(viewsTold(), 0, 'the views were told before the save that holds the change');
    store.open();
    await turns(5);
    assert.equal(viewsTold(), 1);
    await saver.persist();
    assert.equal(viewsTold(), 1, 'a save with nothing new told the views');
    saver.emit({ type: 'warning', message: 'something to say' });
    await turns(5);
    assert.equal(viewsTold(), 2, 'an announcement did not reach the views');
  });

  test("a decision about a thread saves that thread with it, marked or not; one about every thread ('*') or none names none", async () => {
    const { saver, store, state, clock } = saverWorld();
    state.watches['thread-1'] = newWatch('thread-1', clock.now());
    saver.emit({ type: 'skipped', threadId: 'thread-1', reason: 'goal cleared' });
    await turns(5);
    assert.deepEqual([...(store.lastChanged ?? ['every watch'])], ['thread-1']);
    saver.emit({ type: 'skipped', threadId: '*', reason: 'auto-recovery paused by the user' });
    saver.emit({ type: 'warning', message: 'something to say' });
    await turns(5);
    assert.deepEqual([...(store.lastChanged ?? ['every watch'])], []);
  });

  test('after a save that failed, the next one writes every watch; after one that landed, the marked ones', async () => {
    const { saver, store, state, clock, said } = saverWorld();
    state.watches['thread-1'] = newWatch('thread-1', clock.now());
    saver.mark('thread-1');
    await saver.persist();
    assert.deepEqual([...(store.lastChanged ?? ['every watch'])], ['thread-1']);
    store.failing = 'no space left on device';
    saver.mark('thread-1');
    assert.equal(await saver.persist(), false);
    const last = said.at(-1)?.decision;
    assert.match(last?.type === 'warning' ? last.message : '', /could not save state/);
    store.failing = null;
    assert.equal(await saver.persist(), true);
    assert.equal(store.lastChanged, undefined, 'after a failed save, only the marked watches were written');
    saver.markAll();
    await saver.persist();
    assert.equal(store.lastChanged, undefined, 'markAll: only the marked watches were written');
  });

  test('the slowest of the last 16 saves, timed on the monotonic clock (a wall clock that jumps meanwhile is not a slow disk)', async () => {
    const { saver, store, clock } = saverWorld();
    assert.equal(saver.slowestMs(), 0);
    const saveTaking = (ms: number, jump = 0) =>
      (store.onSave = () => {
        clock.suspend(ms); // time passes while the disk writes
        clock.jump(jump);
      });
    saveTaking(500);
    await saver.persist();
    saveTaking(10, 3_600_000);
    for (let i = 0; i < 15; i++) await saver.persist();
    assert.equal(saver.slowestMs(), 500, 'the 16th save back was forgotten');
    await saver.persist();
    assert.equal(saver.slowestMs(), 10, 'a save 17 saves back still counts');
  });
});
