// The statuses of the threads a resync may arm, read in pages (`thread/list {includedThreadIds}`,
// 100 a page, as 0.171.0 answers it: docs/daemon-behaviour.md (n)) instead of one `thread/read`
// per thread; one by one where the daemon ignores the filter (0.169.0). A status an event brought
// while a page was on its way is newer than the page, and kept.
//
// Shipped defaults (DEFAULT_OPTIONS), the strict fake daemon, a fake clock.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { WireMessage } from '../support/fakeDaemon';
import { healthyFleet } from '../support/fleet';
import { makeHarness, type Harness } from '../support/engineHarness';

const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
});

async function fleet(n: number, tune?: (daemon: ReturnType<typeof healthyFleet>['daemon']) => void) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-pages-'));
  const { daemon, ids } = healthyFleet(dir, n);
  tune?.(daemon);
  const h = await makeHarness({ dir, daemon, start: false });
  harnesses.push(h);
  await h.engine.start();
  await h.settle();
  return { h, ids };
}

const pages = (requests: WireMessage[]) =>
  requests.filter((m) => m.method === 'thread/list' && Array.isArray(m.params?.includedThreadIds));
const count = (requests: WireMessage[], method: string) => requests.filter((m) => m.method === method).length;

describe('statuses read in pages at arming', () => {
  it('250 running threads: three pages of at most 100, no thread/read, every thread armed and subscribed', async () => {
    const { h, ids } = await fleet(250);
    const asked = pages(h.daemon.requests).map((m) => (m.params?.includedThreadIds as string[]).length);
    assert.deepEqual(asked, [100, 100, 50]);
    assert.equal(count(h.daemon.requests, 'thread/read'), 0);
    assert.equal(count(h.daemon.requests, 'thread/resume'), 250);
    assert.deepEqual(
      h.engine.watches().map((w) => w.state.kind),
      ids.map(() => 'running'),
    );
    // The next resync reads no page: every thread is subscribed.
    const before = h.daemon.requests.length;
    await h.reconcile();
    assert.equal(pages(h.daemon.requests.slice(before)).length, 0);
  });

  it('a daemon that ignores the filter (0.169.0): one page, then a thread/read per thread, as before', async () => {
    const { h } = await fleet(150, (d) => {
      d.listIgnoresIncludedIds = true;
    });
    assert.equal(pages(h.daemon.requests).length, 1, 'asked once on this connection');
    assert.equal(count(h.daemon.requests, 'thread/read'), 150);
    assert.equal(count(h.daemon.requests, 'thread/resume'), 150);
    assert.ok(h.engine.watches().every((w) => w.state.kind === 'running'));
  });

  it('a status event that overtakes its page wins: the thread is read before it is resumed', async () => {
    const { h, ids } = await fleet(3, (d) => {
      d.before = (m) => {
        if (m.method !== 'thread/list' || !Array.isArray(m.params?.includedThreadIds)) return;
        // The turn of ids[1] ends while the page is on its way: the event goes out first, the
        // page still says active (it was read before).
        d.notify('thread/status/changed', { threadId: 'thread-00001', status: { type: 'idle' } });
      };
    });
    assert.deepEqual(ids, ['thread-00000', 'thread-00001', 'thread-00002']);
    const reads = h.daemon.requests.filter((m) => m.method === 'thread/read').map((m) => m.params?.threadId);
    assert.deepEqual(reads, ['thread-00001'], 'only the thread whose event was newer than its page was read');
  });
});
