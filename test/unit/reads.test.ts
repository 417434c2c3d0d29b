// The small reads of src/core/reads.ts, as rules: what two reads at once throw (the log line of a
// failed look names every call that failed; a lost connection alone stays one, for the reconnect);
// a brand-new thread's missing turn is no turn, any other error is one; the newest turn comes from
// the resume's reply when it gave one; what a thread read tells the watch (its rollout, what it
// runs on, its title as the tree shows it).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyThread, newestTurn, notMaterialized, readAll } from '../../src/core/reads';
import { newWatch, type WatchedThread } from '../../src/model/watch';
import { ConnectionLostError, type DaemonSession, RpcError, type Thread, type Turn } from '../../src/protocol/daemon';

const lost = (method: string) => new ConnectionLostError(method, 'socket closed');
const refused = (method: string, message: string) => new RpcError(method, -32600, message);

async function thrown(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (error) {
    return error;
  }
  assert.fail('no error');
}

describe('readAll', () => {
  it('all answer: every value, in order', async () => {
    assert.deepEqual(await readAll(Promise.resolve(1), Promise.resolve('two')), [1, 'two']);
    assert.deepEqual(await readAll(Promise.resolve(1), Promise.resolve('two'), Promise.resolve(null)), [
      1,
      'two',
      null,
    ]);
  });

  it('one fails: that error itself, whichever of the two it was', async () => {
    const a = refused('thread/read', 'no such thread');
    assert.equal(await thrown(readAll(Promise.reject(a), Promise.resolve(2))), a);
    const b = lost('thread/turns/list');
    assert.equal(await thrown(readAll(Promise.resolve(1), Promise.reject(b))), b);
    assert.equal(await thrown(readAll(Promise.resolve(1), Promise.reject(a), Promise.resolve(3))), a);
  });

  it('both fail: one error that names both calls; the connection lost under both: that error, as it is', async () => {
    const both = await thrown(
      readAll(Promise.reject(refused('thread/read', 'no such thread')), Promise.reject(lost('thread/turns/list'))),
    );
    assert.ok(both instanceof Error && !(both instanceof ConnectionLostError) && !(both instanceof RpcError));
    assert.equal(
      both.message,
      'thread/read failed (-32600): no such thread; thread/turns/list: no reply (socket closed)',
    );
    const first = lost('thread/read');
    assert.equal(await thrown(readAll(Promise.reject(first), Promise.reject(lost('thread/turns/list')))), first);
  });
});

describe('notMaterialized', () => {
  it("the daemon's refusal for a brand-new thread is no turn; any other error is thrown as it is", () => {
    assert.equal(notMaterialized(refused('thread/turns/list', 'thread t-1 is not materialized yet')), null);
    assert.equal(notMaterialized(refused('thread/turns/list', 'Thread t-1 is Not Materialized yet')), null);
    const other = refused('thread/turns/list', 'no such thread');
    assert.throws(
      () => notMaterialized(other),
      (e) => e === other,
    );
    // The words alone, not from the daemon (a failure of this side's own): an error all the same.
    const local = new Error('not materialized');
    assert.throws(
      () => notMaterialized(local),
      (e) => e === local,
    );
  });
});

describe('newestTurn', () => {
  const turn: Turn = { id: 'turn-2', status: 'failed', error: null };
  const thread = { id: 't-1' } as Thread;
  function session(read: () => Promise<Turn | null>): { s: DaemonSession; reads: () => number } {
    let reads = 0;
    const s = {
      latestTurn: () => {
        reads += 1;
        return read();
      },
    } as unknown as DaemonSession;
    return { s, reads: () => reads };
  }

  it("the resume's reply gave the page: its turn (none, on a thread without one), no read", async () => {
    const { s, reads } = session(() => Promise.resolve({ id: 'read', status: 'completed', error: null }));
    assert.equal(await newestTurn(s, 't-1', { thread, turn }), turn);
    assert.equal(await newestTurn(s, 't-1', { thread, turn: null }), null);
    assert.equal(reads(), 0);
  });

  it('no page in the reply, or not subscribed by this look: read; a brand-new thread has none', async () => {
    const read: Turn = { id: 'read', status: 'completed', error: null };
    const { s, reads } = session(() => Promise.resolve(read));
    assert.equal(await newestTurn(s, 't-1', { thread, turn: undefined }), read);
    assert.equal(await newestTurn(s, 't-1', null), read);
    assert.equal(reads(), 2);
    const fresh = session(() => Promise.reject(refused('thread/turns/list', 'thread t-1 is not materialized yet')));
    assert.equal(await newestTurn(fresh.s, 't-1', null), null);
  });
});

describe('applyThread', () => {
  function watch(): WatchedThread {
    const w = newWatch('t-1', 0);
    w.goal = { status: 'active', objective: 'Ship the feature', tokensUsed: 0, tokenBudget: null, updatedAt: 1 };
    return w;
  }
  function thread(over: Partial<Thread> = {}): Thread {
    return {
      id: 't-1',
      status: { type: 'idle' },
      path: null,
      preview: '',
      name: null,
      updatedAt: 0,
      modelProvider: null,
      model: null,
      ...over,
    };
  }

  it('a rollout path seen first, or moved: kept, read from its start unless the arming fixed an offset in it', () => {
    const w = watch();
    w.rolloutOffset = 500;
    applyThread(w, thread({ path: '/codex/a.jsonl' }));
    assert.deepEqual([w.rolloutPath, w.rolloutOffset], ['/codex/a.jsonl', 0]);
    w.rolloutOffset = 500;
    applyThread(w, thread({ path: '/codex/a.jsonl' }));
    assert.equal(w.rolloutOffset, 500, 'the same path read again started the rollout over');
    applyThread(w, thread({ path: null }));
    assert.deepEqual(
      [w.rolloutPath, w.rolloutOffset],
      ['/codex/a.jsonl', 500],
      'no path in the read lost the known one',
    );
    w.armOffset = 400;
    applyThread(w, thread({ path: '/codex/b.jsonl' }));
    assert.deepEqual([w.rolloutPath, w.rolloutOffset], ['/codex/b.jsonl', 500]);
  });

  it('what it runs on: provider and model, both or nothing', () => {
    const w = watch();
    applyThread(w, thread({ modelProvider: 'openai', model: null }));
    applyThread(w, thread({ modelProvider: null, model: 'gpt-5.5' }));
    assert.equal(w.runsOn, null);
    applyThread(w, thread({ modelProvider: 'openai', model: 'gpt-5.5' }));
    assert.equal(w.runsOn, 'openai/gpt-5.5');
  });

  it("its title: the thread's name, else its preview, else the goal's objective; up to 120 characters whole, longer cut to 117 and '…'", () => {
    const w = watch();
    applyThread(w, thread({ name: 'Docs', preview: 'Fix the docs' }));
    assert.equal(w.title, 'Docs');
    applyThread(w, thread({ preview: 'Fix the docs' }));
    assert.equal(w.title, 'Fix the docs');
    applyThread(w, thread());
    assert.equal(w.title, 'Ship the feature');
    w.goal = null;
    applyThread(w, thread());
    assert.equal(w.title, 'Ship the feature', 'nothing to call it by: the title it had');
    applyThread(w, thread({ name: 'x'.repeat(120) }));
    assert.equal(w.title, 'x'.repeat(120));
    applyThread(w, thread({ name: 'y'.repeat(121) }));
    assert.equal(w.title, `${'y'.repeat(117)}…`);
  });
});
