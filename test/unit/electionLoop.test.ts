// The election loop, as rules: attempts until one decides, one election at a time, a superseded
// generation attempting nothing more, quick retries bounded (slow ones not counted), a stop
// cutting a pause short. The attempts are scripted (what the filesystem would answer is
// attempt.ts's business, tested with real sockets in leader.test.ts); the pauses are real timers,
// short ones (at most 150 ms), but for the 50 slow retries of one test (fake timers: 50 s of
// pauses let pass by moving the clock), and an election that does not end within 2 s fails its
// test.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DONE, retryIn, type Outcome } from '../../src/leader/electionAttempt';
import { ElectionLoop, QUICK_RETRIES } from '../../src/leader/electionLoop';
import { immediate, sleep } from '../support/wait';

interface Script {
  loop: ElectionLoop<number>;
  calls: Array<{ gen: number; at: number }>;
  logs: string[];
  live: Set<number>;
}

function loopOf(retryMs: number, next: (gen: number, n: number) => Outcome | Promise<Outcome>): Script {
  const calls: Script['calls'] = [];
  const logs: string[] = [];
  const live = new Set([1]);
  const loop = new ElectionLoop<number>({
    retryMs,
    log: (m) => logs.push(m),
    live: (gen) => live.has(gen),
    attempt: (gen) => {
      calls.push({ gen, at: performance.now() });
      return Promise.resolve(next(gen, calls.length));
    },
  });
  return { loop, calls, logs, live };
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Whether `p` settles within `ms` (a guard against a pause that was not cut short). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  const settled = await Promise.race([p.then(() => true as const), late]);
  clearTimeout(timer);
  return settled;
}

/**
 * Runs generation `gen` of `s` to its end, failing after 2 s (an election that never ends fails
 * the test, not hangs it: its generation is then superseded, so it stops attempting).
 */
async function ends(s: Script, gen: number, throwErrors: boolean): Promise<void> {
  const done = s.loop.run(gen, throwErrors);
  const quiet = done.then(
    () => undefined,
    () => undefined,
  );
  if (!(await settlesWithin(quiet, 2000))) {
    s.live.clear();
    s.loop.wakeUp();
    assert.fail(`generation ${gen} did not end within 2 s`);
  }
  return done;
}

