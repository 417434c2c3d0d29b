// The throttle behind the tree's refresh and the leader's broadcasts: at most once per interval,
// always after the last poke, and never held back by the wall clock set back (it counts on the
// monotonic clock). Real timers, a 50 ms interval: each wait here is the throttle's own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Throttle } from '../../src/core/throttle';

const INTERVAL_MS = 50;

/** Counts the throttle's calls; `next()` resolves at the next one with the ms it took. */
class Calls {
  count = 0;
  private waiter: (() => void) | null = null;

  readonly hit = (): void => {
    this.count += 1;
    this.waiter?.();
    this.waiter = null;
  };

  next(): Promise<number> {
    const started = performance.now();
    return new Promise((resolve) => (this.waiter = () => resolve(performance.now() - started)));
  }
}

test('pokes in a burst run the callback once, after the burst', async () => {
  const f = new Calls();
  const t = new Throttle(INTERVAL_MS, f.hit);
  try {
    const once = f.next();
    for (let i = 0; i < 10; i++) t.poke();
    await once;
    await new Promise((r) => setTimeout(r, 2 * INTERVAL_MS));
    assert.equal(f.count, 1);
  } finally {
    t.dispose();
  }
});

test('the wall clock set back an hour does not hold the next call back', async () => {
  const f = new Calls();
  const t = new Throttle(INTERVAL_MS, f.hit);
  const realNow = Date.now;
  try {
    const first = f.next();
    t.poke();
    await first;
    Date.now = () => realNow() - 3_600_000; // set back an hour, after the first call
    const second = f.next();
    t.poke();
    const waited = await Promise.race([second, new Promise<number>((r) => setTimeout(() => r(-1), 2_000))]);
    assert.notEqual(waited, -1, 'the throttle froze after the wall clock was set back');
    assert.ok(waited <= INTERVAL_MS + 1_000, `waited ${waited} ms`);
    assert.equal(f.count, 2);
  } finally {
    Date.now = realNow;
    t.dispose();
  }
});
