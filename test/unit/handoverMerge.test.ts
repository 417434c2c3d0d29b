// The handover's merge, as rules: two leaders' views of the same threads (the new leader's store
// and the old leader's last snapshot) become one, and no failed turn recovered on either side is
// ever recovered again (one recovery per failed turn holds across engines). Pure and fast: a
// regression here fails in milliseconds, not minutes into the fault suite.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HandoverStore, mergeLeaderSnapshot, parseSnapshot } from '../../src/leader/handover';
import { emptySnapshot, type EngineSnapshot } from '../../src/model/snapshot';
import { emptyState, newWatch, RECOVERED_LIMIT, type PersistedState, type WatchedThread } from '../../src/model/watch';
import { MemoryStore } from '../support/memoryStore';

function watch(threadId: string, updatedAt: number, extra: Partial<WatchedThread> = {}): WatchedThread {
  return { ...newWatch(threadId, updatedAt), updatedAt, ...extra };
}

function snapshotOf(watches: WatchedThread[], pausedAt: number | null = null): EngineSnapshot {
  return { ...emptySnapshot('/s.sock', 5_000), pausedAt, watches };
}

function storeWith(...watches: WatchedThread[]): PersistedState {
  const state = emptyState();
  for (const w of watches) state.watches[w.threadId] = w;
  return state;
}

const turns = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe('handover merge: recovered turns', () => {
  it('keeps the union of the turns recovered on both sides, whichever copy wins, each once', () => {
    const stored = storeWith(
      watch('storeNewer', 200, { recovered: ['s1', 'both'] }),
      watch('leaderNewer', 100, { recovered: ['s2', 'both'] }),
    );
    const snap = snapshotOf([
      watch('storeNewer', 150, { recovered: ['both', 'l1'] }),
      watch('leaderNewer', 300, { recovered: ['l2', 'both'] }),
    ]);
    const { state, taken } = mergeLeaderSnapshot(stored, snap);
    assert.deepEqual(taken, ['leaderNewer']);
    assert.deepEqual(state.watches.storeNewer.recovered, ['s1', 'both', 'l1']);
    assert.deepEqual(state.watches.leaderNewer.recovered, ['s2', 'both', 'l2']);
  });

  it("a thread the store never saw keeps exactly the leader's recovered turns, nothing invented", () => {
    const { state } = mergeLeaderSnapshot(emptyState(), snapshotOf([watch('new', 5, { recovered: ['l1', 'l2'] })]));
    assert.deepEqual(state.watches.new.recovered, ['l1', 'l2']);
    const bare = mergeLeaderSnapshot(emptyState(), snapshotOf([watch('bare', 5)])).state;
    assert.deepEqual(bare.watches.bare.recovered, []);
  });

  it('a thread only the store knows keeps its recovered turns untouched', () => {
    const { state } = mergeLeaderSnapshot(storeWith(watch('mine', 5, { recovered: ['s1'] })), snapshotOf([]));
    assert.deepEqual(state.watches.mine.recovered, ['s1']);
  });

  it('the union is bounded to the newest RECOVERED_LIMIT turns; exactly the limit loses nothing', () => {
    const full = turns('s', RECOVERED_LIMIT - 1);
    const exact = mergeLeaderSnapshot(
      storeWith(watch('t', 1, { recovered: full })),
      snapshotOf([watch('t', 2, { recovered: ['last'] })]),
    ).state;
    assert.deepEqual(exact.watches.t.recovered, [...full, 'last']);
    const over = mergeLeaderSnapshot(
      storeWith(watch('t', 1, { recovered: turns('s', RECOVERED_LIMIT) })),
      snapshotOf([watch('t', 2, { recovered: ['n1', 'n2'] })]),
    ).state;
    assert.deepEqual(over.watches.t.recovered, [...turns('s', RECOVERED_LIMIT).slice(2), 'n1', 'n2']);
  });

  it('neither input is modified', () => {
    const stored = storeWith(watch('t', 1, { recovered: ['s1'] }));
    const snap = snapshotOf([watch('t', 2, { recovered: ['l1'] }), watch('u', 2, { recovered: ['l2'] })]);
    const before = structuredClone({ stored, snap });
    mergeLeaderSnapshot(stored, snap);
    assert.deepEqual({ stored, snap }, before);
  });
});

