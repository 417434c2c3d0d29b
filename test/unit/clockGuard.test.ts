// The clock guard's rules (src/core/clockGuard.ts), one by one, on the engine with a fake clock
// that has the two times a machine has: the wall clock the engine reads and the monotonic time its
// timers count (test/support/fakeClock.ts; `jump` moves the wall clock alone, as a clock change does).
// - A jump back by more than the tolerance (2 s) moves back every delay the engine chose (a backoff,
//   a usage limit with no reset time), so each keeps the real time it had left; a reset time the
//   provider gave is a point in time and stays, and so does the due time of a recovery already made.
//   One warning says by how much, and how many scheduled recoveries were moved.
// - A jump back within the tolerance is slack (NTP slewing, timer lateness): nothing moves.
// - At a start, the newest time the stored state holds (each kind of time it records) later than
//   now by more than the tolerance is a clock that went back while the engine was stopped.
// What this means for recoveries under the global limiter: the fault suite (test/faults/clock.test.ts).
//
// Options: the shipped defaults (TEST_OPTIONS); the jitter is the harness's (the full delay).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { emptyState, newWatch, type PersistedState, type WatchedThread } from '../../src/model/watch';
import { dueAt } from '../../src/model/queries';
import { systemClock } from '../../src/core/clock';
import { armedHarness, makeHarness, type Harness } from '../support/engineHarness';
import { FakeClock } from '../support/fakeClock';
import { FakeDaemon } from '../support/fakeDaemon';
import { MemoryStore } from '../support/memoryStore';
import { ownProviders } from '../support/fleet';
import { sleep, tempDir } from '../support/wait';

const HOUR = 3_600_000;
const TOLERANCE_MS = 2_000;

const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
});

function clockWarnings(h: Harness): string[] {
  return h.decisions.flatMap((d) =>
    d.type === 'warning' && /wall clock went back/.test(d.message) ? [d.message] : [],
  );
}

/** Moves the monotonic clock to the engine's next timer (the guard looks at the clocks there), not past `limitMs`. */
async function toNextTimer(h: Harness, limitMs: number): Promise<void> {
  const next = h.clock.nextIn();
  assert.ok(next !== null && next <= limitMs, `no engine timer within ${limitMs} ms`);
  await h.advance(next);
}

/**
 * An engine whose goals failed: `backoff` (a server error), `usage` (a usage limit the provider
 * gave no reset time for), `reset` (a usage limit that resets in 2 h, as the provider said).
 */
async function failedGoals(): Promise<Harness> {
  const dir = tempDir('cgr-clockguard-');
  const daemon = new FakeDaemon(dir);
  const h = await armedHarness(['backoff', 'usage', 'reset'], { dir, daemon }, harnesses);
  ownProviders(daemon, ['backoff', 'usage', 'reset']);
  daemon.failWithEvents('backoff');
  daemon.failWithEvents('usage', { codexErrorInfo: 'usageLimitExceeded' });
  await h.settle();
  daemon.rateLimitResetSeconds = Math.floor(h.clock.now() / 1000) + 2 * 3600;
  daemon.failWithEvents('reset', { codexErrorInfo: 'usageLimitExceeded' });
  await h.settle();
  const kinds = ['backoff', 'usage', 'reset'].map((id) => h.engine.watch(id)!.state.kind);
  assert.deepEqual(kinds, ['backoff', 'usageLimited', 'usageLimited']);
  const reset = h.engine.watch('reset')!.state;
  assert.ok(reset.kind === 'usageLimited' && reset.resetsAt !== null, 'the provider gave no reset time');
  const usage = h.engine.watch('usage')!.state;
  assert.ok(usage.kind === 'usageLimited' && usage.resetsAt === null, 'the limit without a reset time has one');
  return h;
}

/** Each failure's due time (the recovery may have gone out by then: the time it was due at). */
const dueOf = (h: Harness, id: string) => h.engine.watch(id)!.lastFailure?.dueAt ?? null;
const dues = (h: Harness) => ['backoff', 'usage', 'reset'].map((id) => dueOf(h, id));

