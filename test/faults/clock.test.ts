// Fault suite, item 5: the clock. A suspended machine, and a wall clock that jumps forward or
// back, must neither cause a burst of recoveries beyond the global limiter nor leave a due
// recovery waiting for hours.
//
// The fake clock has the two times a real machine has (see test/support/fakeClock.ts): the
// wall clock the engine reads (`Date.now()`) and the monotonic time its timers count
// (`setTimeout`). `suspend` moves both and fires what fell due late, all at once (macOS,
// Windows); `jump` moves only the wall clock (a clock change; also a Linux suspend, where the
// monotonic clock stops). Times below are measured on the monotonic clock, i.e. real elapsed
// time, unless they say "wall".
//
// The options are the shipped defaults (base 30 s, cap 30 min, a burst of 3 then one recovery
// per 5 s, resync every 60 s), not the unlimited test limiter. The goals run on providers of
// their own (`ownProviders`): goals that one outage blocked on one provider would wait for one
// probe (test/unit/outageProbe.test.ts), and the limiter is what this suite holds to the clock.
import { after, afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { emptyState, newWatch, type PersistedState } from '../../src/model/watch';
import { dueAt } from '../../src/model/queries';
import { makeHarness, type Harness } from '../support/engineHarness';
import { FakeClock } from '../support/fakeClock';
import { FakeDaemon } from '../support/fakeDaemon';
import { ownProviders } from '../support/fleet';
import { MemoryStore } from '../support/memoryStore';

const OPTIONS = { ...DEFAULT_OPTIONS };
const BURST = OPTIONS.limiterBurst;
const INTERVAL = OPTIONS.limiterIntervalMs;
const HOUR = 60 * 60_000;

interface SetSeen {
  threadId: string;
  wall: number;
  mono: number;
}

const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) {
    await h.cleanup();
    fs.rmSync(h.dir, { recursive: true, force: true });
  }
});

// Invariant (suite-wide): no unhandled rejection and no uncaught exception.
const crashes: unknown[] = [];
const onCrash = (error: unknown) => crashes.push(error);
beforeEach(() => {
  crashes.length = 0;
  process.on('unhandledRejection', onCrash);
  process.on('uncaughtException', onCrash);
});
afterEach(() => {
  process.off('unhandledRejection', onCrash);
  process.off('uncaughtException', onCrash);
  assert.deepEqual(crashes.map(String), [], 'an unhandled rejection or uncaught exception');
});

/** A repeatable jitter: a linear congruential sequence in [0, 1). */
function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1_664_525) + 1_013_904_223) >>> 0;
    return x / 2 ** 32;
  };
}

/** Moves time timer by timer, letting the engine work after each one (not all timers in one go). */
async function run(h: Harness, ms: number): Promise<void> {
  let left = ms;
  for (;;) {
    const next = h.clock.nextIn();
    if (next === null || next > left) {
      await h.clock.advance(left);
      await h.settle();
      return;
    }
    await h.clock.advance(next);
    left -= next;
    await h.settle();
  }
}

/** Records every `thread/goal/set` the daemon receives, with both clocks. */
function recordSets(daemon: FakeDaemon, clock: FakeClock): SetSeen[] {
  const sets: SetSeen[] = [];
  daemon.before = (m) => {
    if (m.method === 'thread/goal/set')
      sets.push({ threadId: String(m.params?.threadId), wall: clock.now(), mono: clock.elapsed() });
  };
  return sets;
}

/**
 * The global limiter's promise, on real elapsed time: in any window of length L at most
 * `burst + floor(L / interval)` recoveries go out.
 */
function assertLimited(times: number[], what: string): void {
  const t = [...times].sort((a, b) => a - b);
  for (let i = 0; i < t.length; i++) {
    for (let j = i; j < t.length; j++) {
      const allowed = BURST + Math.floor((t[j] - t[i]) / INTERVAL);
      assert.ok(
        j - i + 1 <= allowed,
        `${what}: ${j - i + 1} recoveries within ${t[j] - t[i]} ms (the limiter allows ${allowed}); times ${JSON.stringify(t)}`,
      );
    }
  }
}

