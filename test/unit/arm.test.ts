// `arm THREAD` / "Watch this goal": a person's choice to watch a goal the engine did not adopt. It
// arms from now on and never recovers a failure older than the arming; a failure after it is
// recovered exactly once. Counted from the daemon's own record (test/support/daemonJudge.ts: the
// rollout's automatic activations per failed turn) and from the strict fake daemon's count of
// effective automatic sets.
//
// Shipped defaults (DEFAULT_OPTIONS) everywhere, except the tests of an *active* goal the engine
// did not adopt: they run with `autoArm: false`, because with the shipped `autoArm: true` an
// active goal is armed at first sight and there is nothing for `arm` to do (a blocked goal is
// never adopted whatever `autoArm` says, so those tests keep the default).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import { describeState } from '../../src/model/stateText';
import { FakeClock } from '../support/fakeClock';
import { FakeDaemon, goalEventLine, intentLine, type FakeTurn, testGoal, testTurn } from '../support/fakeDaemon';
import { makeHarness, type Harness } from '../support/engineHarness';
import { MemoryStore } from '../support/memoryStore';
import { failByEvents } from '../support/fleet';
import { taskStarted } from '../support/rolloutLines';
import { assertNoAutomaticSet, assertOneRecoveryPerFailedTurn, daemonRecordFrom } from '../support/daemonJudge';
import { immediate } from '../support/wait';

const T1 = 'thread-1';
const BASE = DEFAULT_OPTIONS.baseDelayMs;
const RESYNC = DEFAULT_OPTIONS.resyncMs;
/** Longer than a first failure's backoff (the base, the jitter pinned to its full value) and a few resyncs. */
const LONG = 10 * 60_000;

interface World {
  dir: string;
  daemon: FakeDaemon;
  clock: FakeClock;
  store: MemoryStore;
  /** Every turn the thread ran, in order (the daemon's turn list). */
  turns: FakeTurn[];
}