describe('handover merge: which copy of a thread', () => {
  it("the leader's newer copy is taken; on a tie the store's write-ahead copy stays", () => {
    const stored = storeWith(
      watch('tie', 5, { state: { kind: 'running' } }),
      watch('older', 4, { state: { kind: 'running' } }),
    );
    const snap = snapshotOf([
      watch('tie', 5, { state: { kind: 'complete' } }),
      watch('older', 6, { state: { kind: 'complete' } }),
    ]);
    const { state, taken } = mergeLeaderSnapshot(stored, snap);
    assert.deepEqual(taken, ['older']);
    assert.deepEqual([state.watches.tie.state.kind, state.watches.older.state.kind], ['running', 'complete']);
  });
});

describe("handover merge: a person's disarm", () => {
  it('a thread the leader re-armed (its copy newer) is armed again here', () => {
    const stored = storeWith(watch('t', 1, { state: { kind: 'disarmed', at: 1 } }));
    stored.disarmed.t = 1;
    const { state } = mergeLeaderSnapshot(stored, snapshotOf([watch('t', 2, { state: { kind: 'running' } })]));
    assert.equal(state.disarmed.t, undefined);
  });

  it('a disarm the store holds for a thread it has no copy of is kept: nothing newer says otherwise', () => {
    const stored = emptyState();
    stored.disarmed.t = 7;
    const { state } = mergeLeaderSnapshot(stored, snapshotOf([watch('t', 9, { state: { kind: 'running' } })]));
    assert.equal(state.disarmed.t, 7);
  });

  it("the leader's newer disarm is recorded; the store's newer copy keeps the store's disarms", () => {
    const stored = storeWith(watch('mine', 9));
    stored.disarmed.other = 3;
    const snap = snapshotOf([
      watch('d', 5, { state: { kind: 'disarmed', at: 4 } }),
      watch('mine', 2, { state: { kind: 'disarmed', at: 2 } }),
    ]);
    const { state } = mergeLeaderSnapshot(stored, snap);
    assert.deepEqual(state.disarmed, { other: 3, d: 4 });
  });
});

describe('handover store', () => {
  it('tells of a handover only when a thread was taken from the leader', async () => {
    const told: string[][] = [];
    const inner = new MemoryStore(storeWith(watch('t', 9)));
    const store = new HandoverStore(inner, snapshotOf([watch('t', 2)]), (taken) => told.push(taken));
    const { changed } = await store.load();
    assert.deepEqual(told, [], 'nothing was taken: no notice');
    assert.deepEqual(changed, ['t'], "the snapshot's thread may differ from the store (recovered turns joined)");
  });

  it('merges on the first load only, tells what it took, and saves to the inner store with the hint', async () => {
    const told: string[][] = [];
    const inner = new MemoryStore();
    const store = new HandoverStore(inner, snapshotOf([watch('x', 3)]), (taken) => told.push(taken));
    assert.deepEqual(Object.keys((await store.load()).state.watches), ['x']);
    assert.deepEqual(told, [['x']]);
    const second = await store.load();
    assert.deepEqual([Object.keys(second.state.watches), second.changed], [[], undefined], 'the store alone');
    await store.save({ ...emptyState(), pausedAt: 1 }, new Set(['x']));
    assert.deepEqual([inner.saved.pausedAt, inner.lastChanged], [1, new Set(['x'])]);
    const quiet = new HandoverStore(new MemoryStore(), snapshotOf([watch('y', 3)]));
    assert.deepEqual(Object.keys((await quiet.load()).state.watches), ['y'], 'nobody to tell: still taken');
  });

  it("is the inner store's location, and passes compact and close on (an inner store may have neither)", async () => {
    const plain = new HandoverStore(new MemoryStore(), null);
    assert.equal(plain.location, 'memory');
    await plain.compact();
    await plain.close();
    const calls: string[] = [];
    const inner = Object.assign(new MemoryStore(), {
      compact: () => Promise.resolve(void calls.push('compact')),
      close: () => Promise.resolve(void calls.push('close')),
    });
    const store = new HandoverStore(inner, null);
    await store.compact();
    await store.close();
    assert.deepEqual(calls, ['compact', 'close']);
  });
});

describe("the leader's last snapshot, as a follower receives it", () => {
  it('is a snapshot only when the value is one', () => {
    assert.equal(parseSnapshot({ nope: true }), null);
    assert.equal(parseSnapshot(null), null);
    const snap = snapshotOf([watch('x', 3, { recovered: ['r1'] })], 4);
    assert.deepEqual(parseSnapshot(JSON.parse(JSON.stringify(snap))), snap);
  });
});
