// A person's approval request on a goal that a failed turn blocked (the seed's TestLiveActivity,
// with the thread `systemError` rather than `active`): nothing is due while it waits, and the
// recovery follows its resolution. Runs with the shipped DEFAULT_OPTIONS (30 s backoff base,
// 200 ms prepare lead, limiter burst 3 then one per 5 s).
//
// Found by the transport property (test/faults/transport.test.ts, approval story `onBlocked`):
// the engine kept the backoff due, and each attempt was called off by its check ("waiting for
// approval") and due again at once — an endless loop of reads against the daemon.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { makeHarness, type Harness } from '../support/engineHarness';

const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
});

describe('an approval pending on a blocked goal', () => {
  it('waits for the approval (no set, no attempts) and recovers once when the person resolves it', async () => {
    const h = await makeHarness({ options: DEFAULT_OPTIONS });
    harnesses.push(h);
    const { daemon, engine } = h;
    const t = daemon.addThread('thread-1');
    t.status = { type: 'active', activeFlags: [] };
    await h.reconcile();
    assert.equal(engine.watch('thread-1')?.state.kind, 'running');

    daemon.failWithEvents('thread-1', { codexErrorInfo: 'internalServerError' });
    await h.settle();
    assert.equal(engine.watch('thread-1')?.state.kind, 'backoff');
    // The approval arrives within the backoff; the thread stays `systemError`.
    daemon.serverRequest('approval-1', 'item/commandExecution/requestApproval', {
      threadId: 'thread-1',
      turnId: t.turn.id,
      itemId: 'item-1',
    });
    await h.settle();
    assert.equal(engine.watch('thread-1')?.state.kind, 'waitingApproval');

    // Well past any due time (the first backoff is 15–30 s): no set, and no attempt either.
    const reads = () => daemon.count('thread/turns/list');
    const before = reads();
    for (let i = 0; i < 12; i++) await h.advance(10_000);
    assert.equal(daemon.count('thread/goal/set'), 0, 'a set while an approval was pending');
    assert.ok(
      reads() - before <= 4,
      `${reads() - before} turn reads while the approval waited: the engine kept attempting`,
    );
    assert.equal(engine.watch('thread-1')?.state.kind, 'waitingApproval');

    // The person answers it in their own client: the recovery is due again, and happens once.
    daemon.resolveServerRequest('approval-1');
    await h.settle();
    await h.advance(1_000);
    await h.advance(1_000);
    assert.equal(daemon.count('thread/goal/set'), 1);
    assert.equal(daemon.thread('thread-1').goal?.status, 'active');
    assert.equal(engine.watch('thread-1')?.state.kind, 'running');
    assert.ok(daemon.violations.length === 0, daemon.violations.join('; '));
  });
});