const harnesses: Harness[] = [];
const dirs: string[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/**
 * thread-1 as Codex leaves it: its goal set active by a person (the rollout's activation), turn-1 started;
 * then `goal` with turn-1 `newest` (blocked by a failed turn, or still running).
 */
function world(goal: 'active' | 'blocked' | 'usageLimited', newest: FakeTurn): World {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-arm-'));
  dirs.push(dir);
  const daemon = new FakeDaemon(dir);
  const t = daemon.addThread(T1, goal, newest, newest.status === 'inProgress' ? 'active' : 'systemError');
  if (t.status.type === 'active') t.status.activeFlags = [];
  fs.appendFileSync(t.path, intentLine('active') + goalEventLine(testGoal(T1, 'active'))); // a person set the goal
  fs.appendFileSync(t.path, `${taskStarted(newest.id)}\n`);
  return { dir, daemon, clock: new FakeClock(), store: new MemoryStore(), turns: [newest] };
}

async function harness(w: World, options: Partial<EngineOptions> = {}): Promise<Harness> {
  const h = await makeHarness({ dir: w.dir, daemon: w.daemon, clock: w.clock, store: w.store, options });
  harnesses.push(h);
  return h;
}

/** A person resumes the goal in Codex (their own set, marker and all): a new turn starts. */
function personResumes(w: World, turnId: string): void {
  const t = w.daemon.thread(T1);
  w.daemon.human(T1, 'active');
  t.turn = testTurn(turnId, 'inProgress');
  t.status = { type: 'active', activeFlags: [] };
  w.turns.push(t.turn);
  fs.appendFileSync(t.path, `${taskStarted(turnId)}\n`);
  w.daemon.notify('thread/status/changed', { threadId: T1, status: t.status });
  w.daemon.notifySubscribed(T1, 'turn/started', { threadId: T1, turn: t.turn });
}

/** The newest turn fails (the goal blocked), in the real daemon's order of events. */
function fails(w: World, turnId: string): void {
  failByEvents(w.daemon, T1, turnId);
  w.turns[w.turns.length - 1] = w.daemon.thread(T1).turn;
}

/** The daemon's record of thread-1: its turns (with the turn a recovery started), its goal, its rollout. */
function record(w: World) {
  const t = w.daemon.thread(T1);
  const turns = w.turns.some((x) => x.id === t.turn.id) ? w.turns : [...w.turns, t.turn];
  return daemonRecordFrom(T1, turns, t.goal?.status ?? null, t.path);
}

const stateOf = (h: Harness) => h.engine.watch(T1)?.state;
const said = (h: Harness, type: string) => h.decisions.filter((d) => d.type === type && 'threadId' in d);

/** After `arm` of a goal blocked by turn-1: a person resumes it, turn-2 fails, and only turn-2 is recovered, once. */
async function newFailureRecoveredOnce(w: World, h: Harness): Promise<void> {
  personResumes(w, 'turn-2');
  await h.settle();
  assert.equal(stateOf(h)?.kind, 'running', 'the resumed goal is not watched as running');
  fails(w, 'turn-2');
  await h.settle();
  assert.equal(stateOf(h)?.kind, 'backoff', `the new failure is not scheduled: ${JSON.stringify(stateOf(h))}`);
  await h.advance(BASE + 2 * RESYNC);
  await h.advance(LONG);
  assert.equal(w.daemon.automaticSets.get(`${T1}/turn-2`), 1, 'the failure after the arming was not recovered once');
  assert.equal(
    w.daemon.automaticSets.get(`${T1}/turn-1`),
    undefined,
    'the failure from before the arming was recovered',
  );
  assertOneRecoveryPerFailedTurn(record(w), ['turn-2']);
  assert.deepEqual(w.daemon.violations, []);
}

describe('arm: a person watches a goal the engine did not adopt', () => {
  it('an active goal (autoArm off): armed, its intent saved before the engine subscribes, a later failure recovered exactly once', async () => {
    const w = world('active', testTurn('turn-1', 'inProgress'));
    const h = await harness(w, { autoArm: false });
    assert.deepEqual(stateOf(h), { kind: 'notAdopted', status: 'active' });
    let savedAtResume: string | undefined;
    w.daemon.before = (m) => {
      if (m.method === 'thread/resume') savedAtResume ??= w.store.saved.watches[T1]?.state.kind;
    };
    await h.engine.commands.arm(T1);
    await h.settle();
    assert.equal(savedAtResume, 'running', 'the engine subscribed before the arming was saved');
    assert.equal(stateOf(h)?.kind, 'running');
    assert.equal(h.engine.watch(T1)?.beforeArming, null, 'a running turn is not a failure from before the arming');
    assert.equal(said(h, 'armed').length, 1);
    fails(w, 'turn-1');
    await h.settle();
    assert.equal(stateOf(h)?.kind, 'backoff');
    await h.advance(BASE + 2 * RESYNC);
    await h.advance(LONG);
    assert.equal(w.daemon.automaticSets.get(`${T1}/turn-1`), 1);
    assertOneRecoveryPerFailedTurn(record(w), ['turn-1']);
    assert.deepEqual(w.daemon.violations, []);
  });

  it('Disarm, then Re-arm, of a goal never adopted is a first arming: the failure older than it is never recovered', async () => {
    const w = world('blocked', testTurn('turn-1', 'failed'));
    const h = await harness(w);
    assert.deepEqual(stateOf(h), { kind: 'notAdopted', status: 'blocked' });
    await h.engine.commands.disarm(T1);
    await h.settle();
    const disarmed = stateOf(h);
    assert.ok(disarmed?.kind === 'disarmed' && disarmed.neverArmed === true, JSON.stringify(disarmed));
    await h.engine.commands.rearm(T1);
    await h.settle();
    assert.equal(stateOf(h)?.kind, 'failedBeforeArming', `re-armed as if armed before: ${JSON.stringify(stateOf(h))}`);
    await h.advance(BASE + 2 * RESYNC);
    await h.advance(LONG);
    assertNoAutomaticSet(record(w));
    await newFailureRecoveredOnce(w, h);
  });

  it('an active goal the engine did not adopt (autoArm off) is never recovered without arm', async () => {
    const w = world('active', testTurn('turn-1', 'inProgress'));
    const h = await harness(w, { autoArm: false });
    fails(w, 'turn-1');
    await h.settle();
    await h.advance(LONG);
    assert.equal(stateOf(h)?.kind, 'notAdopted');
    assertNoAutomaticSet(record(w));
  });

  it('a goal blocked by a failure older than the arming: armed, that failure never recovered and said why; a new one after the goal is resumed is', async () => {
    const w = world('blocked', testTurn('turn-1', 'failed'));
    const h = await harness(w);
    assert.deepEqual(stateOf(h), { kind: 'notAdopted', status: 'blocked' });
    await h.engine.commands.arm(T1);
    await h.settle();
    const state = stateOf(h);
    assert.equal(state?.kind, 'failedBeforeArming', `not shown as stopped before the arming: ${JSON.stringify(state)}`);
    assert.equal(w.store.saved.watches[T1]?.beforeArming, 'turn-1', 'the failure at the arming is not saved');
    assert.match(describeState(h.engine.watch(T1)!, h.clock.now(), DEFAULT_OPTIONS.maxAttempts), /before you armed it/);
    assert.equal(said(h, 'armed').length, 1);
    assert.equal(said(h, 'attention').length, 0, 'a person who just armed the goal is told it needs attention');
    await h.advance(LONG);
    assert.equal(stateOf(h)?.kind, 'failedBeforeArming');
    assertNoAutomaticSet(record(w), 'the failure from before the arming was recovered');
    await newFailureRecoveredOnce(w, h);
  });

  it('a goal stopped by a usage limit before the arming is not resumed after the reset', async () => {
    const w = world('usageLimited', testTurn('turn-1', 'failed', 'usageLimitExceeded'));
    const h = await harness(w);
    assert.deepEqual(stateOf(h), { kind: 'notAdopted', status: 'usageLimited' });
    await h.engine.commands.arm(T1);
    await h.settle();
    assert.deepEqual(
      { kind: stateOf(h)?.kind, code: (stateOf(h) as { code?: string }).code },
      { kind: 'failedBeforeArming', code: 'usageLimitExceeded' },
    );
    await h.advance(DEFAULT_OPTIONS.maxDelayMs + DEFAULT_OPTIONS.usageMarginMs + LONG);
    assert.equal(stateOf(h)?.kind, 'failedBeforeArming');
    assertNoAutomaticSet(record(w), 'the usage limit from before the arming was resumed');
    assert.deepEqual(w.daemon.violations, []);
  });

  it('a thread the user disarmed: arm is a choice made again, it clears the disarm record; the old failure stays unrecovered', async () => {
    const w = world('blocked', testTurn('turn-1', 'failed'));
    const h = await harness(w);
    await h.engine.commands.disarm(T1);
    await h.settle();
    assert.equal(stateOf(h)?.kind, 'disarmed');
    assert.ok(w.store.saved.disarmed[T1] !== undefined);
    await h.engine.commands.arm(T1);
    await h.settle();
    assert.equal(w.store.saved.disarmed[T1], undefined, 'the disarm record survived the arming');
    assert.equal(stateOf(h)?.kind, 'failedBeforeArming');
    await h.advance(LONG);
    assertNoAutomaticSet(record(w));
    await newFailureRecoveredOnce(w, h);
  });

  it('an unknown thread is refused with a clear error; one already armed is a no-op, said in the log', async () => {
    const w = world('active', testTurn('turn-1', 'inProgress'));
    const h = await harness(w);
    await assert.rejects(
      h.engine.commands.arm('no-such-thread'),
      /arm no-such-thread: the engine knows no goal in this thread/,
    );
    assert.equal(stateOf(h)?.kind, 'running', 'not armed at first sight (autoArm is on)');
    const before = structuredClone(h.engine.watch(T1));
    const requests = w.daemon.requests.length;
    await h.engine.commands.arm(T1);
    await h.settle();
    assert.deepEqual(h.engine.watch(T1), before, 'arm changed a watch that was armed already');
    assert.equal(w.daemon.requests.length, requests, 'arm of an armed thread asked the daemon');
    const skipped = h.decisions.filter((d) => d.type === 'skipped' && d.threadId === T1);
    assert.deepEqual(
      skipped.map((d) => d.type === 'skipped' && d.reason),
      ['arm: already watched'],
    );
  });

  it('an event between the reads of the arming: all read again; a thread that keeps changing through five reads is refused, said why, not armed', async () => {
    const w = world('active', testTurn('turn-1', 'inProgress'));
    const h = await harness(w, { autoArm: false });
    let changes = 2;
    w.daemon.before = (m) => {
      // The status changes while the goal is read: the daemon's event comes before its reply.
      if (m.method === 'thread/goal/get' && changes-- > 0)
        w.daemon.notify('thread/status/changed', { threadId: T1, status: { type: 'active', activeFlags: [] } });
    };
    const reads = () => w.daemon.count('thread/goal/get');
    let before = reads();
    await h.engine.commands.arm(T1);
    assert.equal(reads() - before, 3, 'not read again after each event, or read past the first quiet read');
    assert.equal(stateOf(h)?.kind, 'running');

    const w2 = world('active', testTurn('turn-1', 'inProgress'));
    const h2 = await harness(w2, { autoArm: false });
    w2.daemon.before = (m) => {
      if (m.method === 'thread/goal/get')
        w2.daemon.notify('thread/status/changed', { threadId: T1, status: { type: 'active', activeFlags: [] } });
    };
    before = w2.daemon.count('thread/goal/get');
    await assert.rejects(
      h2.engine.commands.arm(T1),
      /^Error: arm thread-1: the thread kept changing while it was read; try again$/,
    );
    assert.equal(w2.daemon.count('thread/goal/get') - before, 5);
    assert.deepEqual(h2.engine.watch(T1)?.state, { kind: 'notAdopted', status: 'active' });
    assert.equal(said(h2, 'armed').length, 0);
  });

  it('the goal cleared as the arming reads it: refused, said why, and the watch goes', async () => {
    const w = world('active', testTurn('turn-1', 'inProgress'));
    const h = await harness(w, { autoArm: false });
    w.daemon.before = (m) => {
      if (m.method === 'thread/goal/get') w.daemon.thread(T1).goal = null;
    };
    await assert.rejects(h.engine.commands.arm(T1), /^Error: arm thread-1: its goal was cleared$/);
    assert.equal(h.engine.watch(T1), undefined);
    assert.deepEqual(
      said(h, 'skipped').map((d) => d.type === 'skipped' && d.reason),
      ['goal cleared'],
    );
    assert.equal(said(h, 'armed').length, 0);
  });

  it('not connected: refused with a clear error, nothing recorded', async () => {
    const w = world('blocked', testTurn('turn-1', 'failed'));
    const h = await harness(w);
    w.daemon.down = true;
    w.daemon.disconnect();
    await h.settle();
    await assert.rejects(h.engine.commands.arm(T1), /arm thread-1: not connected to the Codex daemon/);
    assert.deepEqual(stateOf(h), { kind: 'notAdopted', status: 'blocked' });
    assert.deepEqual(w.store.saved.watches[T1]?.state, { kind: 'notAdopted', status: 'blocked' });
  });

  it('a thread the daemon has not loaded: armed without loading it; once a client loads it, the old failure is still not recovered', async () => {
    const w = world('blocked', testTurn('turn-1', 'failed'));
    const t = w.daemon.thread(T1);
    const h = await harness(w);
    assert.deepEqual(stateOf(h), { kind: 'notAdopted', status: 'blocked' });
    t.loaded = false; // the daemon unloaded it (it keeps no thread loaded across its own restart)
    await h.advance(RESYNC);
    assert.deepEqual(stateOf(h), { kind: 'notAdopted', status: 'blocked' }, 'the unload changed the row');
    const resumes = w.daemon.count('thread/resume');
    await h.engine.commands.arm(T1);
    await h.settle();
    assert.equal(stateOf(h)?.kind, 'unloaded');
    assert.equal(h.engine.watch(T1)?.beforeArming, 'turn-1');
    assert.equal(w.daemon.count('thread/resume'), resumes, 'arm loaded the thread');
    t.loaded = true; // a person opened it in a client of the daemon
    await h.advance(RESYNC);
    assert.equal(stateOf(h)?.kind, 'failedBeforeArming', JSON.stringify(stateOf(h)));
    await h.advance(LONG);
    assertNoAutomaticSet(record(w));
    await newFailureRecoveredOnce(w, h);
  });

  for (const how of ['crash', 'stop'] as const) {
    it(`restart after the arming (${how}): still armed, the old failure still not recovered, a new one is`, async () => {
      const w = world('blocked', testTurn('turn-1', 'failed'));
      const first = await harness(w);
      if (how === 'crash') {
        // Dropped the moment it subscribes (the first thing it does after saving the arming): the
        // store holds only what was written by then.
        w.daemon.before = (m) => {
          if (m.method !== 'thread/resume') return;
          w.daemon.before = null;
          first.crash();
          return false;
        };
        void first.engine.commands.arm(T1).catch(() => undefined); // a crashed engine's arm never returns
        for (let i = 0; i < 200 && w.daemon.before !== null; i++) await immediate();
        assert.equal(w.daemon.before, null, 'the engine never subscribed');
      } else {
        await first.engine.commands.arm(T1);
        await first.settle();
        assert.equal(stateOf(first)?.kind, 'failedBeforeArming');
        await first.engine.stop();
      }
      assert.equal(w.store.saved.watches[T1]?.beforeArming, 'turn-1', `the arming was not saved before the ${how}`);
      assertNoAutomaticSet(record(w));
      const second = await harness(w);
      await second.settle();
      assert.equal(stateOf(second)?.kind, 'failedBeforeArming', `after the ${how}: ${JSON.stringify(stateOf(second))}`);
      await second.advance(LONG);
      assertNoAutomaticSet(record(w), `the failure from before the arming was recovered after the ${how}`);
      await newFailureRecoveredOnce(w, second);
    });
  }
});

// `autoArm` turned on while the engine runs (the first run's "Watch every goal", or the setting):
// the goals it showed as not adopted are armed at once, as a restart with `autoArm` on would, not at
// the next resync (60 s); a goal that stopped before the choice is an old block and stays unadopted.
describe('autoArm turned on while the engine runs', () => {
  it('an active goal shown as not adopted is armed at once, before any resync, and nothing is sent', async () => {
    const w = world('active', testTurn('turn-1', 'inProgress'));
    const h = await harness(w, { autoArm: false });
    assert.deepEqual(stateOf(h), { kind: 'notAdopted', status: 'active' });
    const at = h.clock.now();
    h.engine.updateOptions({ ...DEFAULT_OPTIONS, autoArm: true });
    await h.settle();
    assert.equal(h.clock.now(), at, 'the clock moved: the arming waited for a timer');
    assert.equal(stateOf(h)?.kind, 'running', `not armed: ${JSON.stringify(stateOf(h))}`);
    assert.equal(said(h, 'armed').length, 1);
    assertNoAutomaticSet(record(w));
    // A failure after the choice is recovered exactly once.
    fails(w, 'turn-1');
    await h.settle();
    assert.equal(stateOf(h)?.kind, 'backoff');
    await h.advance(BASE + 2 * RESYNC);
    await h.advance(LONG);
    assertOneRecoveryPerFailedTurn(record(w), ['turn-1']);
    assert.deepEqual(w.daemon.violations, []);
  });

  it('a goal blocked while it was not adopted stays not adopted: its failure is never recovered', async () => {
    const w = world('active', testTurn('turn-1', 'inProgress'));
    const h = await harness(w, { autoArm: false });
    fails(w, 'turn-1');
    await h.settle();
    assert.deepEqual(stateOf(h), { kind: 'notAdopted', status: 'blocked' });
    h.engine.updateOptions({ ...DEFAULT_OPTIONS, autoArm: true });
    await h.settle();
    await h.advance(LONG);
    assert.equal(stateOf(h)?.kind, 'notAdopted');
    assertNoAutomaticSet(record(w));
    assert.deepEqual(w.daemon.violations, []);
  });
});
