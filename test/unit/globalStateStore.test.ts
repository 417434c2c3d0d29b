import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { emptyState, newWatch } from '../../src/model/watch';
import { CORRUPT_PREFIX, GlobalStateStore, STATE_KEY } from '../../src/store/globalStateStore';
import { Memento } from '../support/memento';

describe('globalState store', () => {
  it('round-trips the state under its versioned key', async () => {
    const m = new Memento();
    const store = new GlobalStateStore(m);
    assert.deepEqual(await store.load(), { state: emptyState(), problem: null });
    const s = emptyState();
    s.watches['t'] = newWatch('t', 5);
    s.disarmed['u'] = 7;
    await store.save(s);
    s.pausedAt = 99; // later changes are not saved
    assert.equal((m.get<{ version: number }>(STATE_KEY))?.version, 1);
    const loaded = await new GlobalStateStore(m).load();
    assert.equal(loaded.problem, null);
    assert.equal(loaded.state.pausedAt, null);
    assert.deepEqual(Object.keys(loaded.state.watches), ['t']);
    assert.equal(loaded.state.disarmed['u'], 7);
  });

  for (const [name, value] of [
    ['a foreign value', 'hello'],
    ['a wrong shape', { version: 1, watches: 3 }],
    ['a newer version', { version: 99, watches: {} }],
    ['a document of the wrong shape', { version: 1, pausedAt: null, disarmed: {}, watches: [{ threadId: 't' }] }],
    ['a huge value', { version: 1, blob: 'x'.repeat(17 * 1024 * 1024) }],
  ] as const) {
    it(`keeps ${name} aside, reports it and starts clean`, async () => {
      const m = new Memento();
      await m.update(STATE_KEY, value);
      const store = new GlobalStateStore(m, () => Date.UTC(2026, 10, 30));
      const r = await store.load();
      assert.deepEqual(r.state, emptyState());
      assert.match(r.problem ?? '', /could not be used: .+; kept aside as "codexGoalRecovery\.state\.corrupt\.2026-11-30T00:00:00\.000Z"; starting clean/);
      const aside = m.keys().filter((k) => k.startsWith(CORRUPT_PREFIX));
      assert.equal(aside.length, 1);
      assert.deepEqual(m.get(aside[0]!), JSON.parse(JSON.stringify(value)), 'the bad value was not kept');
      assert.equal(m.get(STATE_KEY), undefined);
    });
  }

  it('keeps a value with a bad watch record aside, uses the rest, and stores the part it uses', async () => {
    const m = new Memento();
    const good = newWatch('good', 5);
    const value = { version: 1, pausedAt: null, disarmed: { d: 'soon' }, watches: { good, bad: { threadId: 'bad' } } };
    await m.update(STATE_KEY, value);
    const r = await new GlobalStateStore(m, () => 42).load();
    assert.deepEqual(Object.keys(r.state.watches), ['good']);
    assert.deepEqual(r.state.disarmed, { d: 42 }, 'a disarm with a bad time stays a disarm');
    assert.match(r.problem ?? '', /^the stored watch state: 2 records could not be used \(watch "bad": title: .*; disarm of "d": its time "soon" is unreadable; the thread stays disarmed\); the value as it was is kept as "codexGoalRecovery\.state\.corrupt\.1970-01-01T00:00:00\.042Z"; the other 1 watch loaded$/);
    assert.deepEqual(m.get('codexGoalRecovery.state.corrupt.1970-01-01T00:00:00.042Z'), JSON.parse(JSON.stringify(value)));
    assert.deepEqual(m.get(STATE_KEY), r.state);
    assert.deepEqual(await new GlobalStateStore(m).load(), { state: r.state, problem: null });
  });

  it('two bad values in the same millisecond are kept under two keys', async () => {
    const m = new Memento();
    const store = new GlobalStateStore(m, () => 0);
    await m.update(STATE_KEY, 'one');
    await store.load();
    await m.update(STATE_KEY, 'two');
    await store.load();
    assert.deepEqual(m.keys().filter((k) => k.startsWith(CORRUPT_PREFIX)).sort().map((k) => [k, m.get(k)]), [
      [`${CORRUPT_PREFIX}1970-01-01T00:00:00.000Z`, 'one'],
      [`${CORRUPT_PREFIX}1970-01-01T00:00:00.000Z-1`, 'two'],
    ]);
  });
});
