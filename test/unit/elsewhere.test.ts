// Goals in other Codex apps (issue 11): threads another Codex app (the Codex VS Code extension,
// the desktop app, a TUI run with -c or --profile) holds with its own app-server, in the same
// Codex home. Measured (docs/daemon-behaviour.md (k)): the daemon lists such a thread notLoaded;
// goal/get, thread/read and turns/list work on it; a resume is refused ("already has an active
// writer") while its owner runs; a set from the daemon only writes the state DB (the strict fake
// fails it: rule set-not-loaded); no notification about it reaches a client of the daemon; its
// updatedAt (whole unix seconds) moves on every turn and goal change; once the owner has exited,
// a resume works (a blocked goal: no turn starts).
//
// The table's rows are test/unit/elsewhereRules.test.ts. Here, the engine (test/support/engineHarness.ts)
// against the strict fake daemon with the shipped defaults (DEFAULT_OPTIONS: backoff base 30 s, the
// jitter pinned to the full delay, the 200 ms preparation, the limiter, the 60 s resync): nothing
// is changed from them. The foreign thread is set up as the measured daemon lists it: not loaded,
// held elsewhere (`FakeThread.elsewhere`), its updatedAt in unix seconds of the fake clock, moved
// by every change its owner makes (`owner` below), its rollout holding the owner's task_started
// line (the daemon judge reads from it which turn an activation follows).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { type GoalStatus, type WatchState } from '../../src/model/watch';
import { canRetryNow } from '../../src/model/queries';
import { describeState } from '../../src/model/stateText';
import type { Decision } from '../../src/model/decision';
import { FakeDaemon, type FakeThread, type FakeTurn, testGoal, testTurn } from '../support/fakeDaemon';
import { FakeClock } from '../support/fakeClock';
import { MemoryStore } from '../support/memoryStore';
import { makeHarness, type Harness } from '../support/engineHarness';
import {
  assertNoAutomaticSet,
  assertOneRecoveryPerFailedTurn,
  daemonRecordFrom,
  type TurnRow,
} from '../support/daemonJudge';
import { taskStarted } from '../support/rolloutLines';
import { immediate } from '../support/wait';

// ---- the engine --------------------------------------------------------------

const RESYNC = DEFAULT_OPTIONS.resyncMs;
const BASE = DEFAULT_OPTIONS.baseDelayMs;
const FOREIGN = 'ext-1';

