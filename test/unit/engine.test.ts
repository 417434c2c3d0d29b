// Engine rules beyond the seed: what is never touched, give-up, usage limits, the global
// limiter, user intent from the extension, events in the real daemon's order, reconnects.
//
// Shipped defaults (DEFAULT_OPTIONS) unless a test says otherwise in its own header comment:
// backoff base 30 s (the jitter is pinned to the full nominal delay: 30 s, 60 s, 120 s, ...), cap
// 30 min, the 200 ms preparation, a burst of 3 recoveries then one per 5 s, the 60 s resync.
// The fake daemon is strict (test/support/fakeDaemon.ts): any forbidden set fails the test.
// The store is test/support/memoryStore.ts; the durability tests hold its loads or saves (a slow
// disk), fail its saves (a full disk), or watch each save as it is asked for.
// A wait for async work polls real time (at most 5 s, every 10 ms), then goes on: the assertion
// after it says what was missing.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { canRetryNow, dueAt } from '../../src/model/queries';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { JsonFileStore } from '../../src/store/jsonFileStore';
import { StateSerializer } from '../../src/store/store';
import type { PersistedState } from '../../src/model/watch';
import { FakeDaemon, testGoal, testTurn } from '../support/fakeDaemon';
import { FaultProxy } from '../support/faultProxy';
import { armedHarness, makeHarness, type Harness, type HarnessInit } from '../support/engineHarness';
import { MemoryStore } from '../support/memoryStore';
import { failByEvents, ownProviders } from '../support/fleet';
import { goalEvent, modelGoalCall, noiseLine, realMarker, RolloutWriter } from '../support/rolloutLines';
import { rng } from '../support/random';
import { immediate, poll, turns } from '../support/wait';

const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
  for (const h of harnesses) fs.rmSync(h.dir, { recursive: true, force: true });
});

/**
 * thread-1 failed, its recovery prepared: the write-ahead intent saved, the set not sent (PREPARE ms to its due
 * time).
 */
async function preparedRecovery(): Promise<Harness> {
  const store = new MemoryStore();
  const h = await armed({ store });
  failByEvents(h.daemon, 'thread-1', 'turn-1');
  await h.settle();
  const due = dueAt(h.engine.watch('thread-1')!)!;
  await h.advance(due - PREPARE - h.clock.now());
  assert.ok(store.saved.watches['thread-1']?.pending, 'not prepared');
  return h;
}

/** thread-1's turn fails on a usage limit: the goal usageLimited (told), and the turn's end (told when `ended`). */
function usageLimit(h: Harness, status: 'idle' | 'systemError' | null, ended: boolean): void {
  const t = h.daemon.thread();
  t.goal = testGoal('thread-1', 'usageLimited');
  t.turn = testTurn('turn-1', 'failed', 'usageLimitExceeded');
  if (status) t.status = { type: status };
  h.daemon.notify('thread/goal/updated', { threadId: 'thread-1', turnId: 'turn-1', goal: t.goal });
  if (ended) h.daemon.notify('turn/completed', { threadId: 'thread-1', turn: t.turn });
}

const armed = (init: HarnessInit = {}, threads = ['thread-1']) => armedHarness(threads, init, harnesses);

const BASE = DEFAULT_OPTIONS.baseDelayMs;
const PREPARE = DEFAULT_OPTIONS.prepareMs;
const RESYNC = DEFAULT_OPTIONS.resyncMs;
const INTERVAL = DEFAULT_OPTIONS.limiterIntervalMs;

