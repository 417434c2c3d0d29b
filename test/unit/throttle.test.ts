// The throttle behind the tree's refresh and the leader's broadcasts: at most once per interval,
// always after the last poke, and never held back by the wall clock set back (it counts on the
// monotonic clock). Real timers, a 50 ms interval: each wait here is the throttle's own; the
// exact waits on node:test's mock timers, the monotonic clock moved with them.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { Throttle } from '../../src/core/throttle';
import { sleep } from '../support/wait';

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
    await sleep(2 * INTERVAL_MS);
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

test('a poke right after a call waits out the interval (on the default, monotonic clock)', async () => {
  const f = new Calls();
  const t = new Throttle(INTERVAL_MS, f.hit);
  try {
    const first = f.next();
    t.poke();
    await first;
    const second = f.next();
    t.poke();
    const waited = await second;
    assert.ok(waited >= INTERVAL_MS - 2, `waited ${waited} ms`);
  } finally {
    t.dispose();
  }
});

describe('the exact waits', () => {
  /** A throttle on mock timers; `tick` moves them and its monotonic clock together, 1 ms at a time. */
  function rig(t: TestContext) {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let mono = 10_000;
    const calls: number[] = [];
    const throttle = new Throttle(
      INTERVAL_MS,
      () => calls.push(mono),
      () => mono,
    );
    const tick = (ms: number): void => {
      for (let i = 0; i < ms; i++) {
        mono += 1;
        t.mock.timers.tick(1);
      }
    };
    return { throttle, calls, tick, at: () => mono };
  }

  test('the first poke runs at once, not an interval later', (t) => {
    const { throttle, calls, tick } = rig(t);
    throttle.poke();
    tick(1);
    assert.equal(calls.length, 1);
  });

  test('a poke right after a call runs a full interval after it, not before', (t) => {
    const { throttle, calls, tick } = rig(t);
    throttle.poke();
    tick(1);
    const first = calls[0];
    throttle.poke();
    tick(INTERVAL_MS - 1);
    assert.equal(calls.length, 1, 'held back within the interval');
    tick(1);
    assert.deepEqual(calls, [first, first + INTERVAL_MS]);
  });

  test('a poke partway through the interval waits only the rest of it', (t) => {
    const { throttle, calls, tick } = rig(t);
    throttle.poke();
    tick(1);
    const first = calls[0];
    tick(30);
    throttle.poke();
    tick(INTERVAL_MS - 30 - 1);
    assert.equal(calls.length, 1, 'held back within the interval');
    tick(1);
    assert.deepEqual(calls, [first, first + INTERVAL_MS]);
  });

  test('a poke long after the last call runs at once', (t) => {
    const { throttle, calls, tick, at } = rig(t);
    throttle.poke();
    tick(1);
    tick(10 * INTERVAL_MS);
    throttle.poke();
    const poked = at();
    tick(1);
    assert.deepEqual(calls.slice(1), [poked + 1]);
  });

  test('disposed, a pending call never runs', (t) => {
    const { throttle, calls, tick } = rig(t);
    throttle.poke();
    tick(1);
    throttle.poke();
    throttle.dispose();
    tick(3 * INTERVAL_MS);
    assert.equal(calls.length, 1);
  });
});