describe('the clock guard', () => {
  it('the wall clock back by more than 2 s while running: the delays the engine chose keep the time they had left, a reset time the provider gave stays, one warning', async () => {
    const h = await failedGoals();
    const [backoff, usage, reset] = dues(h);
    h.clock.jump(-HOUR);
    await toNextTimer(h, 60_000);
    assert.deepEqual(dues(h), [backoff! - HOUR, usage! - HOUR, reset]);
    assert.deepEqual(clockWarnings(h), [
      'the wall clock went back by 1:00:00 while running; 2 scheduled recoveries keep the time it had left',
    ]);
  });

  it('2 s back is slack, not a jump: nothing moves, nothing is said; 2 s and 1 ms is a jump', async () => {
    const h = await failedGoals();
    const before = dues(h);
    h.clock.jump(-TOLERANCE_MS);
    await toNextTimer(h, 60_000);
    assert.deepEqual(dues(h), before);
    assert.deepEqual(clockWarnings(h), []);
    h.clock.jump(-(TOLERANCE_MS + 1));
    await toNextTimer(h, 60_000);
    const [backoff, usage, reset] = before;
    assert.deepEqual(dues(h), [backoff! - TOLERANCE_MS - 1, usage! - TOLERANCE_MS - 1, reset]);
    assert.deepEqual(clockWarnings(h), [
      'the wall clock went back by 0:03 while running; 2 scheduled recoveries keep the time it had left',
    ]);
  });

  it('one scheduled recovery moved is said in the singular; a recovery already made keeps its due time', async () => {
    const h = await armedHarness(['done', 'waiting'], {}, harnesses);
    ownProviders(h.daemon, ['done', 'waiting']);
    h.daemon.failWithEvents('done');
    await h.settle();
    await h.advance(dueAt(h.engine.watch('done')!)! - h.clock.now());
    const done = h.engine.watch('done')!;
    assert.equal(done.recovered.length, 1, 'the first failure was not recovered');
    const made = done.lastFailure!.dueAt;
    h.daemon.failWithEvents('waiting');
    await h.settle();
    const waiting = dueOf(h, 'waiting')!;
    h.clock.jump(-HOUR);
    await toNextTimer(h, 60_000);
    assert.equal(h.engine.watch('done')!.lastFailure!.dueAt, made, 'the recovery already made moved');
    assert.equal(dueOf(h, 'waiting'), waiting - HOUR);
    assert.deepEqual(clockWarnings(h), [
      'the wall clock went back by 1:00:00 while running; 1 scheduled recovery keeps the time it had left',
    ]);
  });
});

describe('the clock guard at a start', () => {
  /** A stored watch whose every time is a minute old. */
  function oldWatch(id: string, now: number): WatchedThread {
    return newWatch(id, now - 60_000);
  }

  /** Each kind of time the state records, set `ahead` ms past now on a state otherwise a minute old. */
  const RECORDED: Record<string, (s: PersistedState, w: WatchedThread, at: number) => void> = {
    'the pause': (s, _w, at) => (s.pausedAt = at),
    'a disarm': (s, _w, at) => (s.disarmed = { other: at - 2 * HOUR, 'thread-1': at }),
    'the arming': (_s, w, at) => (w.armedAt = at),
    'the last update': (_s, w, at) => (w.updatedAt = at),
    'the last failure': (_s, w, at) =>
      (w.lastFailure = {
        turnId: 'turn-1',
        message: 'synthetic failure',
        code: 'internalServerError',
        httpStatus: null,
        at,
        dueAt: null,
      }),
    'a recovery sent': (_s, w, at) => (w.pending = { failedTurnId: 'turn-1', attempt: 1, sentAt: at }),
    'the newest history entry': (_s, w, at) =>
      (w.history = [at - 3 * HOUR, at - 2 * HOUR, at].map((t, i) => ({
        at: t,
        failedTurnId: `turn-${i + 1}`,
        attempt: 1,
        error: 'server error',
        outcome: 'recovered' as const,
      }))),
  };

  async function startWith(name: string, ahead: number): Promise<Harness> {
    const dir = tempDir('cgr-clockguard-');
    const daemon = new FakeDaemon(dir);
    daemon.addThread('thread-1');
    const clock = new FakeClock();
    const state = emptyState();
    const w = oldWatch('thread-1', clock.now());
    state.watches['thread-1'] = w;
    RECORDED[name](state, w, clock.now() + ahead);
    const h = await makeHarness({ dir, daemon, clock, store: new MemoryStore(state) });
    harnesses.push(h);
    return h;
  }

  for (const name of Object.keys(RECORDED)) {
    it(`${name} recorded an hour ahead of now: the clock went back while the engine was stopped`, async () => {
      const h = await startWith(name, HOUR);
      assert.deepEqual(clockWarnings(h), [
        'the wall clock went back by 1:00:00 since the state was saved; 0 scheduled recoveries keep the time it had left',
      ]);
    });
  }

  it('the newest time 2 s ahead is slack; 2 s and 1 ms ahead is a jump', async () => {
    assert.deepEqual(clockWarnings(await startWith('the last update', TOLERANCE_MS)), []);
    assert.equal(clockWarnings(await startWith('the last update', TOLERANCE_MS + 1)).length, 1);
  });
});

describe('the system clock', () => {
  it('counts monotonic time, and a timer cleared before it is due never fires', async () => {
    const start = systemClock.elapsed();
    let fired = 0;
    const kept = systemClock.setTimer(() => (fired += 1), 5);
    const cleared = systemClock.setTimer(() => (fired += 100), 5);
    systemClock.clearTimer(cleared);
    await sleep(30);
    assert.equal(fired, 1);
    systemClock.clearTimer(kept); // after it fired: nothing to do
    assert.ok(systemClock.elapsed() - start >= 25, `${systemClock.elapsed() - start} ms counted in 30 ms`);
  });
});