describe('engine', () => {
  it('reacts to events in the real order without a resync, and fires exactly at the due time', async () => {
    const h = await armed();
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.state.kind, 'backoff');
    const due = dueAt(w)!;
    assert.equal(due, h.clock.now() + BASE);
    const setAt: number[] = [];
    h.daemon.before = (m) => {
      if (m.method === 'thread/goal/set') setAt.push(h.clock.now());
    };
    const before = h.daemon.requests.length;
    await h.advance(due - PREPARE - 1 - h.clock.now());
    assert.equal(h.daemon.requests.length, before, 'polled while waiting for the due time');
    await h.advance(due - 1 - h.clock.now());
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'sent before the due time');
    await h.advance(1);
    assert.deepEqual(setAt, [due], 'the set did not go out exactly at the due time');
    // The pre-set reads (prepared ahead), then the set.
    assert.deepEqual(
      h.daemon.requests.slice(before, before + 4).map((m) => m.method),
      ['thread/goal/get', 'thread/read', 'thread/turns/list', 'thread/goal/set'],
    );
  });

  it('a recovery called off because a newer failed turn came while it waited withdraws its intent: no recovery is claimed for a set never sent', async () => {
    // Found by the crash-consistency property (seed 32066699): the intent written ahead of turn-1's
    // set stayed on the watch after the attempt was called off (the watch had moved on to the newer
    // failed turn), and the next look took that newer turn for the set's effect.
    const h = await armed();
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    const due = dueAt(h.engine.watch('thread-1')!)!;
    await h.advance(due - PREPARE / 2 - h.clock.now()); // prepared: its intent is on the watch
    assert.ok(h.engine.watch('thread-1')!.pending, 'no write-ahead intent before the due time');
    // The person sets the goal active; turn-2 runs and fails before turn-1's set goes out.
    const t = h.daemon.thread('thread-1');
    h.daemon.human('thread-1', 'active');
    t.turn = testTurn('turn-2', 'inProgress');
    t.status = { type: 'active', activeFlags: [] };
    h.daemon.notify('thread/status/changed', { threadId: 'thread-1', status: t.status });
    h.daemon.notifySubscribed('thread-1', 'turn/started', { threadId: 'thread-1', turn: t.turn });
    failByEvents(h.daemon, 'thread-1', 'turn-2');
    await h.settle(); // the look counts turn-2 while turn-1's set waits for its due time
    assert.equal(h.engine.watch('thread-1')!.lastFailure?.turnId, 'turn-2');
    await h.advance(PREPARE);
    assert.ok(
      h.decisions.some((d) => d.type === 'skipped' && d.threadId === 'thread-1'),
      `the attempt was not called off: ${JSON.stringify(h.decisions.map((d) => d.type))} ${JSON.stringify(h.engine.watch('thread-1')!.state)} sets ${h.daemon.count('thread/goal/set')}`,
    );
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'the set for turn-1 went out after the newer turn');
    await h.reconcile(); // the next look
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.pending, null, 'the intent of the called-off set is still on the watch');
    assert.ok(!w.recovered.includes('turn-1'), 'turn-1 counted as recovered without a set');
    assert.ok(!h.decisions.some((d) => d.type === 'recovered'), 'a recovery claimed for a set never sent');
    assert.deepEqual([w.state.kind, w.lastFailure?.turnId], ['backoff', 'turn-2']);
  });

  it('prepares a recovery ahead: reads and the write-ahead save before the due time, the set exactly at it', async () => {
    const store = new MemoryStore();
    const h = await armed({ store });
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    const due = dueAt(h.engine.watch('thread-1')!)!;
    const setAt: number[] = [];
    h.daemon.before = (m) => {
      if (m.method === 'thread/goal/set') setAt.push(h.clock.now());
    };
    await h.advance(due - PREPARE - h.clock.now());
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'sent before the due time');
    assert.deepEqual(
      store.saved.watches['thread-1']?.pending,
      { failedTurnId: 'turn-1', attempt: 1, sentAt: due - PREPARE },
      'the intent is not on disk ahead of the set',
    );
    await h.advance(PREPARE - 1);
    assert.deepEqual(setAt, [], 'sent before the due time');
    await h.advance(1);
    assert.deepEqual(setAt, [due]);
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'running');
  });

  it('idle() waits for a prepared set that went out at its due time (a shutdown or a crash test sees it)', async () => {
    const h = await preparedRecovery();
    // The due time, and nothing else: the send's timer fires; only idle() is waited for.
    while (h.clock.step(PREPARE)) {
      /* every timer due by then */
    }
    await h.engine.idle();
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'idle() returned with the set not sent');
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'running', 'idle() returned before its outcome was read');
  });

  it('a prepared recovery is called off when the user acts while it waits for its due time', async () => {
    const h = await preparedRecovery();
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'sent before the due time');
    h.daemon.human('thread-1', 'paused');
    await h.settle(); // the notification crosses the wire
    await h.advance(PREPARE);
    await h.advance(RESYNC);
    assert.equal(
      h.daemon.count('thread/goal/set'),
      0,
      `set after the user paused the goal: ${JSON.stringify(h.decisions)}`,
    );
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.pending, null);
    assert.deepEqual(w.state.kind, 'userIntent');
    assert.ok(
      h.decisions.some((d) => d.type === 'skipped' && /waited for its due time/.test(d.reason)),
      'no log line for the called-off recovery',
    );
  });

  it('saves only what changed, and what it saves equals a full save: the hint never hides a change', async () => {
    // Each save is serialized twice: with the engine's hint and in full. The incremental one keeps
    // each watch's JSON as it took it in (`keepJson`: its document joins those), so a change the
    // hint left out shows as a difference; without it, its document serializes the live state.
    const incremental = new StateSerializer({ keepJson: true });
    let saves = 0;
    let hinted = 0;
    const store = new MemoryStore();
    const save = store.save.bind(store);
    store.save = async (state: PersistedState, changed?: ReadonlySet<string>) => {
      saves += 1;
      if (changed) hinted += 1;
      assert.equal(
        incremental.serialize(state, changed),
        new StateSerializer().serialize(state),
        `save ${saves} with changed=${JSON.stringify(changed && [...changed])} differs from a full save`,
      );
      return save(state);
    };
    const ids = ['t-a', 't-b', 't-c', 't-d'];
    const h = await armed({ store }, ids);
    failByEvents(h.daemon, 't-a', 'turn-1');
    failByEvents(h.daemon, 't-b', 'turn-1', 'responseStreamDisconnected');
    await h.settle();
    await h.engine.resync();
    await h.advance(BASE);
    failByEvents(h.daemon, 't-c', 'turn-1');
    await h.settle();
    await h.engine.commands.retryNow('t-c');
    await h.settle();
    await h.engine.commands.disarm('t-d');
    h.daemon.human('t-a', 'paused');
    await h.advance(2_000);
    await h.engine.commands.rearm('t-d');
    // A change that moves no state (tokens used): it must be saved all the same.
    const c = h.daemon.thread('t-c');
    c.goal = { ...c.goal!, tokensUsed: 999, updatedAt: c.goal!.updatedAt + 1 };
    h.daemon.notify('thread/goal/updated', { threadId: 't-c', turnId: null, goal: c.goal });
    await h.settle();
    await h.engine.commands.pauseAll();
    assert.equal(store.saved.watches['t-c']?.goal?.tokensUsed, 999, 'a goal change was not saved');
    await h.engine.commands.resumeAll();
    failByEvents(h.daemon, 't-b', 'turn-2');
    await h.settle();
    await h.advance(10 * 60_000);
    await h.engine.resync();
    assert.ok(saves >= 8 && hinted >= 6, `only ${saves} saves (${hinted} with a hint)`);
    assert.ok(
      h.daemon.count('thread/goal/set') >= 3,
      `the scenario recovered too little to mean anything: ${h.daemon.count('thread/goal/set')} sets; ${h.decisions.map((d) => d.type).join(',')}`,
    );
  });

  it('sends no RPC between resyncs while threads are healthy, and one per thread per resync', async () => {
    const h = await armed({}, ['a', 'b', 'c']);
    const n = h.daemon.requests.length;
    await h.advance(59_999);
    assert.equal(h.daemon.requests.length, n, 'polled between resyncs');
    await h.advance(1);
    const resync = h.daemon.requests.slice(n).map((m) => m.method);
    // One goal read per loaded thread, plus one list of the home (the threads of other Codex apps:
    // none here, so nothing more is read).
    assert.deepEqual(resync.sort(), [
      'thread/goal/get',
      'thread/goal/get',
      'thread/goal/get',
      'thread/list',
      'thread/loaded/list',
    ]);
  });

  for (const [name, goal, turn, expected] of [
    ['a model-set block', 'blocked', testTurn('turn-1', 'completed'), 'modelBlocked'],
    ['a complete goal', 'complete', testTurn('turn-1', 'completed'), 'complete'],
    ['a budget-limited goal', 'budgetLimited', testTurn('turn-1', 'completed'), 'budgetLimited'],
    ['a paused goal', 'paused', testTurn('turn-1', 'completed'), 'paused'],
    ['an interrupted turn', 'blocked', testTurn('turn-1', 'interrupted'), 'interrupted'],
    ['a context window overflow', 'blocked', testTurn('turn-1', 'failed', 'contextWindowExceeded'), 'needsAttention'],
    [
      'a 400',
      'blocked',
      testTurn('turn-1', 'failed', { responseTooManyFailedAttempts: { httpStatusCode: 400 } }),
      'needsAttention',
    ],
    ['a 401', 'blocked', testTurn('turn-1', 'failed', 'unauthorized'), 'needsAttention'],
  ] as const) {
    it(`never touches ${name}`, async () => {
      const h = await armed();
      const t = h.daemon.thread();
      t.goal = testGoal('thread-1', goal);
      t.turn = turn;
      t.status = { type: 'idle' };
      h.daemon.notify('thread/goal/updated', { threadId: 'thread-1', turnId: null, goal: t.goal });
      h.daemon.notify('turn/completed', { threadId: 'thread-1', turn });
      await h.settle();
      await h.advance(2 * 60 * 60_000);
      assert.equal(h.engine.watch('thread-1')!.state.kind, expected);
      assert.equal(h.daemon.count('thread/goal/set'), 0);
    });
  }

  it('never recovers a goal the model blocked itself, even when its turn then failed', async () => {
    const h = await armed();
    const t = h.daemon.thread();
    // The model's update_goal call, as Codex writes it into the rollout (no goal event follows).
    fs.appendFileSync(
      t.path,
      `${JSON.stringify({ type: 'response_item', payload: { type: 'function_call', name: 'update_goal', arguments: '{"status":"blocked"}', call_id: 'c1' } })}\n`,
    );
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'modelBlocked');
    await h.advance(10 * 60_000);
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'recovered a block the model chose');
    // A later activation (a goal event in the rollout) ends that: the next failure is recovered.
    fs.appendFileSync(
      t.path,
      `${JSON.stringify({ type: 'event_msg', payload: { type: 'thread_goal_updated', goal: { status: 'active' } } })}\n`,
    );
    t.goal = testGoal('thread-1', 'active');
    t.turn = testTurn('turn-2', 'inProgress');
    t.status = { type: 'active', activeFlags: [] };
    h.daemon.notify('thread/goal/updated', { threadId: 'thread-1', turnId: null, goal: t.goal });
    await h.settle();
    failByEvents(h.daemon, 'thread-1', 'turn-2');
    await h.settle();
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'backoff');
  });

  it("a provider's failure while the thread was disarmed is recovered once after Re-arm (armed again from the goal's activation, not from now)", async () => {
    const h = await armed();
    await h.engine.commands.disarm('thread-1');
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'disarmed');
    await h.advance(10 * 60_000);
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'recovered while disarmed');
    await h.engine.commands.rearm('thread-1');
    await h.settle();
    await h.advance(10 * 60_000);
    assert.equal(
      h.daemon.automaticSets.get('thread-1/turn-1'),
      1,
      'the failure since the activation was not recovered once',
    );
  });

  it('a block the model chose while the thread was disarmed is not recovered after Re-arm (found by the crash-consistency property)', async () => {
    const h = await armed();
    const t = h.daemon.thread();
    await h.engine.commands.disarm('thread-1');
    fs.appendFileSync(t.path, `${modelGoalCall('blocked')}\n`);
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'disarmed');
    await h.engine.commands.rearm('thread-1');
    await h.settle();
    assert.equal(
      h.engine.watch('thread-1')!.state.kind,
      'modelBlocked',
      "the re-arm took the model's block for a failure",
    );
    await h.advance(10 * 60_000);
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'recovered a block the model chose');
  });

  it('gives up after max attempts of consecutive failures; a successful turn resets the count', async () => {
    // maxAttempts 3 (shipped: 6): three failures in a row make the give-up, not six.
    const h = await armed({ options: { maxAttempts: 3 } });
    let turn = 1;
    const failAndWait = async () => {
      failByEvents(h.daemon, 'thread-1', `turn-${turn++}`);
      await h.settle();
      await h.advance(10 * 60_000); // past every backoff up to the give-up (30 s, 60 s, 120 s);
    };
    await failAndWait();
    await failAndWait();
    assert.equal(h.engine.watch('thread-1')!.failures, 2);
    // A turn that completes successfully resets the count.
    h.daemon.notify('turn/completed', { threadId: 'thread-1', turn: testTurn(`turn-${turn++}`, 'completed') });
    await h.settle();
    assert.equal(h.engine.watch('thread-1')!.failures, 0);
    for (let i = 0; i < 3; i++) await failAndWait();
    assert.equal(h.daemon.count('thread/goal/set'), 5);
    failByEvents(h.daemon, 'thread-1', `turn-${turn++}`);
    await h.settle();
    const w = h.engine.watch('thread-1')!;
    assert.deepEqual(w.state, { kind: 'gaveUp', attempts: 3 });
    assert.ok(h.decisions.some((d) => d.type === 'gave-up'));
    await h.advance(2 * 60 * 60_000);
    assert.equal(h.daemon.count('thread/goal/set'), 5, 'kept trying after giving up');
    // Retry now is the user's explicit request: one more try.
    await h.engine.commands.retryNow('thread-1');
    await h.settle();
    assert.equal(h.daemon.count('thread/goal/set'), 6);
  });

  it('resumes a usage-limited goal after the reset plus the margin, and only then', async () => {
    const h = await armed(); // the shipped 60 s margin
    h.daemon.rateLimitResetSeconds = Math.floor(h.clock.now() / 1000) + 3600;
    usageLimit(h, 'idle', true);
    await h.settle();
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.state.kind, 'usageLimited');
    assert.equal(dueAt(w), h.daemon.rateLimitResetSeconds * 1000 + 60_000);
    await h.advance(3600_000 + 59_000);
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'resumed before the reset');
    await h.advance(1_000);
    assert.equal(h.daemon.count('thread/goal/set'), 1);
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'running');
  });

  it('waits the maximum delay for a usage limit whose reset is unknown', async () => {
    const h = await armed();
    usageLimit(h, null, false);
    await h.settle();
    assert.equal(dueAt(h.engine.watch('thread-1')!), h.clock.now() + DEFAULT_OPTIONS.maxDelayMs);
  });

  // Node keeps no timer over 2^31-1 ms (about 24.8 days): it fires after 1 ms, and the engine's
  // due timer re-armed itself every millisecond (issue 12). The fake clock refuses such a delay
  // (a RangeError). Two ways a recovery falls due that far out: a usage reset the provider gives
  // 30 days ahead, and (maxDelayMs 40 days, shipped: 30 min, as `--max-delay 3456000` sets it)
  // the wait for a usage limit whose reset is unknown. resyncMs 1 day (shipped: 60 s): the fake
  // clock runs real time, and 43,200 resyncs in 30 days would take minutes of real time.
  for (const [what, reset, options] of [
    ['a usage reset 30 days out', 30 * 24 * 3600, { resyncMs: 24 * 3600_000 }],
    ['a --max-delay of 40 days', null, { resyncMs: 24 * 3600_000, maxDelayMs: 40 * 24 * 3600_000 }],
  ] as const) {
    it(`${what}: the due timer is clamped below 2^31 ms and re-armed, no spin, and the goal resumes once, when due`, async () => {
      const h = await armed({ options });
      let timers = 0;
      const setTimer = h.clock.setTimer.bind(h.clock);
      h.clock.setTimer = (cb, ms) => {
        timers += 1;
        return setTimer(cb, ms);
      };
      h.daemon.rateLimitResetSeconds = reset === null ? null : Math.floor(h.clock.now() / 1000) + reset;
      usageLimit(h, 'systemError', true);
      await h.settle();
      const w = h.engine.watch('thread-1')!;
      assert.equal(
        w.state.kind,
        'usageLimited',
        `not waiting for the reset: ${JSON.stringify(w.state)}; ${JSON.stringify(h.decisions.filter((d) => d.type === 'warning'))}`,
      );
      const due = dueAt(w)!;
      assert.ok(due - h.clock.now() > 2 ** 31, `due only ${due - h.clock.now()} ms out: nothing to clamp`);
      const start = h.clock.elapsed();
      await h.advance(due - h.clock.now() - 1);
      assert.equal(h.daemon.count('thread/goal/set'), 0, 'resumed before it was due');
      await h.advance(1);
      assert.equal(h.daemon.count('thread/goal/set'), 1, 'not resumed when due');
      assert.deepEqual(
        h.decisions.filter((d) => d.type === 'warning'),
        [],
      );
      // A resync a day, the due timer re-armed every 24.8 days, a few saves: a handful, not one per ms.
      const days = (h.clock.elapsed() - start) / (24 * 3600_000);
      assert.ok(timers < 5 * days + 20, `${timers} timers in ${Math.round(days)} days`);
    });
  }

  it('limits recoveries globally: a burst, then one per interval', async () => {
    const ids = ['a', 'b', 'c', 'd', 'e'];
    // Goals on five providers: five outages, no probe to wait for (test/unit/outageProbe.test.ts).
    const daemon = new FakeDaemon(fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-engine-')));
    for (const id of ids) daemon.addThread(id);
    ownProviders(daemon, ids);
    const h = await armed({ daemon }, []); // the shipped limiter: a burst of 3, then one per 5 s;
    for (const id of ids) failByEvents(h.daemon, id, `${id}-turn-1`);
    await h.settle();
    await h.advance(BASE);
    assert.equal(h.daemon.count('thread/goal/set'), 3, 'the burst');
    assert.ok(h.decisions.some((d) => d.type === 'skipped' && d.reason === 'global rate limit'));
    await h.advance(INTERVAL - 1);
    assert.equal(h.daemon.count('thread/goal/set'), 3);
    await h.advance(1);
    assert.equal(h.daemon.count('thread/goal/set'), 4);
    await h.advance(INTERVAL);
    assert.equal(h.daemon.count('thread/goal/set'), 5);
  });

  it('spaces a stampede: 100 goals blocked by one outage, one probe, then once the provider answers not all within a minute', async () => {
    const ids = Array.from({ length: 100 }, (_, i) => `t${i}`);
    const h = await armed({}, ids);
    for (const id of ids) failByEvents(h.daemon, id, `${id}-turn-1`);
    await h.settle();
    await h.advance(BASE + 1_000);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'one probe for the outage');
    const probe = ids.find((id) => h.engine.watch(id)?.recovered.length === 1)!;
    await h.advance(10 * INTERVAL);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'the others wait for its verdict');
    h.daemon.answer(probe); // the provider is back: the other 99 are released, through the limiter
    await h.settle();
    assert.equal(h.daemon.count('thread/goal/set'), 4, 'more than the burst at the answer');
    await h.advance(60_000);
    const inAMinute = h.daemon.count('thread/goal/set') - 1; // the probe's aside
    assert.equal(inAMinute, 3 + Math.floor(60_000 / INTERVAL), 'not one per interval after the burst');
    for (let i = 0; i < 100 && h.daemon.count('thread/goal/set') < 100; i++) await h.advance(INTERVAL);
    assert.equal(h.daemon.count('thread/goal/set'), 100, 'a held recovery was lost');
    assert.deepEqual(
      ids.filter((id) => h.engine.watch(id)?.recovered.length !== 1),
      [],
      'not every goal recovered exactly once',
    );
  });

  it('an attempt under way does not fall due again nor spend the limiter twice', async () => {
    // A limiter of one token per minute (shipped: 3, then one per 5 s): a second token taken for
    // the same attempt would show as a 'global rate limit' skip. The shipped 200 ms preparation
    // makes the window: the attempt is prepared (reads, write-ahead) 200 ms before its due time
    // and waits there, while the due timer is set again and time passes through it.
    const store = new MemoryStore();
    const h = await armed({ store, options: { limiterBurst: 1, limiterIntervalMs: 60_000 } });
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    const due = dueAt(h.engine.watch('thread-1')!)!;
    // The attempt's reads: the newest turn is read by the attempt alone (a goal event's look reads the goal too).
    const lists = h.daemon.count('thread/turns/list');
    await h.advance(due - PREPARE - h.clock.now());
    assert.equal(
      store.saved.watches['thread-1']?.pending?.failedTurnId,
      'turn-1',
      'the attempt was not prepared ahead: no window to test',
    );
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'recovering');
    for (let t = 0; t < PREPARE - 1; t += 50) await h.advance(Math.min(50, PREPARE - 1 - t));
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'sent before the due time');
    await h.advance(1);
    assert.equal(h.daemon.count('thread/goal/set'), 1);
    assert.equal(h.daemon.count('thread/turns/list'), lists + 1, 'the attempt was started twice (its reads ran again)');
    assert.ok(
      !h.decisions.some((d) => d.type === 'skipped' && d.reason === 'global rate limit'),
      'the attempt spent more than one token',
    );
    await h.advance(10 * 60_000);
    assert.equal(h.daemon.count('thread/goal/set'), 1);
  });

  it('a token an attempt took and never spent (the leader fenced at its send) is given back: the next recovery takes it', async () => {
    // A burst of 1 and a 60 s interval (shipped: 3 and 5 s): a token kept owed would hold the next
    // recovery a whole interval. The fence is closed only while a's prepared set comes due.
    let fenced: string | null = null;
    const daemon = new FakeDaemon(fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-engine-')));
    for (const id of ['a', 'b']) daemon.addThread(id);
    ownProviders(daemon, ['a', 'b']); // two outages: no probe holds either back
    const h = await armed({ daemon, fence: () => fenced, options: { limiterBurst: 1, limiterIntervalMs: 60_000 } }, []);
    failByEvents(h.daemon, 'a', 'a-turn-1');
    await h.settle();
    const aDue = dueAt(h.engine.watch('a')!)!;
    await h.advance(aDue - PREPARE - h.clock.now());
    assert.equal(h.engine.watch('a')!.state.kind, 'recovering', 'a was not prepared ahead');
    fenced = 'a test closed the fence';
    await h.advance(PREPARE + 1);
    fenced = null;
    assert.equal(h.daemon.count('thread/goal/set', 'a'), 0, 'a fenced leader sent');
    failByEvents(h.daemon, 'b', 'b-turn-1');
    await h.settle();
    await h.advance(dueAt(h.engine.watch('b')!)! - h.clock.now() + 1);
    assert.equal(h.daemon.count('thread/goal/set', 'b'), 1, 'b waited behind the token a never spent');
    assert.ok(!h.decisions.some((d) => d.type === 'skipped' && d.threadId === 'b'), 'b was held for a slot');
  });

  it('a slot the limiter keeps for a recovery that will not go (a person disarmed it) is given back: the next recovery takes it', async () => {
    // A burst of 1 and a 60 s interval (shipped: 3 and 5 s): each slot kept is a whole interval.
    const ids = ['a', 'b', 'c'];
    const daemon = new FakeDaemon(fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-engine-')));
    for (const id of ids) daemon.addThread(id);
    ownProviders(daemon, ids); // three outages: no probe holds any of them back
    const h = await armed({ daemon, options: { limiterBurst: 1, limiterIntervalMs: 60_000 } }, []);
    const sets = (id: string) => h.daemon.count('thread/goal/set', id);
    failByEvents(h.daemon, 'a', 'a-turn-1');
    await h.settle();
    await h.advance(1_000);
    failByEvents(h.daemon, 'b', 'b-turn-1');
    await h.settle();
    await h.advance(BASE);
    assert.equal(sets('a'), 1, 'the burst of one');
    assert.equal(h.engine.watch('b')!.state.kind, 'waitingSlot');
    await h.advance(60_000);
    assert.equal(sets('b'), 1, 'b did not go at its slot');
    // c waits for a slot and a person disarms it: its slot is given back, and a's next failure takes it.
    failByEvents(h.daemon, 'c', 'c-turn-1');
    await h.settle();
    await h.advance(BASE);
    assert.equal(h.engine.watch('c')!.state.kind, 'waitingSlot');
    const c = h.engine.watch('c')!.state;
    const cSlot = c.kind === 'waitingSlot' ? c.slotAt : NaN;
    await h.engine.commands.disarm('c');
    await h.settle();
    failByEvents(h.daemon, 'a', 'a-turn-2');
    await h.settle();
    const aDue = dueAt(h.engine.watch('a')!)!;
    assert.ok(aDue < cSlot + 60_000, `a is due ${aDue - cSlot} ms after c's slot: nothing to tell`);
    await h.advance(Math.max(aDue, cSlot) - h.clock.now() + 1_000);
    assert.equal(sets('a'), 2, 'a went behind the slot c would not use');
    assert.equal(sets('c'), 0);
  });

  it('pausing auto-recovery holds every recovery; resuming lets it run', async () => {
    const h = await armed();
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    const before = h.changes();
    await h.engine.commands.pauseAll();
    assert.ok(h.changes() > before, 'pausing did not tell the views');
    await h.advance(10 * 60_000);
    assert.equal(h.daemon.count('thread/goal/set'), 0);
    assert.equal(h.engine.nextDueAt(), null);
    const paused = h.changes();
    await h.engine.commands.resumeAll();
    assert.ok(h.changes() > paused, 'resuming did not tell the views');
    await h.settle();
    assert.equal(h.daemon.count('thread/goal/set'), 1);
  });

  it('Pause auto-recovery that lands while a recovery is prepared calls it off at the last check; Resume recovers it once', async () => {
    const h = await preparedRecovery();
    await h.engine.commands.pauseAll();
    await h.advance(PREPARE);
    await h.advance(RESYNC);
    assert.equal(
      h.daemon.count('thread/goal/set'),
      0,
      `set while auto-recovery was paused: ${JSON.stringify(h.decisions)}`,
    );
    assert.equal(h.engine.watch('thread-1')!.pending, null, 'the intent of the called-off recovery is still pending');
    await h.engine.commands.resumeAll();
    await h.advance(RESYNC);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'not recovered once after Resume');
  });

  it('a state change made while the wall clock is set back never moves updatedAt back (the handover keeps the copy changed last)', async () => {
    const h = await armed();
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    const backoff = h.engine.watch('thread-1')!;
    assert.equal(backoff.state.kind, 'backoff');
    const before = backoff.updatedAt;
    h.clock.jump(-3_600_000); // the wall clock set back an hour
    await h.engine.commands.disarm('thread-1');
    const disarmed = h.engine.watch('thread-1')!;
    assert.equal(disarmed.state.kind, 'disarmed');
    assert.ok(
      disarmed.updatedAt >= before,
      `updatedAt went back with the clock: ${disarmed.updatedAt} < ${before}: a leader's older copy would win the handover`,
    );
  });

  it("the extension's disarm marker survives a restart; re-arm clears it", async () => {
    const store = new MemoryStore();
    const h = await armed({ store });
    await h.engine.commands.disarm('thread-1');
    await h.engine.stop();
    const h2 = await makeHarness({ dir: h.dir, daemon: h.daemon, store, clock: h.clock });
    harnesses.push(h2);
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h2.reconcile();
    assert.equal(h2.engine.watch('thread-1')!.state.kind, 'disarmed');
    await h2.advance(10 * 60_000);
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'recovered a disarmed thread');
    await h2.engine.commands.rearm('thread-1');
    await h2.settle();
    // Re-armed after the failure: the failure predates the arming, but it is the user's own request.
    assert.equal(h2.engine.watch('thread-1')!.state.kind, 'backoff');
    await h2.advance(BASE);
    assert.equal(h.daemon.count('thread/goal/set'), 1);
  });

  it('never answers a server request, and resumes watching after the approval resolves', async () => {
    const h = await armed();
    const t = h.daemon.thread();
    t.status = { type: 'active', activeFlags: ['waitingOnApproval'] };
    h.daemon.notify('thread/status/changed', { threadId: 'thread-1', status: t.status });
    h.daemon.serverRequest(7, 'item/commandExecution/requestApproval', {
      threadId: 'thread-1',
      turnId: 'turn-1',
      itemId: 'x',
    });
    h.daemon.serverRequest('r-8', 'item/tool/requestUserInput', {
      threadId: 'thread-1',
      turnId: 'turn-1',
      itemId: 'y',
    });
    await h.settle();
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'waitingApproval');
    await h.advance(5 * 60_000);
    assert.deepEqual(h.daemon.violations, [], 'a server request was answered');
    h.daemon.notify('serverRequest/resolved', { threadId: 'thread-1', requestId: 7 });
    h.daemon.notify('serverRequest/resolved', { threadId: 'thread-1', requestId: 'r-8' });
    t.status = { type: 'active', activeFlags: [] };
    h.daemon.notify('thread/status/changed', { threadId: 'thread-1', status: t.status });
    await h.settle();
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'running');
  });

  it('reports connecting, not a missing daemon, before its first attempt to connect', async () => {
    const h = await makeHarness({ start: false });
    harnesses.push(h);
    assert.deepEqual(h.engine.connectionState(), { kind: 'connecting', detail: 'starting' });
    assert.equal(h.engine.snapshot().connection.kind, 'connecting');
  });

  it('reconnects after the daemon drops, re-subscribes and recovers what failed meanwhile', async () => {
    const h = await armed();
    assert.equal(h.daemon.count('thread/resume'), 1);
    h.daemon.disconnect();
    await h.settle();
    assert.equal(h.engine.connectionState().kind, 'disconnected');
    h.daemon.fail('thread-1', 'turn-1');
    await h.advance(500);
    assert.equal(h.engine.connectionState().kind, 'connected');
    assert.equal(h.daemon.count('thread/resume'), 2, 'did not re-subscribe');
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'backoff');
    await h.advance(BASE);
    assert.equal(h.daemon.count('thread/goal/set'), 1);
  });

  it('a recovery that falls due while the daemon is away does not spin the due timer, and runs once on reconnect', async () => {
    const h = await armed();
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'backoff');
    h.daemon.down = true;
    h.daemon.disconnect();
    await h.settle();
    // Count every timer that fires while the daemon is down and the recovery is due.
    let fired = 0;
    const setTimer = h.clock.setTimer.bind(h.clock);
    h.clock.setTimer = (callback, ms) =>
      setTimer(() => {
        fired += 1;
        if (fired > 200) throw new Error('busy loop: the due timer re-armed itself without a session');
        callback();
      }, ms);
    await h.advance(20_000);
    // The reconnect backoff (0.5 s doubling) and nothing else: a handful, not one per tick.
    assert.ok(fired <= 10, `${fired} timers fired in 20 s while disconnected`);
    assert.equal(h.daemon.count('thread/goal/set'), 0);
    h.daemon.down = false;
    await h.advance(30_000);
    assert.equal(h.engine.connectionState().kind, 'connected');
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'the due recovery did not run after reconnecting');
    assert.deepEqual(h.engine.watch('thread-1')!.recovered, ['turn-1']);
  });

  it('a wall clock that jumps back neither postpones a due recovery by the jump nor stalls the limiter', async () => {
    // A burst of 1 (shipped: 3): the second recovery waits for the limiter's interval (shipped: 5 s).
    const h = await armed({ options: { limiterBurst: 1 } }, ['a', 'b']);
    failByEvents(h.daemon, 'a', 'a-turn-1');
    failByEvents(h.daemon, 'b', 'b-turn-1');
    await h.settle();
    await h.advance(BASE - 500);
    h.clock.jump(-6 * 60 * 60_000);
    await h.advance(500);
    assert.equal(
      h.daemon.count('thread/goal/set'),
      1,
      'the recovery due 30 s after the failure waited for the wall clock to catch up',
    );
    assert.ok(
      h.decisions.some((d) => d.type === 'warning' && /clock went back by 6:00:00/.test(d.message)),
      'the jump was not logged',
    );
    await h.advance(INTERVAL - 1);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'the limiter let a second one through early');
    await h.advance(1);
    assert.equal(h.daemon.count('thread/goal/set'), 2, 'the limiter slot was postponed by the jump');
  });

  it("the limiter's settings changed while recoveries wait: the new burst and interval apply at once", async () => {
    const ids = ['a', 'b', 'c'];
    const h = await armed({}, ids);
    ownProviders(h.daemon, ids); // three outages: no probe holds any of them back
    for (const id of ids) failByEvents(h.daemon, id, `${id}-turn-1`);
    await h.settle();
    const interval = 2 * INTERVAL;
    h.engine.updateOptions({ ...DEFAULT_OPTIONS, limiterBurst: 1, limiterIntervalMs: interval });
    await h.advance(BASE + 1_000);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'the shipped burst of 3 still applied');
    await h.advance(interval - 1_000 - 1);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'the shipped interval still applied');
    await h.advance(1);
    assert.equal(h.daemon.count('thread/goal/set'), 2);
  });

  it('recoveries held by the limiter go out earliest due first, whatever order the goals were armed in', async () => {
    // A burst of 1 and a 5-minute interval (shipped: 3 and 5 s): the three wait for the second token.
    const ids = ['a', 'b', 'c', 'x'];
    const h = await armed({ options: { limiterBurst: 1, limiterIntervalMs: 5 * 60_000 } }, ids);
    ownProviders(h.daemon, ids);
    const order: string[] = [];
    h.daemon.before = (m) => {
      if (m.method === 'thread/goal/set') order.push(String(m.params?.threadId));
    };
    failByEvents(h.daemon, 'x', 'x-turn-1');
    await h.settle();
    for (const id of ['c', 'b', 'a']) {
      await h.advance(1_000);
      failByEvents(h.daemon, id, `${id}-turn-1`);
      await h.settle();
    }
    await h.advance(20 * 60_000);
    assert.deepEqual(order, ['x', 'c', 'b', 'a']);
  });

  it('a request that times out on a connection that stays open is logged, and the reconnect reads everything again', async () => {
    // The 2nd thread/read (the one after the failure), and all that follows it on the wire, is
    // held for 100 s: the client's 15 s timeout fires first, with the connection still open.
    const h = await armed({
      connect: (daemon, clock) =>
        new FaultProxy(daemon, clock, [
          { on: 'request', method: 'thread/read', phase: 'delayRequest', occurrence: 2, delayMs: 100_000 },
        ]).connector(),
    });
    const startedAt = h.clock.elapsed();
    h.daemon.failWithEvents('thread-1');
    // Until the held read times out the engine waits for it, and h.advance() (which waits for an
    // idle engine after each timer) would wait with it: time is stepped by hand, a second at a
    // time, each step followed by a few turns of the event loop. The timeout drops that
    // connection and its hold; from then on h.advance() waits for the engine after each timer (a
    // hand-stepped clock ran ahead of the reconnect's reads on a loaded machine, and they timed
    // out on the fake clock as well).
    const tick = async (ms: number) => {
      void h.clock.advance(ms);
      await turns(20);
    };
    const timedOut = () =>
      h.decisions.some(
        (d) => d.type === 'connection' && d.state === 'disconnected' && /thread\/read.*timed out/.test(d.detail),
      );
    await tick(0);
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'running', 'decided without the reads');
    for (let t = 0; t < 30 && !timedOut(); t++) await tick(1_000);
    assert.ok(timedOut(), 'the timeout left no log line');
    await h.advance(130_000 - (h.clock.elapsed() - startedAt));
    assert.equal(
      h.daemon.count('thread/goal/set'),
      1,
      `the failure seen while the reads timed out was never recovered (${h.clock.elapsed() - startedAt} ms in, timers at ${JSON.stringify(h.clock.pending())}): ${JSON.stringify(h.decisions)}`,
    );
    assert.deepEqual(h.engine.watch('thread-1')!.recovered, ['turn-1']);
  });

  it('a read that fails with an error reply is retried at the next resync, not skipped because the goal looks unchanged', async () => {
    // The thread was idle when armed (not subscribed: no turn events), so the failure is read,
    // not heard; the thread/reads that follow the failure (the 2nd and 3rd) get error replies.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-engine-'));
    const daemon = new FakeDaemon(dir);
    daemon.addThread('thread-1', 'active', testTurn('turn-1', 'completed'), 'idle');
    const h = await makeHarness({
      dir,
      daemon,
      connect: (d, clock) =>
        new FaultProxy(
          d,
          clock,
          [2, 3].map((occurrence) => ({
            on: 'request' as const,
            method: 'thread/read',
            phase: 'errorReply' as const,
            occurrence,
            delayMs: 0,
          })),
        ).connector(),
    });
    harnesses.push(h);
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'idle');
    const t = h.daemon.thread('thread-1');
    t.turn = testTurn('turn-2', 'inProgress');
    h.daemon.failWithEvents('thread-1');
    await h.settle();
    assert.ok(
      h.decisions.some((d) => d.type === 'warning' && d.message.includes('thread/read failed')),
      'the error reply was not logged',
    );
    assert.notEqual(h.engine.watch('thread-1')!.state.kind, 'backoff', 'decided on a failed read');
    await h.advance(60_000); // the resync
    await h.advance(BASE); // the backoff
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'the failure whose reads failed once was never recovered');
    assert.deepEqual(h.engine.watch('thread-1')!.recovered, ['turn-2']);
  });

  it('an error reply to the handshake or to the turn list is logged by name, not taken for a closed connection or for "no turn yet"', async () => {
    const h = await armed(
      {
        connect: (daemon, clock) =>
          new FaultProxy(daemon, clock, [
            { on: 'request', method: 'initialize', phase: 'errorReply', occurrence: 1, delayMs: 0 },
            // The arming's read of the newest turn (the thread's status does not say a turn runs).
            { on: 'request', method: 'thread/turns/list', phase: 'errorReply', occurrence: 1, delayMs: 0 },
          ]).connector(),
        start: false,
      },
      [],
    );
    h.daemon.addThread('thread-1');
    await h.engine.start();
    await h.settle();
    const first = h.decisions.find((d) => d.type === 'connection' && d.state !== 'connected');
    assert.ok(
      first?.type === 'connection' && first.detail.includes('initialize failed'),
      `the handshake's error was not named: ${JSON.stringify(first)}`,
    );
    await h.advance(500);
    assert.equal(h.engine.connectionState().kind, 'connected');
    assert.ok(
      h.decisions.some((d) => d.type === 'warning' && d.message.includes('thread/turns/list failed')),
      'the turn list error was swallowed as "not materialized"',
    );
  });

  it('every refused resume is logged, except the same "no rollout yet" of a brand-new thread', async () => {
    const h = await armed({
      connect: (daemon, clock) =>
        new FaultProxy(
          daemon,
          clock,
          [1, 2].map((occurrence) => ({
            on: 'request' as const,
            method: 'thread/resume',
            phase: 'rejectRequest' as const,
            occurrence,
            delayMs: 0,
          })),
        ).connector(),
    });
    const refusals = () =>
      h.decisions.filter((d) => d.type === 'warning' && d.message.startsWith('not subscribed yet')).length;
    assert.equal(refusals(), 1);
    h.daemon.failWithEvents('thread-1'); // evaluated again: the second resume is refused too
    await h.settle();
    assert.equal(refusals(), 2, 'the second refusal was not logged');
  });

  it('a look whose two parallel reads both fail logs both errors', async () => {
    // The look at a goal blocked before its turn's end was heard (Codex says the block first):
    // the thread and its newest turn, read at once. The arming read each once before.
    const h = await armed({
      connect: (daemon, clock) =>
        new FaultProxy(
          daemon,
          clock,
          ['thread/read', 'thread/turns/list'].map((method) => ({
            on: 'request' as const,
            method,
            phase: 'rejectRequest' as const,
            occurrence: 2,
            delayMs: 0,
          })),
        ).connector(),
    });
    assert.deepEqual([h.daemon.count('thread/read'), h.daemon.count('thread/turns/list')], [1, 1]);
    const t = h.daemon.thread('thread-1');
    t.goal = testGoal('thread-1', 'blocked');
    h.daemon.notify('thread/goal/updated', { threadId: 'thread-1', turnId: t.turn.id, goal: t.goal });
    await h.settle();
    const warning = h.decisions.find((d) => d.type === 'warning' && d.message.includes('thread/read failed'));
    assert.ok(
      warning?.type === 'warning' && warning.message.includes('thread/turns/list failed'),
      `only one of the two failures was logged: ${JSON.stringify(warning)}`,
    );
  });

  it('a look that fails for two reasons, one of them a lost connection, still names the other', async () => {
    // The look at a goal blocked before its turn's end was heard: thread/read is held past the
    // 15 s timeout while thread/turns/list, asked at the same time, is refused at once.
    const h = await armed({
      connect: (daemon, clock) =>
        new FaultProxy(daemon, clock, [
          { on: 'request', method: 'thread/read', phase: 'delayRequest', occurrence: 2, delayMs: 20_000 },
          { on: 'request', method: 'thread/turns/list', phase: 'rejectRequest', occurrence: 2, delayMs: 0 },
        ]).connector(),
    });
    const t = h.daemon.thread('thread-1');
    t.goal = testGoal('thread-1', 'blocked');
    h.daemon.notify('thread/goal/updated', { threadId: 'thread-1', turnId: t.turn.id, goal: t.goal });
    for (let s = 0; s <= 16; s++) {
      void h.clock.advance(s === 0 ? 0 : 1_000);
      await turns(20);
    }
    assert.ok(
      h.decisions.some((d) => d.type === 'connection' && d.state === 'disconnected' && d.detail.includes('timed out')),
      'the timeout was not logged',
    );
    assert.ok(
      h.decisions.some((d) => d.type === 'warning' && d.message.includes('thread/turns/list failed')),
      'the refused turn list was not logged',
    );
  });

  it('never resumes an idle thread whose goal is active (that would restart interrupted work)', async () => {
    const h = await armed();
    const t = h.daemon.thread();
    t.turn = testTurn('turn-1', 'interrupted');
    t.status = { type: 'idle' };
    h.daemon.notify('thread/status/changed', { threadId: 'thread-1', status: t.status });
    h.daemon.notify('turn/completed', { threadId: 'thread-1', turn: t.turn });
    await h.settle();
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'interrupted');
    h.daemon.disconnect();
    await h.advance(500);
    await h.reconcile();
    assert.equal(h.engine.connectionState().kind, 'connected');
    assert.equal(h.daemon.count('thread/resume'), 1, 'resumed an interrupted thread with an active goal');
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'interrupted');
    // The user starts a turn: now the engine subscribes.
    t.turn = testTurn('turn-2', 'inProgress');
    t.status = { type: 'active', activeFlags: [] };
    h.daemon.notify('thread/status/changed', { threadId: 'thread-1', status: t.status });
    await h.settle();
    assert.equal(h.daemon.count('thread/resume'), 2);
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'running');
  });

  it('a thread unloaded during backoff keeps its failure, and is recovered once when loaded again', async () => {
    const h = await armed();
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    const due = dueAt(h.engine.watch('thread-1')!);
    h.daemon.thread().loaded = false;
    await h.reconcile();
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'unloaded');
    await h.advance(BASE + 5_000); // past the due time: something is due while it is unloaded;
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'acted on an unloaded thread');
    assert.equal(h.daemon.requests.filter((m) => m.method === 'thread/resume').length, 1, 'resumed an unloaded thread');
    // Another client loads it again (resume re-emits the goal to everyone).
    h.daemon.thread().loaded = true;
    h.daemon.notify('thread/goal/updated', { threadId: 'thread-1', turnId: null, goal: h.daemon.thread().goal });
    await h.settle();
    assert.ok(due !== null);
    assert.equal(h.daemon.count('thread/goal/set'), 1);
    await h.reconcile();
    assert.equal(h.daemon.count('thread/goal/set'), 1);
  });

  it('never sets the goal of a thread the daemon has not loaded, even when its recovery falls due before a resync tells', async () => {
    const h = await armed();
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'backoff');
    // Unloaded without a word (a daemon killed and started again): only the pre-set read shows it.
    h.daemon.thread().loaded = false;
    await h.advance(BASE);
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'set the goal of a thread that is not loaded');
    assert.ok(h.decisions.some((d) => d.type === 'skipped' && d.reason === 'the thread is not loaded in the daemon'));
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.state.kind, 'unloaded');
    assert.equal(w.lastFailure?.turnId, 'turn-1', 'the failure was forgotten');
    await h.advance(5_000);
    assert.equal(h.daemon.count('thread/goal/set'), 0);
    // A client loads it again: the recovery runs, once.
    h.daemon.thread().loaded = true;
    h.daemon.notify('thread/goal/updated', { threadId: 'thread-1', turnId: null, goal: h.daemon.thread().goal });
    await h.settle();
    assert.equal(h.daemon.count('thread/goal/set'), 1);
    assert.equal(h.daemon.thread().turn.id, 'turn-2');
  });

  /** A failed thread in backoff that the daemon then unloads without a word (killed and started again). */
  async function unloadedAfterFailure(): Promise<Harness> {
    const h = await armed();
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    h.daemon.thread().loaded = false;
    h.daemon.thread().status = { type: 'notLoaded' };
    await h.advance(BASE);
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.state.kind, 'unloaded');
    assert.ok(canRetryNow(w), 'Retry now is not offered on the unloaded thread');
    return h;
  }

  it('Retry now loads a thread the daemon has not loaded and recovers its failure, once; nothing else loads it', async () => {
    const h = await unloadedAfterFailure();
    const resumes = h.daemon.count('thread/resume');
    await h.advance(60_000);
    assert.equal(h.daemon.count('thread/resume'), resumes, 'loaded a thread without being asked');
    await h.engine.commands.retryNow('thread-1');
    await h.settle();
    assert.equal(h.daemon.count('thread/resume'), resumes + 1);
    assert.ok(
      h.decisions.some((d) => d.type === 'loaded' && d.threadId === 'thread-1'),
      'no line says the thread was loaded',
    );
    assert.equal(h.daemon.count('thread/goal/set'), 1);
    assert.equal(h.daemon.thread().turn.id, 'turn-2', 'the set started no turn');
    const w = h.engine.watch('thread-1')!;
    assert.deepEqual(w.recovered, ['turn-1']);
    assert.equal(w.history.filter((x) => x.outcome === 'recovered').length, 1);
    assert.ok(!canRetryNow(w));
    await h.engine.commands.retryNow('thread-1'); // nothing left to retry: a no-op
    await h.reconcile();
    await h.advance(60_000);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'recovered the failed turn twice');
    assert.deepEqual(h.daemon.violations, []);
  });

  it('Retry now loads nothing when the goal is no longer blocked, and says why', async () => {
    const h = await unloadedAfterFailure();
    const resumes = h.daemon.count('thread/resume');
    h.daemon.thread().goal = { ...h.daemon.thread().goal!, status: 'paused' };
    await assert.rejects(h.engine.commands.retryNow('thread-1'), /nothing to retry, the goal is paused now/);
    assert.equal(h.daemon.count('thread/resume'), resumes, 'loaded a thread whose goal is paused');
    assert.equal(h.daemon.count('thread/goal/set'), 0);
    assert.equal(h.engine.watch('thread-1')!.goal?.status, 'paused');
  });

  it('Retry now reports a thread the daemon refuses to load, and keeps its failure', async () => {
    const h = await unloadedAfterFailure();
    h.daemon.resumeError = 'no rollout found for thread id thread-1';
    await assert.rejects(h.engine.commands.retryNow('thread-1'), /the daemon did not load it: .*no rollout found/);
    assert.ok(
      h.decisions.some((d) => d.type === 'warning' && d.threadId === 'thread-1' && /did not load it/.test(d.message)),
    );
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.state.kind, 'unloaded');
    assert.equal(w.lastFailure?.turnId, 'turn-1');
    assert.equal(h.daemon.count('thread/goal/set'), 0);
    h.daemon.resumeError = null;
    await h.engine.commands.retryNow('thread-1');
    await h.settle();
    assert.equal(h.daemon.count('thread/goal/set'), 1);
  });

  it('does not spin while the daemon is away with a recovery due', async () => {
    const h = await armed();
    failByEvents(h.daemon, 'thread-1', 'turn-1');
    await h.settle();
    h.daemon.down = true;
    h.daemon.disconnect();
    await h.settle();
    // Count the timers the engine sets while the daemon is away (a spin would set thousands and
    // never let the fake clock reach the end of the interval: stop it loudly instead).
    let timers = 0;
    const setTimer = h.clock.setTimer.bind(h.clock);
    h.clock.setTimer = (cb, ms) => {
      if (++timers > 1_000) throw new Error('the engine re-armed a timer over 1000 times while disconnected');
      return setTimer(cb, ms);
    };
    await h.advance(10_000);
    assert.ok(timers < 50, `${timers} timers in 10 s while disconnected`);
    assert.equal(h.engine.connectionState().kind, 'disconnected');
    h.clock.setTimer = setTimer;
    h.daemon.down = false;
    await h.advance(30_000);
    assert.equal(h.engine.connectionState().kind, 'connected');
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'the recovery that fell due while away did not run once');
  });

  it("stopped while it loads its state, it stays stopped (never connects behind its owner's back)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-engine-'));
    const daemon = new FakeDaemon(dir);
    daemon.addThread();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const slow = new MemoryStore(undefined, { location: 'slow', loadGate: gate });
    const h = await makeHarness({ dir, daemon, store: slow, start: false });
    harnesses.push(h);
    const starting = h.engine.start();
    await h.engine.stop();
    release();
    await starting;
    await h.advance(5_000);
    assert.equal(daemon.requests.length, 0, 'a stopped engine connected');
    assert.notEqual(h.engine.connectionState().kind, 'connected');
  });

  it('starts clean and says so when the stored state is corrupt', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-engine-'));
    const file = path.join(dir, 'state.json');
    fs.writeFileSync(file, '{"version": 1, "watches": [trunc');
    const daemon = new FakeDaemon(dir);
    daemon.addThread();
    const h = await makeHarness({ dir, daemon, store: new JsonFileStore(file) });
    harnesses.push(h);
    const warning = h.decisions.find((d) => d.type === 'warning');
    assert.ok(
      warning && warning.type === 'warning' && /corrupt|not valid|kept aside/i.test(warning.message),
      JSON.stringify(warning),
    );
    assert.ok(
      fs.readdirSync(dir).some((f) => f.startsWith('state.json.corrupt-')),
      'the corrupt file was not kept aside',
    );
    assert.equal(h.engine.watch('thread-1')?.state.kind, 'running');
  });
});