function assertEachOnce(sets: SetSeen[], ids: string[]): void {
  const counts = new Map<string, number>();
  for (const s of sets) counts.set(s.threadId, (counts.get(s.threadId) ?? 0) + 1);
  for (const id of ids)
    assert.equal(counts.get(id) ?? 0, 1, `thread ${id}: ${counts.get(id) ?? 0} sets, expected exactly one`);
  assert.equal(sets.length, ids.length, 'a set for a thread that was not due');
}

/** `n` armed threads whose turns then fail at once (a provider outage); returns each one's due time (monotonic). */
async function outage(n: number, opts: { seed?: number; clock?: FakeClock } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-clock-'));
  const daemon = new FakeDaemon(dir);
  const ids = Array.from({ length: n }, (_, i) => `thread-${i + 1}`);
  for (const id of ids) daemon.addThread(id);
  ownProviders(daemon, ids);
  const clock = opts.clock ?? new FakeClock();
  const h = await makeHarness({
    dir,
    daemon,
    clock,
    options: OPTIONS,
    random: opts.seed === undefined ? () => 1 : lcg(opts.seed),
  });
  harnesses.push(h);
  const sets = recordSets(daemon, clock);
  for (const id of ids) assert.equal(h.engine.watch(id)?.state.kind, 'running', `${id} not armed`);
  for (const id of ids) daemon.failWithEvents(id);
  await h.settle();
  const due = new Map<string, number>();
  for (const id of ids) {
    const s = h.engine.watch(id)!.state;
    assert.equal(s.kind, 'backoff', `${id} is not in backoff`);
    if (s.kind === 'backoff') due.set(id, clock.elapsed() + (dueAt(h.engine.watch(id)!)! - clock.now()));
  }
  return { h, daemon, clock, ids, sets, due };
}