describe('election loop', () => {
  it(`an election undecided after ${QUICK_RETRIES} quick retries tries again no faster than retryMs`, async () => {
    const retryMs = 150;
    const last = QUICK_RETRIES + 3;
    const s = loopOf(retryMs, (_gen, n) => (n === last ? DONE : retryIn(0)));
    await ends(s, 1, true);
    assert.equal(s.calls.length, last);
    const gaps = s.calls.slice(1).map((c, i) => c.at - s.calls[i].at);
    const quick = gaps.slice(0, QUICK_RETRIES);
    assert.ok(
      quick.every((g) => g < retryMs / 2),
      `the first ${QUICK_RETRIES} retries are quick: ${quick.map(Math.round).join(',')}`,
    );
    for (const g of gaps.slice(QUICK_RETRIES)) assert.ok(g >= retryMs - 1, `then paced: a retry after ${g} ms`);
  });

  it('a slow retry asked for is kept in full, before and after the bound', async () => {
    const s = loopOf(5, (_gen, n) => (n === 3 ? DONE : retryIn(80)));
    await ends(s, 1, true);
    const gaps = s.calls.slice(1).map((c, i) => c.at - s.calls[i].at);
    assert.ok(
      gaps.every((g) => g >= 79),
      gaps.join(','),
    );
  });

  it('slow retries (a busy leader) do not use up the quick ones', async (t) => {
    // Fake timers: 50 retries of 1 s would take 50 s; each pause is let pass by moving the clock.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const retryMs = 1000;
    const s = loopOf(retryMs, (_gen, n) =>
      n <= QUICK_RETRIES ? retryIn(retryMs) : n <= QUICK_RETRIES + 2 ? retryIn(0) : DONE,
    );
    const done = s.loop.run(1, true);
    const settle = immediate;
    for (let n = 1; n <= QUICK_RETRIES; n++) {
      await settle();
      t.mock.timers.tick(retryMs - 1);
      await settle();
      assert.equal(s.calls.length, n, `slow retry ${n} waits its retryMs`);
      t.mock.timers.tick(1);
    }
    for (let n = QUICK_RETRIES + 1; n <= QUICK_RETRIES + 2; n++) {
      await settle();
      assert.equal(s.calls.length, n);
      t.mock.timers.tick(1);
      await settle();
      assert.equal(s.calls.length, n + 1, `after ${QUICK_RETRIES} slow retries, quick retry ${n} is still quick`);
    }
    await done;
  });

  it('an election whose generation was superseded makes no attempt, and stops attempting once superseded', async () => {
    const s = loopOf(10, () => {
      s.live.delete(1);
      return retryIn(0);
    });
    await ends(s, 2, true);
    assert.deepEqual(s.calls, [], 'generation 2 was never started');
    await ends(s, 1, true);
    assert.equal(s.calls.length, 1);
  });

  it('a stop cuts the pause short: the election ends at once, not after the retry delay', async () => {
    const s = loopOf(60_000, () => retryIn(60_000));
    const done = s.loop.run(1, true);
    while (s.calls.length === 0) await immediate();
    s.live.delete(1);
    s.loop.wakeUp();
    assert.equal(await settlesWithin(done, 5000), true);
    assert.equal(s.loop.idle, true);
    s.loop.wakeUp(); // nothing pauses: nothing to do
  });

  it('a stop before any election paused has nothing to cut short', () => {
    const s = loopOf(10, () => DONE);
    s.loop.wakeUp();
    assert.equal(s.loop.idle, true);
  });

  it('two calls for one generation share one election; a newer one waits until the older has wound down', async () => {
    const first = deferred<Outcome>();
    const second = deferred<Outcome>();
    const s = loopOf(10, (gen) => (gen === 1 ? first.promise : second.promise));
    s.live.add(2);
    assert.equal(s.loop.idle, true);
    const a = s.loop.run(1, true);
    assert.equal(s.loop.run(1, true), a);
    const b = s.loop.run(2, true);
    await sleep(20);
    assert.deepEqual(
      s.calls.map((c) => c.gen),
      [1],
    );
    assert.equal(s.loop.idle, false);
    let drained = false;
    void s.loop.drained().then(() => (drained = true));
    first.resolve(DONE);
    await a;
    assert.equal(s.loop.run(2, true), b, 'still one election for generation 2');
    assert.equal(drained, false, 'drained only once every election asked for has settled');
    second.resolve(DONE);
    await b;
    assert.deepEqual(
      s.calls.map((c) => c.gen),
      [1, 2],
    );
    await s.loop.drained();
    assert.equal(s.loop.idle, true);
  });

  it('an election asked for again after the last one settled runs again (a lost leader)', async () => {
    const s = loopOf(10, () => DONE);
    await ends(s, 1, true);
    await ends(s, 1, true);
    assert.equal(s.calls.length, 2);
  });

  it("an attempt's error ends an election asked to throw; else it is logged and retried after retryMs", async () => {
    const boom = loopOf(10, () => Promise.reject(new Error('boom')));
    await assert.rejects(ends(boom, 1, true), /boom/);
    assert.equal(boom.calls.length, 1);
    const retryMs = 100;
    const s = loopOf(retryMs, (_gen, n) => (n === 1 ? Promise.reject(new Error('EACCES')) : DONE));
    await ends(s, 1, false);
    assert.equal(s.calls.length, 2);
    assert.ok(s.calls[1].at - s.calls[0].at >= retryMs - 1);
    assert.deepEqual(s.logs, [`leader election: attempt failed: EACCES; retrying in ${retryMs} ms`]);
  });
});