const harnesses: Harness[] = [];
const dirs: string[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

interface World {
  dir: string;
  daemon: FakeDaemon;
  clock: FakeClock;
  store: MemoryStore;
}

function world(): World {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-elsewhere-'));
  dirs.push(dir);
  return { dir, daemon: new FakeDaemon(dir), clock: new FakeClock(), store: new MemoryStore() };
}

async function harness(w: World): Promise<Harness> {
  const h = await makeHarness({ dir: w.dir, daemon: w.daemon, clock: w.clock, store: w.store });
  harnesses.push(h);
  return h;
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/** A thread another Codex app holds: listed notLoaded, its resume refused; its goal and newest turn as given. */
function foreignThread(w: World, goal: GoalStatus, newest: FakeTurn, agoSeconds = 30, id = FOREIGN): FakeThread {
  const t = w.daemon.addThread(id, goal, newest, 'idle');
  t.loaded = false;
  t.elsewhere = true;
  t.updatedAt = seconds(w.clock.now()) - agoSeconds;
  fs.appendFileSync(t.path, `${taskStarted(newest.id)}\n`);
  return t;
}

/** The owner changes the thread (its goal, its newest turn): the state DB's updatedAt moves, in whole seconds. */
function owner(w: World, t: FakeThread, change: { goal?: GoalStatus; turn?: FakeTurn }): void {
  if (change.turn) {
    if (change.turn.id !== t.turn.id) fs.appendFileSync(t.path, `${taskStarted(change.turn.id)}\n`);
    t.turn = change.turn;
  }
  if (change.goal) t.goal = testGoal(t.id, change.goal);
  t.updatedAt = seconds(w.clock.now());
}

/** Someone opens the thread in a client of the daemon (its owner gone): loaded, told as the fake's resume tells it. */
function resumedInDaemon(h: Harness, t: FakeThread): void {
  t.elsewhere = false;
  t.loaded = true;
  t.status = { type: 'idle' };
  h.daemon.notify('thread/goal/updated', { threadId: t.id, turnId: null, goal: t.goal });
}

function decided<T extends Decision['type']>(h: Harness, type: T): Extract<Decision, { type: T }>[] {
  return h.decisions.filter(
    (d): d is Extract<Decision, { type: T }> => d.type === type && 'threadId' in d && d.threadId === FOREIGN,
  );
}

/** Requests the engine made about the foreign thread. */
function asked(h: Harness, method: string): number {
  return h.daemon.count(method, FOREIGN);
}

/** The daemon's own record of the foreign thread: `turns` as it lists them, its goal, its rollout. */
function record(w: World, turns: TurnRow[]) {
  const t = w.daemon.thread(FOREIGN);
  return daemonRecordFrom(FOREIGN, turns, t.goal?.status ?? null, t.path);
}

const stateOf = (h: Harness): WatchState | undefined => h.engine.watch(FOREIGN)?.state;
const text = (h: Harness) => {
  const w = h.engine.watch(FOREIGN)!;
  return describeState(w, h.clock.now(), DEFAULT_OPTIONS.maxAttempts);
};

describe('the engine: goals in other Codex apps, on the strict fake daemon', () => {
  it('a goal blocked there by a transient failure is shown elsewhere (retryable) after the resync, told once, never set', async () => {
    const w = world();
    const t = foreignThread(w, 'blocked', testTurn('turn-1', 'failed'));
    const start = w.clock.now();
    const h = await harness(w);
    assert.deepEqual(stateOf(h), {
      kind: 'elsewhere',
      since: start,
      goal: 'blocked',
      seenActive: false,
      retryable: true,
    });
    const watch = h.engine.watch(FOREIGN)!;
    assert.equal(watch.lastFailure?.turnId, 'turn-1');
    assert.equal(watch.lastFailure?.code, 'internalServerError');
    assert.equal(watch.lastFailure?.dueAt, null, 'a recovery was scheduled for a goal in another app');
    assert.equal(watch.rolloutPath, t.path);
    assert.ok(canRetryNow(watch), 'Retry now is not offered');
    assert.equal(text(h), 'blocked in another Codex app · server error, 0 s ago');
    const attention = decided(h, 'attention');
    assert.equal(attention.length, 1, JSON.stringify(h.decisions));
    assert.match(attention[0].reason, /another Codex app.*Retry now/);
    assert.deepEqual(
      decided(h, 'elsewhere').map((d) => d.status),
      ['blocked'],
    );
    // Time passes, the home is looked at every minute: nothing new is said, the goal not read again.
    await h.advance(5 * RESYNC);
    assert.ok(h.daemon.count('thread/list') >= 6, `listed ${h.daemon.count('thread/list')} times in 5 resyncs`);
    assert.equal(asked(h, 'thread/goal/get'), 1, 'the goal of a thread that did not move was read again');
    assert.equal(decided(h, 'attention').length, 1, 'told twice');
    assert.equal(decided(h, 'elsewhere').length, 1, 'shown twice');
    assert.equal(text(h), 'blocked in another Codex app · server error, 5 min ago');
    assert.equal(h.daemon.count('thread/goal/set'), 0);
    assert.equal(h.daemon.count('thread/resume'), 0, 'the engine tried to load the thread by itself');
    assertNoAutomaticSet(record(w, [t.turn]), 'an automatic set on a goal in another Codex app');
    assert.deepEqual(h.daemon.violations, []);
  });

  for (const how of ['crash', 'stop'] as const) {
    it(`a restart by ${how} keeps what is shown elsewhere and says nothing again`, async () => {
      const w = world();
      const t = foreignThread(w, 'blocked', testTurn('turn-1', 'failed'));
      const first = await harness(w);
      await first.advance(RESYNC);
      const before = structuredClone(first.engine.watch(FOREIGN)!);
      assert.equal(before.state.kind, 'elsewhere');
      if (how === 'crash') first.crash();
      else await first.engine.stop();
      const second = await harness(w);
      await second.advance(2 * RESYNC);
      const after = second.engine.watch(FOREIGN)!;
      assert.deepEqual(after.state, before.state, `after the ${how}`);
      assert.deepEqual(after.lastFailure, before.lastFailure);
      assert.equal(decided(second, 'attention').length, 0, `told again after the ${how}`);
      assert.equal(decided(second, 'elsewhere').length, 0, `shown as new after the ${how}`);
      assert.equal(w.daemon.count('thread/goal/set'), 0);
      assertNoAutomaticSet(record(w, [t.turn]));
    });
  }

  it('after a restart, a goal shown elsewhere that its list no longer reaches (over 7 days) is still kept', async () => {
    const w = world();
    const t = foreignThread(w, 'blocked', testTurn('turn-1', 'failed'));
    const first = await harness(w);
    await first.engine.stop();
    await w.clock.advance(8 * 24 * 3600_000); // nothing runs meanwhile: the engine is stopped
    const second = await harness(w);
    assert.equal(stateOf(second)?.kind, 'elsewhere', 'the goal shown before the restart was dropped');
    assert.equal(decided(second, 'attention').length, 0);
    // Its owner pauses it: its updatedAt moves, and the next look lets it go.
    owner(w, t, { goal: 'paused' });
    await second.advance(RESYNC);
    assert.equal(stateOf(second), undefined);
  });

  it('after a restart, a goal shown elsewhere and paused there long ago (over 7 days) is read and let go', async () => {
    const w = world();
    const t = foreignThread(w, 'blocked', testTurn('turn-1', 'failed'));
    const first = await harness(w);
    await first.engine.stop();
    await w.clock.advance(3600_000);
    owner(w, t, { goal: 'paused' }); // while the engine is stopped
    await w.clock.advance(8 * 24 * 3600_000);
    const second = await harness(w);
    assert.equal(stateOf(second), undefined, 'still shows a goal paused there 8 days ago');
    assert.equal(w.daemon.count('thread/goal/set'), 0);
  });

  it('after a restart, a shown goal whose thread the daemon cannot read any more does not stop the look at the rest', async () => {
    const w = world();
    foreignThread(w, 'blocked', testTurn('turn-1', 'failed'));
    const first = await harness(w);
    await first.engine.stop();
    await w.clock.advance(8 * 24 * 3600_000);
    w.daemon.threads.delete(FOREIGN); // gone from the home: thread/read answers "thread not found"
    foreignThread(w, 'blocked', testTurn('turn-7', 'failed'), 30, 'ext-2'); // a goal stopped in another app since
    const second = await harness(w);
    assert.equal(
      second.engine.watch('ext-2')?.state.kind,
      'elsewhere',
      `the look at the home stopped at the unreadable thread: ${JSON.stringify(second.decisions)}`,
    );
    assert.equal(second.decisions.filter((d) => d.type === 'attention' && d.threadId === 'ext-2').length, 1);
    assert.ok(decided(second, 'warning').length >= 1, 'no word about the thread it could not read');
    assert.equal(stateOf(second)?.kind, 'elsewhere', 'what was shown is dropped on one failed read');
    await second.advance(2 * RESYNC);
    assert.equal(second.decisions.filter((d) => d.type === 'attention' && d.threadId === 'ext-2').length, 1);
    assert.equal(w.daemon.count('thread/goal/set'), 0);
  });

  it('a permanent failure there is told once, and Retry now is not offered: nothing loaded, nothing set', async () => {
    const w = world();
    const t = foreignThread(w, 'blocked', testTurn('turn-1', 'failed', 'contextWindowExceeded'));
    const h = await harness(w);
    assert.deepEqual(stateOf(h), {
      kind: 'elsewhere',
      since: w.clock.now(),
      goal: 'blocked',
      seenActive: false,
      retryable: false,
    });
    assert.equal(decided(h, 'attention').length, 1);
    assert.match(decided(h, 'attention')[0].reason, /look at it there/);
    assert.ok(!canRetryNow(h.engine.watch(FOREIGN)!));
    t.elsewhere = false; // even with the owner gone
    await h.engine.commands.retryNow(FOREIGN);
    await h.advance(BASE + 2 * RESYNC);
    assert.equal(h.daemon.count('thread/resume'), 0, 'loaded a thread Retry now does not apply to');
    assert.equal(h.daemon.count('thread/goal/set'), 0);
    assert.equal(decided(h, 'attention').length, 1, 'told twice');
    assertNoAutomaticSet(record(w, [t.turn]));
  });

  it('a failed turn that ends in the same second as the look that saw it running is still seen', async () => {
    // Codex blocks the goal before the failed turn ends (measured): a look in between shows the
    // turn not ended yet, and its end, in the same whole second, leaves updatedAt where it was.
    const w = world();
    const t = foreignThread(w, 'blocked', testTurn('turn-1', 'inProgress'), 0);
    const h = await harness(w);
    assert.deepEqual(stateOf(h), {
      kind: 'elsewhere',
      since: w.clock.now(),
      goal: 'blocked',
      seenActive: false,
      retryable: false,
    });
    assert.equal(decided(h, 'attention').length, 0);
    const updatedAt = t.updatedAt;
    owner(w, t, { turn: testTurn('turn-1', 'failed') });
    assert.equal(t.updatedAt, updatedAt, 'the same second');
    await h.advance(RESYNC);
    assert.deepEqual(stateOf(h), {
      kind: 'elsewhere',
      since: w.clock.now() - RESYNC,
      goal: 'blocked',
      seenActive: false,
      retryable: true,
    });
    assert.equal(decided(h, 'attention').length, 1, 'the failure was never told');
    await h.advance(3 * RESYNC);
    assert.equal(decided(h, 'attention').length, 1, 'told twice');
    assert.equal(asked(h, 'thread/goal/get'), 2, 'a thread that did not move is read on every look');
    assert.equal(h.daemon.count('thread/goal/set'), 0);
  });

  it('after the wall clock is set back an hour, a goal stopped in another app since is still found', async () => {
    // updatedAt is written by the other app from the same wall clock: after the jump back, new
    // changes carry times older than the newest one the last look listed.
    const w = world();
    foreignThread(w, 'blocked', testTurn('turn-1', 'failed'));
    const h = await harness(w);
    await h.advance(RESYNC);
    w.clock.jump(-3600_000);
    foreignThread(w, 'blocked', testTurn('turn-3', 'failed'), 0, 'ext-2');
    await h.advance(2 * RESYNC);
    assert.equal(
      h.engine.watch('ext-2')?.state.kind,
      'elsewhere',
      'a goal stopped after the clock was set back is not found',
    );
    assert.equal(h.decisions.filter((d) => d.type === 'attention' && d.threadId === 'ext-2').length, 1);
    // And at the looks after that one (the clock still behind the times listed before the jump).
    foreignThread(w, 'blocked', testTurn('turn-5', 'failed'), 0, 'ext-3');
    await h.advance(2 * RESYNC);
    assert.equal(h.engine.watch('ext-3')?.state.kind, 'elsewhere', 'found once after the jump, then blind');
    assert.equal(decided(h, 'attention').length, 1);
    assert.equal(h.decisions.filter((d) => d.type === 'attention' && d.threadId === 'ext-2').length, 1);
    assert.equal(h.daemon.count('thread/goal/set'), 0);
  });

  it('the owner pauses the goal there: the watch is forgotten, nothing set', async () => {
    const w = world();
    const t = foreignThread(w, 'blocked', testTurn('turn-1', 'failed'));
    const h = await harness(w);
    assert.equal(stateOf(h)?.kind, 'elsewhere');
    owner(w, t, { goal: 'paused' });
    await h.advance(RESYNC);
    assert.equal(stateOf(h), undefined, 'a goal paused in another app is still shown');
    assert.ok(decided(h, 'skipped').some((d) => /paused in another Codex app/.test(d.reason)));
    await h.advance(2 * RESYNC);
    assert.equal(stateOf(h), undefined);
    assert.equal(h.daemon.count('thread/goal/set'), 0);
    assertNoAutomaticSet(record(w, [t.turn]));
  });

  it('a goal active there, then blocked by a transient failure: seen active, told once when it stops', async () => {
    const w = world();
    const t = foreignThread(w, 'active', testTurn('turn-1', 'inProgress'));
    const start = w.clock.now();
    const h = await harness(w);
    assert.deepEqual(stateOf(h), {
      kind: 'elsewhere',
      since: start,
      goal: 'active',
      seenActive: true,
      retryable: false,
    });
    assert.equal(text(h), 'running in another Codex app');
    assert.ok(!canRetryNow(h.engine.watch(FOREIGN)!));
    assert.equal(asked(h, 'thread/turns/list'), 0, 'read the turns of a goal that runs there');
    assert.equal(decided(h, 'attention').length, 0);
    await h.advance(RESYNC);
    owner(w, t, { goal: 'blocked', turn: testTurn('turn-1', 'failed') });
    await h.advance(RESYNC);
    assert.deepEqual(stateOf(h), {
      kind: 'elsewhere',
      since: start,
      goal: 'blocked',
      seenActive: true,
      retryable: true,
    });
    assert.equal(decided(h, 'attention').length, 1);
    assert.deepEqual(
      decided(h, 'elsewhere').map((d) => d.status),
      ['active', 'blocked'],
    );
    await h.advance(3 * RESYNC);
    assert.equal(decided(h, 'attention').length, 1, 'told twice');
    assert.equal(h.daemon.count('thread/goal/set'), 0);
    assertNoAutomaticSet(record(w, [t.turn]));
  });

  it('seen active there, then blocked, then opened in the daemon: armed and recovered once', async () => {
    const w = world();
    const t = foreignThread(w, 'active', testTurn('turn-1', 'inProgress'));
    const h = await harness(w);
    await h.advance(RESYNC);
    owner(w, t, { goal: 'blocked', turn: testTurn('turn-1', 'failed') });
    await h.advance(RESYNC);
    assert.equal(stateOf(h)?.kind, 'elsewhere');
    resumedInDaemon(h, t);
    await h.settle();
    assert.ok(decided(h, 'loaded').length === 1, 'no line says the daemon has it now');
    assert.equal(decided(h, 'armed').length, 1, 'not armed');
    assert.equal(stateOf(h)?.kind, 'backoff');
    await h.advance(BASE - 1);
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'recovered before its backoff');
    await h.advance(1);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'not recovered');
    assert.deepEqual(h.engine.watch(FOREIGN)!.recovered, ['turn-1']);
    await h.advance(3 * RESYNC);
    assert.equal(h.daemon.count('thread/goal/set'), 1);
    assertOneRecoveryPerFailedTurn(record(w, [{ id: 'turn-1', status: 'failed' }, t.turn]), ['turn-1']);
    assert.deepEqual(h.daemon.violations, []);
  });

  it('first seen blocked there, then opened in the daemon: not adopted, never set (TestOldBlocked)', async () => {
    const w = world();
    const t = foreignThread(w, 'blocked', testTurn('turn-1', 'failed'));
    const h = await harness(w);
    assert.equal(stateOf(h)?.kind, 'elsewhere');
    resumedInDaemon(h, t);
    await h.settle();
    assert.deepEqual(stateOf(h), { kind: 'notAdopted', status: 'blocked' });
    assert.equal(decided(h, 'armed').length, 0);
    await h.advance(BASE + 3 * RESYNC);
    assert.deepEqual(stateOf(h), { kind: 'notAdopted', status: 'blocked' });
    assert.equal(h.daemon.count('thread/goal/set'), 0);
    assertNoAutomaticSet(record(w, [t.turn]), 'an old block recovered');
  });

  it('Retry now while the other app holds the thread: refused with a word about that app, nothing set', async () => {
    const w = world();
    const t = foreignThread(w, 'blocked', testTurn('turn-1', 'failed'));
    const start = w.clock.now();
    const h = await harness(w);
    await assert.rejects(h.engine.commands.retryNow(FOREIGN), /another Codex app still has this thread open/);
    await h.settle();
    assert.equal(h.daemon.count('thread/resume'), 1);
    assert.ok(decided(h, 'warning').some((d) => /another Codex app/.test(d.message)));
    assert.deepEqual(stateOf(h), {
      kind: 'elsewhere',
      since: start,
      goal: 'blocked',
      seenActive: false,
      retryable: true,
    });
    assert.equal(h.engine.watch(FOREIGN)!.lastFailure?.turnId, 'turn-1', 'the failure was forgotten');
    await h.advance(BASE + 2 * RESYNC);
    assert.equal(h.daemon.count('thread/resume'), 1, 'tried to load it again by itself');
    assert.equal(h.daemon.count('thread/goal/set'), 0);
    assertNoAutomaticSet(record(w, [t.turn]));
  });

  it('Retry now once the other app let go: loaded, exactly one set, recovering → recovered; never a second', async () => {
    const w = world();
    const t = foreignThread(w, 'blocked', testTurn('turn-1', 'failed'));
    const h = await harness(w);
    t.elsewhere = false; // its owner exited: nothing holds the thread, and the daemon has not loaded it
    await h.engine.commands.retryNow(FOREIGN);
    await h.settle();
    assert.equal(h.daemon.count('thread/resume'), 1);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'not recovered');
    const kinds = h.decisions
      .filter((d) => 'threadId' in d && d.threadId === FOREIGN)
      .map((d) => d.type)
      .filter((k) => ['loaded', 'armed', 'recovering', 'recovered'].includes(k));
    assert.deepEqual(kinds, ['loaded', 'armed', 'recovering', 'recovered']);
    const watch = h.engine.watch(FOREIGN)!;
    assert.deepEqual(watch.recovered, ['turn-1']);
    assert.ok(!canRetryNow(watch), 'Retry now still offered after the recovery');
    await h.engine.commands.retryNow(FOREIGN); // nothing left to retry: a no-op
    await h.reconcile();
    await h.advance(3 * RESYNC);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'recovered twice');
    assert.equal(h.daemon.count('thread/resume'), 1);
    assertOneRecoveryPerFailedTurn(record(w, [{ id: 'turn-1', status: 'failed' }, t.turn]), ['turn-1']);
    assert.deepEqual(h.daemon.violations, []);
  });

  it('a crash right after the daemon loaded the thread for Retry now: the restarted engine carries the retry out, once', async () => {
    // (A clean stop cannot fall there: it waits for the work under way, which saves the takeover.)
    const w = world();
    const t = foreignThread(w, 'blocked', testTurn('turn-1', 'failed'));
    const first = await harness(w);
    t.elsewhere = false; // its owner exited
    // The daemon takes the resume (the thread is loaded), and the engine crashes before it reads
    // the reply: what it saved of the person's Retry now is all the next engine has.
    let loaded = false;
    w.daemon.before = (m) => {
      if (m.method !== 'thread/resume' || m.params?.threadId !== FOREIGN) return true;
      w.daemon.before = null;
      t.loaded = true;
      t.status = { type: 'idle' };
      loaded = true;
      first.crash();
      return false; // no reply: the engine is gone
    };
    // Not awaited: a crashed engine's saves never land, so its Retry now never returns.
    void first.engine.commands.retryNow(FOREIGN).catch(() => undefined);
    for (let i = 0; i < 50 && !loaded; i++) await immediate();
    assert.ok(loaded, 'the resume never reached the daemon');
    assert.equal(w.daemon.count('thread/goal/set'), 0);
    const second = await harness(w);
    await second.settle();
    assert.equal(w.daemon.count('thread/goal/set'), 1, 'the Retry now asked before the crash was lost');
    assert.deepEqual(second.engine.watch(FOREIGN)!.recovered, ['turn-1']);
    await second.advance(3 * RESYNC);
    assert.equal(w.daemon.count('thread/goal/set'), 1, 'recovered twice');
    assertOneRecoveryPerFailedTurn(record(w, [{ id: 'turn-1', status: 'failed' }, t.turn]), ['turn-1']);
    assert.deepEqual(w.daemon.violations, []);
  });

  it('Retry now on a goal usage-limited there, the other app gone: loaded, resumed once', async () => {
    const w = world();
    const t = foreignThread(w, 'usageLimited', testTurn('turn-1', 'failed', 'usageLimitExceeded'));
    const h = await harness(w);
    assert.equal(stateOf(h)?.kind, 'elsewhere');
    assert.ok(canRetryNow(h.engine.watch(FOREIGN)!), 'Retry now is not offered on a usage limit there');
    assert.match(text(h), /^usage limit in another Codex app · /);
    t.elsewhere = false;
    await h.engine.commands.retryNow(FOREIGN);
    await h.settle();
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'not resumed');
    assert.deepEqual(h.engine.watch(FOREIGN)!.recovered, ['turn-1']);
    await h.reconcile();
    await h.advance(DEFAULT_OPTIONS.maxDelayMs + 2 * RESYNC);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'resumed twice');
    assertOneRecoveryPerFailedTurn(record(w, [{ id: 'turn-1', status: 'failed' }, t.turn]), ['turn-1']);
    assert.deepEqual(h.daemon.violations, []);
  });
});