describe('clock faults', () => {
  it('a suspend of hours whose timers fire late, all at once: the recoveries go out through the limiter (a burst, then one per interval), each once', async () => {
    const { h, clock, ids, sets } = await outage(8, { seed: 7 });
    await run(h, 5_000);
    assert.equal(sets.length, 0);
    clock.suspend(3 * HOUR);
    const resumed = clock.elapsed();
    await run(h, 5 * 60_000);
    assertEachOnce(sets, ids);
    // Invariant: no burst beyond the limiter, measured on real elapsed time.
    assertLimited(
      sets.map((s) => s.mono),
      'after the resume',
    );
    // Invariant: no recovery skipped or held back: the k-th goes out in the k-th limiter slot.
    const times = sets.map((s) => s.mono - resumed).sort((a, b) => a - b);
    times.forEach((t, k) =>
      assert.ok(
        t <= Math.max(0, k - BURST + 1) * INTERVAL,
        `recovery ${k + 1} came ${t} ms after the resume, later than its limiter slot`,
      ),
    );
    assert.ok(
      h.decisions.some((d) => d.type === 'skipped' && d.reason === 'global rate limit'),
      'the limiter held nothing back (and said nothing)',
    );
  });

  it('a suspend that stops the monotonic clock (the wall clock jumps forward by hours): nothing fires before its own timer, what fell due goes through the limiter', async () => {
    const { h, clock, ids, sets, due } = await outage(8, { seed: 11 });
    await run(h, 5_000);
    clock.jump(3 * HOUR);
    await run(h, 5 * 60_000);
    assertEachOnce(sets, ids);
    // Invariant: no recovery before the soonest intended delay (in real elapsed time): the jump itself fires nothing.
    const soonest = Math.min(...due.values());
    for (const s of sets)
      assert.ok(s.mono >= soonest, `${s.threadId} recovered ${soonest - s.mono} ms before any recovery was due`);
    assertLimited(
      sets.map((s) => s.mono),
      'after the jump forward',
    );
    const times = sets.map((s) => s.mono - soonest).sort((a, b) => a - b);
    times.forEach((t, k) =>
      assert.ok(
        t <= Math.max(0, k - BURST + 1) * INTERVAL,
        `recovery ${k + 1} came ${t} ms after the first one was due, later than its limiter slot`,
      ),
    );
  });

  it('the wall clock jumps back by hours during a backoff: the recovery still runs at its intended delay, not hours later', async () => {
    const { h, clock, ids, sets, due } = await outage(2);
    await run(h, 10_000);
    clock.jump(-5 * HOUR);
    await run(h, 3 * 60_000);
    // Invariant: a due retry is neither skipped nor postponed by the jump: it runs at its own timer.
    assertEachOnce(sets, ids);
    for (const s of sets) {
      const intended = due.get(s.threadId)!;
      assert.ok(s.mono >= intended, `${s.threadId} recovered ${intended - s.mono} ms early`);
      assert.ok(s.mono <= intended + 1_000, `${s.threadId} recovered ${s.mono - intended} ms after its intended delay`);
    }
    assert.ok(
      h.decisions.some((d) => d.type === 'warning' && /clock went back/.test(d.message)),
      'the jump was not logged',
    );
  });

  it('the wall clock jumps back by hours while recoveries wait for the limiter: they still go out one per interval', async () => {
    const { h, clock, ids, sets, due } = await outage(6);
    const first = Math.min(...due.values());
    await run(h, first - clock.elapsed() + 1_000);
    assert.equal(sets.length, BURST, 'the burst');
    clock.jump(-5 * HOUR);
    await run(h, 3 * 60_000);
    assertEachOnce(sets, ids);
    assertLimited(
      sets.map((s) => s.mono),
      'across the jump back',
    );
    const times = sets.map((s) => s.mono - first).sort((a, b) => a - b);
    times.forEach((t, k) =>
      assert.ok(
        t <= Math.max(0, k - BURST + 1) * INTERVAL + 1_000,
        `recovery ${k + 1} came ${t} ms after the first was due: held back by the jump`,
      ),
    );
  });

  it('the wall clock jumps forward right after a burst: the jump does not refill the limiter', async () => {
    const { h, clock, ids, sets, due } = await outage(6);
    const first = Math.min(...due.values());
    await run(h, first - clock.elapsed() + 1_000);
    assert.equal(sets.length, BURST, 'the burst');
    clock.jump(HOUR);
    await run(h, 3 * 60_000);
    assertEachOnce(sets, ids);
    // Invariant: the limiter counts real time; an hour on the wall clock is not an hour of rest.
    assertLimited(
      sets.map((s) => s.mono),
      'across the jump forward',
    );
  });

  it('back and forth: a jump back then forward by the same hours neither repeats nor bursts a recovery', async () => {
    const { h, clock, ids, sets, due } = await outage(6, { seed: 3 });
    await run(h, 4_000);
    clock.jump(-2 * HOUR);
    await run(h, 20_000);
    clock.jump(2 * HOUR);
    await run(h, 5 * 60_000);
    assertEachOnce(sets, ids);
    assertLimited(
      sets.map((s) => s.mono),
      'back and forth',
    );
    const soonest = Math.min(...due.values());
    for (const s of sets) assert.ok(s.mono >= soonest, `${s.threadId} recovered before any recovery was due`);
    const latest = Math.max(...due.values());
    const last = Math.max(...sets.map((s) => s.mono));
    assert.ok(
      last <= latest + (ids.length - BURST) * INTERVAL + 1_000,
      `the last recovery came ${last - latest} ms after the last due time`,
    );
  });

  it('a jump back moves the delays the engine chose, not a usage-limit reset time the provider gave', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-clock-'));
    const daemon = new FakeDaemon(dir);
    daemon.addThread('backoff');
    daemon.addThread('usage');
    const clock = new FakeClock();
    const h = await makeHarness({ dir, daemon, clock, options: OPTIONS });
    harnesses.push(h);
    daemon.rateLimitResetSeconds = Math.floor(clock.now() / 1000) + 2 * 3600;
    daemon.failWithEvents('backoff');
    daemon.failWithEvents('usage', { codexErrorInfo: 'usageLimitExceeded' });
    await h.settle();
    const before = {
      backoff: h.engine.watch('backoff')!.state,
      usage: h.engine.watch('usage')!.state,
      usageDue: dueAt(h.engine.watch('usage')!),
    };
    assert.equal(before.backoff.kind, 'backoff');
    assert.equal(before.usage.kind, 'usageLimited');
    clock.jump(-HOUR);
    await run(h, 1_000);
    await run(h, 60_000); // the resync's timer notices the jump, if the due timer did not
    const usage = h.engine.watch('usage')!.state;
    assert.ok(
      usage.kind === 'usageLimited' &&
        before.usage.kind === 'usageLimited' &&
        dueAt(h.engine.watch('usage')!) === before.usageDue,
      "the provider's reset time moved with the wall clock",
    );
    assert.equal(h.engine.watch('backoff')!.recovered.length, 1, 'the backoff was held back by the jump');
  });

  it('a restart with due times hours in the past: the recoveries go through the limiter, each once', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-clock-'));
    const daemon = new FakeDaemon(dir);
    const clock = new FakeClock();
    const ids = Array.from({ length: 7 }, (_, i) => `thread-${i + 1}`);
    const state = emptyState();
    for (const id of ids) {
      daemon.addThread(id);
      ownProviders(daemon, [id]);
      daemon.fail(id);
      state.watches[id] = backoffWatch(id, daemon.thread(id).path, clock.now() - 3 * HOUR, 30_000);
    }
    const sets = recordSets(daemon, clock);
    const start = clock.elapsed();
    const h = await makeHarness({ dir, daemon, clock, store: new MemoryStore(state), options: OPTIONS });
    harnesses.push(h);
    await run(h, 3 * 60_000);
    assertEachOnce(sets, ids);
    assertLimited(
      sets.map((s) => s.mono),
      'after the restart',
    );
    const times = sets.map((s) => s.mono - start).sort((a, b) => a - b);
    times.forEach((t, k) =>
      assert.ok(
        t <= Math.max(0, k - BURST + 1) * INTERVAL,
        `recovery ${k + 1} came ${t} ms after the start, later than its limiter slot`,
      ),
    );
  });

  it('a restart after the wall clock went back by hours while stopped: a stored due time is not waited for hours', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-clock-'));
    const daemon = new FakeDaemon(dir);
    daemon.addThread('thread-1');
    daemon.fail('thread-1');
    // Saved at wall time T with the recovery due at T + 30 s; the engine restarts at T − 5 h + 10 s.
    const clock = new FakeClock();
    const savedAt = clock.now();
    const state = backoffState('thread-1', daemon.thread('thread-1').path, savedAt, 30_000);
    clock.jump(-5 * HOUR + 10_000);
    const sets = recordSets(daemon, clock);
    const start = clock.elapsed();
    const h = await makeHarness({ dir, daemon, clock, store: new MemoryStore(state), options: OPTIONS });
    harnesses.push(h);
    await run(h, 2 * 60_000);
    assertEachOnce(sets, ['thread-1']);
    // Invariant: bounded: at most the whole intended delay after the restart (the engine cannot know how long it was
    // stopped).
    assert.ok(sets[0].mono - start <= 30_000, `recovered ${sets[0].mono - start} ms after the restart`);
    assert.ok(
      h.decisions.some((d) => d.type === 'warning' && /clock went back/.test(d.message)),
      'the jump was not logged',
    );
  });
});

/** An armed watch whose turn-1 failed at `failedAt` (wall), recovery due `delayMs` later. */
function backoffWatch(id: string, rollout: string, failedAt: number, delayMs: number) {
  const w = newWatch(id, failedAt - 60_000);
  w.goal = { status: 'blocked', objective: 'ship the feature', tokensUsed: 100, tokenBudget: null, updatedAt: 1 };
  w.rolloutPath = rollout;
  w.armOffset = 0;
  w.failures = 1;
  w.lastFailure = {
    turnId: 'turn-1',
    message: 'synthetic failure',
    code: 'internalServerError',
    httpStatus: null,
    at: failedAt,
    dueAt: failedAt + delayMs,
  };
  w.state = { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' };
  w.updatedAt = failedAt;
  return w;
}

function backoffState(id: string, rollout: string, failedAt: number, delayMs: number): PersistedState {
  const s = emptyState();
  s.watches[id] = backoffWatch(id, rollout, failedAt, delayMs);
  return s;
}