describe('engine: durable before announced', () => {
  it('announces a decision, and tells its views, only once the save holding it is on disk; never sends the set before its write-ahead is', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-engine-'));
    const daemon = new FakeDaemon(dir);
    daemon.addThread();
    const store = new MemoryStore(); // its saves held (a slow disk) until the test opens them
    store.hold();
    const h = await makeHarness({ dir, daemon, store, start: false });
    harnesses.push(h);
    // While a save is held, the engine is not idle (h.settle would wait for it): turns of the loop.
    const turnsAdvancing = async (n = 20) => {
      for (let i = 0; i < n; i++) {
        await immediate();
        void h.clock.advance(0);
      }
    };
    await h.engine.start();
    await poll(() => h.engine.watch('thread-1')?.state.kind === 'running', 5_000, 10);
    await turnsAdvancing();
    assert.equal(h.engine.watch('thread-1')?.state.kind, 'running', 'not armed in memory');
    assert.deepEqual(
      h.decisions.filter((d) => d.type === 'armed'),
      [],
      'announced the arming before it was saved',
    );
    const viewsBefore = h.changes();
    store.open();
    await h.settle();
    assert.equal(
      h.decisions.filter((d) => d.type === 'armed').length,
      1,
      'the arming was not announced after its save',
    );
    assert.ok(h.changes() > viewsBefore, 'the views were not told after the save');
    assert.equal(store.saved.watches['thread-1']?.state.kind, 'running');

    store.hold();
    daemon.failWithEvents('thread-1');
    await poll(() => h.engine.watch('thread-1')?.state.kind === 'backoff', 5_000, 10);
    await turnsAdvancing();
    assert.equal(h.engine.watch('thread-1')?.state.kind, 'backoff');
    assert.equal(
      h.decisions.filter((d) => d.type === 'backoff').length,
      0,
      'announced the backoff before it was saved',
    );
    store.open();
    await h.settle();
    const backoff = h.decisions.find((d) => d.type === 'backoff');
    assert.ok(backoff && backoff.type === 'backoff');
    assert.equal(
      store.saved.watches['thread-1']?.lastFailure?.dueAt,
      backoff.dueAt,
      'the announced due time is not the saved one',
    );

    // The write-ahead: held, the set waits; the due time passes; opened, the set goes out.
    store.hold();
    void h.clock.advance(backoff.dueAt - h.clock.now() + 500); // not awaited: its reactor waits for the held save
    await poll(() => h.engine.watch('thread-1')?.state.kind === 'recovering', 5_000, 10); // the write-ahead is waiting
    await turnsAdvancing();
    assert.equal(daemon.count('thread/goal/set'), 0, 'the set went out before its intent was on disk');
    assert.equal(h.decisions.filter((d) => d.type === 'recovering').length, 0);
    store.open();
    await h.settle();
    await h.advance(0);
    assert.equal(daemon.count('thread/goal/set'), 1);
    assert.equal(h.decisions.filter((d) => d.type === 'recovering').length, 1);
  });

  it('a resync over many threads saves every few hundred looks, not once per turn of the loop, and still announces each arming after the save that holds it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-engine-'));
    const daemon = new FakeDaemon(dir);
    const threads = 600;
    for (let i = 1; i <= threads; i++)
      daemon.addThread(`thread-${i}`, 'active', testTurn('turn-1', 'inProgress'), 'active');
    /** For each save: how many decisions had been announced when it was asked for, and what it held. */
    const saves: Array<{ announced: number; ids: Set<string> }> = [];
    let announced = (): number => 0;
    const store = new MemoryStore();
    store.onSave = (state) => saves.push({ announced: announced(), ids: new Set(Object.keys(state.watches)) });
    const h = await makeHarness({ dir, daemon, store, start: false });
    harnesses.push(h);
    announced = () => h.decisions.length;
    await h.engine.start();
    await h.settle();
    assert.equal(h.engine.watches().filter((w) => w.state.kind === 'running').length, threads);
    const armed = h.decisions.flatMap((d, i) => (d.type === 'armed' ? [{ i, threadId: d.threadId }] : []));
    assert.equal(armed.length, threads, 'every arming is announced');
    for (const { i, threadId } of armed)
      assert.ok(
        saves.some((save) => save.announced <= i && save.ids.has(threadId)),
        `${threadId} was announced (decision ${i}) before a save held it`,
      );
    // One save per turn of the event loop made it about one save per 2 threads armed here.
    assert.ok(saves.length <= 12, `${saves.length} saves to arm ${threads} threads`);
  });

  it('a crash in the middle of a resync that arms many threads: every arming announced was saved, and the restarted engine arms the rest, each announced once', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-engine-'));
    const daemon = new FakeDaemon(dir);
    const threads = 600;
    for (let i = 1; i <= threads; i++)
      daemon.addThread(`thread-${i}`, 'active', testTurn('turn-1', 'inProgress'), 'active');
    const store = new MemoryStore();
    const first = await makeHarness({ dir, daemon, store, start: false });
    harnesses.push(first);
    void first.engine.start();
    // Dropped at the resync's first save of its armings (every 256 looks): the rest is only in memory.
    await poll(() => Object.keys(store.saved.watches).length > 0, 5_000, 10);
    first.crash();
    const saved = new Set(Object.keys(store.saved.watches));
    assert.ok(saved.size > 0 && saved.size < threads, `crashed mid-arming: ${saved.size} of ${threads} saved`);
    const announcedBefore = first.decisions.flatMap((d) => (d.type === 'armed' ? [d.threadId] : []));
    for (const id of announcedBefore) assert.ok(saved.has(id), `${id} was announced, then lost in the crash`);

    const second = await makeHarness({ dir, daemon, store });
    harnesses.push(second);
    await second.settle();
    assert.equal(second.engine.watches().filter((w) => w.state.kind === 'running').length, threads);
    const armedAgain = second.decisions.flatMap((d) => (d.type === 'armed' ? [d.threadId] : []));
    assert.equal(new Set(armedAgain).size, armedAgain.length, 'an arming announced twice');
    assert.deepEqual(
      new Set(armedAgain),
      new Set([...Array(threads).keys()].map((i) => `thread-${i + 1}`).filter((id) => !saved.has(id))),
      'the restarted engine arms exactly what the crash lost',
    );
    assert.equal(Object.keys(store.saved.watches).length, threads);
  });

  it('a failing write-ahead save never sends the set; the recovery waits and tries again once the disk is back', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-engine-'));
    const daemon = new FakeDaemon(dir);
    daemon.addThread();
    const store = new MemoryStore();
    const h = await makeHarness({ dir, daemon, store });
    harnesses.push(h);
    daemon.failWithEvents('thread-1');
    await h.settle();
    const due = dueAt(h.engine.watch('thread-1')!)!;
    store.failing = 'ENOSPC: no space left on device';
    await h.advance(due - h.clock.now() + 1_000);
    assert.equal(daemon.count('thread/goal/set'), 0, 'sent the set although its intent could not be saved');
    assert.ok(
      h.decisions.some((d) => d.type === 'warning' && /could not save state.*ENOSPC/.test(d.message)),
      'the failed save was not reported',
    );
    assert.ok(
      h.decisions.some((d) => d.type === 'skipped' && /intent could not be saved/.test(d.reason)),
      'the held recovery was not explained',
    );
    const sets = daemon.count('thread/goal/set');
    // While the disk fails, a try every 5 s, not at once again (against a failing disk).
    const tries = () =>
      h.decisions.filter((d) => d.type === 'skipped' && /intent could not be saved/.test(d.reason)).length;
    const before = tries();
    await h.advance(20_000);
    assert.equal(tries() - before, 4, `${tries() - before} tries in 20 s`);
    store.failing = null;
    await h.advance(6_000);
    assert.equal(daemon.count('thread/goal/set'), sets + 1, 'not recovered once the disk was back');
  });
});

