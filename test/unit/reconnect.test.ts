// The daemon away (src/core/connection.ts): the engine says it lost the daemon and when it tries
// again, backs off (0.5 s, doubling, at most 30 s: the shipped settings), and connects again on its
// own; a person's Refresh while it waits connects at once instead of at the backoff (the daemon
// was just started); a new resync interval applies at once. The fake daemon stands for the real
// one (`down`: it refuses connections), the clock is the fake one.
//
// Options: the shipped defaults (TEST_OPTIONS).
import { decisionLevel } from '../../src/model/decisionLevel';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { armedHarness, type Harness } from '../support/engineHarness';

const T1 = 'thread-1';
const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
});

/** What each connection decision said, in order. */
const connectionLines = (h: Harness) =>
  h.decisions.flatMap((d) => (d.type === 'connection' ? [`${d.state}: ${d.detail}`] : []));

/** An armed engine whose daemon then went away (it refuses connections). */
async function daemonGone(): Promise<Harness> {
  const h = await armedHarness([T1], {}, harnesses);
  h.daemon.down = true;
  h.daemon.disconnect();
  await h.settle();
  return h;
}

describe('the daemon away', () => {
  it('said, with when it tries again; the tries back off from 0.5 s, doubling, up to 30 s; back once the daemon is', async () => {
    const h = await daemonGone();
    const c = h.engine.connectionState();
    assert.ok(c.kind === 'disconnected', JSON.stringify(c));
    assert.equal(c.retryAt, h.clock.now() + DEFAULT_OPTIONS.reconnectBaseMs);
    const delays: number[] = [];
    for (let i = 0; i < 9; i++) {
      const s = h.engine.connectionState();
      assert.ok(s.kind === 'disconnected');
      delays.push(s.retryAt! - h.clock.now());
      await h.advance(s.retryAt! - h.clock.now());
    }
    assert.deepEqual(delays, [500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
    assert.deepEqual(connectionLines(h).slice(1), [
      'disconnected: EOF; reconnecting in 0.5 s',
      ...[1, 2, 4, 8, 16, 30, 30, 30, 30].map((n) => `error: fake daemon is down; reconnecting in ${n} s`),
    ]);
    // Each counted since the daemon was last there: the first is its going (a warning), the rest
    // quiet tries (debug); the first connection said 0, the return the tries before it (a notice).
    const tries = () => h.decisions.flatMap((d) => (d.type === 'connection' ? [d.tries] : []));
    assert.deepEqual(tries(), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    h.daemon.down = false;
    await h.advance(30_000);
    assert.equal(h.engine.connectionState().kind, 'connected');
    assert.equal(tries().at(-1), 10, 'back after 10 failed tries');
    assert.deepEqual(
      h.decisions.filter((d) => d.type === 'connection').map((d) => decisionLevel(d)),
      ['info', 'warning', ...Array<string>(9).fill('debug'), 'notice'],
    );
    assert.equal(h.engine.watch(T1)?.state.kind, 'running');
  });

  it("a person's Refresh while the engine waits to try again tries at once and starts the backoff over; the daemon back, it connects at once", async () => {
    const h = await daemonGone();
    for (let i = 0; i < 5; i++) {
      const s = h.engine.connectionState();
      assert.ok(s.kind === 'disconnected');
      await h.advance(s.retryAt! - h.clock.now());
    }
    const waiting = h.engine.connectionState();
    assert.ok(waiting.kind === 'disconnected' && waiting.retryAt! - h.clock.now() >= 16_000, JSON.stringify(waiting));
    const lines = connectionLines(h).length;
    await h.engine.commands.refresh(); // the daemon still down
    assert.equal(connectionLines(h).length, lines + 1, 'no try at once');
    const again = h.engine.connectionState();
    assert.ok(again.kind === 'disconnected');
    assert.equal(again.retryAt! - h.clock.now(), DEFAULT_OPTIONS.reconnectBaseMs, 'the backoff did not start over');
    await h.advance(100);
    h.daemon.down = false; // the person started the daemon
    await h.engine.commands.refresh();
    assert.equal(h.engine.connectionState().kind, 'connected', 'it waited for the backoff');
  });

  it('a new resync interval applies at once, not after the old one', async () => {
    const h = await armedHarness([T1], {}, harnesses);
    const lists = () => h.daemon.count('thread/loaded/list');
    h.engine.updateOptions({ ...DEFAULT_OPTIONS, resyncMs: 10_000 });
    const before = lists();
    await h.advance(10_000);
    assert.equal(lists() - before, 1, 'no resync at the new interval');
    await h.advance(10_000);
    assert.equal(lists() - before, 2);
  });
});