describe('engine: the first look at a large rollout', () => {
  const MB = 1024 * 1024;

  /**
   * Arms thread-1 whose rollout is `mb` MB of realistic lines: `before` lines early on, one
   * activation (unless `activation` is false) about 300 KB before the end, then `after` lines.
   * Counts the bytes the engine reads from the rollout.
   */
  async function armOnLargeRollout(opts: { mb: number; before: string[]; after: string[]; activation?: boolean }) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-engine-'));
    const daemon = new FakeDaemon(dir);
    const t = daemon.addThread('thread-1');
    const rand = rng(31);
    const out = new RolloutWriter(t.path);
    out.line(JSON.stringify({ type: 'session_meta', payload: { id: 'thread-1', cwd: '/repo' } }));
    let i = 0;
    const noise = (until: number) => {
      while (out.offset < until) out.line(noiseLine(rand, i++ % 17 === 5, { activations: false }));
    };
    noise(64 * 1024);
    for (const line of opts.before) out.line(line);
    noise(opts.mb * MB - 300 * 1024);
    const activation = opts.activation === false ? null : out.line(goalEvent('active'));
    noise(opts.mb * MB - 150 * 1024);
    const after = opts.after.map((line) => out.line(line));
    noise(opts.mb * MB);
    out.close();
    const size = fs.statSync(t.path).size;
    let bytesRead = 0;
    const h = await makeHarness({
      dir,
      daemon,
      onRolloutRead: (p, _pos, len) => {
        if (p === t.path) bytesRead += len;
      },
    });
    harnesses.push(h);
    return { h, size, activation, after, bytesRead: () => bytesRead };
  }

  it("reads back only to the goal's last activation, and honours what was written after it", async () => {
    // Before the activation, a pause and a model block that it superseded; after it, a model block.
    const a = await armOnLargeRollout({
      mb: 16,
      before: [realMarker('paused'), modelGoalCall('blocked')],
      after: [modelGoalCall('blocked', 'c9')],
    });
    // Armed with the goal active: nothing in the rollout can change that verdict, so it is not
    // read yet (a person's marker comes with a goal event, which brings the next look).
    const armed = a.h.engine.watch('thread-1')!;
    assert.deepEqual([armed.state.kind, armed.armOffset, a.bytesRead()], ['running', null, 0]);
    // The goal blocks: the first look at the rollout.
    failByEvents(a.h.daemon, 'thread-1', 'turn-1');
    await a.h.settle();
    const w = a.h.engine.watch('thread-1')!;
    assert.equal(w.armOffset, a.activation, "the arming is the goal's last activation");
    assert.equal(w.modelBlockOffset, a.after[0]);
    assert.equal(w.rolloutOffset, a.size);
    // The tail since the activation, read backwards then forwards, and not the rest of the file.
    const tail = a.size - a.activation!;
    assert.ok(a.bytesRead() <= 2 * tail + 2 * 64 * 1024, `read ${a.bytesRead()} bytes of ${a.size}, tail ${tail}`);
    assert.ok(a.bytesRead() < a.size / 20, `read ${a.bytesRead()} bytes of ${a.size}`);
    // The pause before the activation does not count; the model's block after it is honoured:
    // its failed turn is not recovered.
    assert.equal(w.state.kind, 'modelBlocked');
    await a.h.advance(10 * 60_000);
    assert.equal(a.h.daemon.count('thread/goal/set'), 0);
  });

  it("a person's pause after the activation counts on the first look", async () => {
    const a = await armOnLargeRollout({ mb: 8, before: [], after: [] });
    assert.equal(a.h.engine.watch('thread-1')!.state.kind, 'running');
    const size = fs.statSync(a.h.daemon.thread('thread-1').path).size;
    a.h.daemon.human('thread-1', 'paused'); // the marker, then the goal event and its notification
    await a.h.settle();
    const w = a.h.engine.watch('thread-1')!;
    assert.deepEqual([w.state.kind, w.lastMarker], ['userIntent', { status: 'paused', offset: size }]);
    assert.equal(w.armOffset, a.activation);
    assert.ok(a.bytesRead() < a.size / 10, `read ${a.bytesRead()} bytes of ${a.size}`);
  });

  it('with no activation line at all, arms at offset 0 as before: everything in the file counts', async () => {
    const a = await armOnLargeRollout({ mb: 4, before: [realMarker('paused')], after: [], activation: false });
    assert.equal(a.bytesRead(), 0);
    failByEvents(a.h.daemon, 'thread-1', 'turn-1');
    await a.h.settle();
    const w = a.h.engine.watch('thread-1')!;
    assert.equal(w.armOffset, 0);
    assert.equal(w.state.kind, 'userIntent');
    // Read whole, backwards (no activation found) and forwards.
    assert.equal(a.bytesRead(), 2 * a.size);
    await a.h.advance(10 * 60_000);
    assert.equal(a.h.daemon.count('thread/goal/set'), 0);
  });
});
