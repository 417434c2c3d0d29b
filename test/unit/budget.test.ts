// The recovery budget (issue 24): at most `recoveryBudget` automatic recoveries per goal in a
// rolling 24 h, then `budgetSpent` (needs attention, said once, even across a crash) and no set
// until a person's Retry now (one past the budget) or re-arm. The window rolls.
//
// Shipped defaults (DEFAULT_OPTIONS): a budget of 12, backoff base 30 s (the jitter pinned to the
// full nominal delay), cap 30 min, 6 attempts. Each outage here is one failed turn recovered at
// its first attempt, whose recovered turn then completes (the failure count resets), so only the
// budget can stop the 13th. The fake daemon is strict (test/support/fakeDaemon.ts); the sets are
// counted from its own record (`automaticSets`).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { newWatch } from '../../src/model/watch';
import { parsePersisted, StateSerializer } from '../../src/store/store';
import { testTurn } from '../support/fakeDaemon';
import { failByEvents } from '../support/fleet';
import { armedHarness, makeHarness, type Harness } from '../support/engineHarness';
import { tempDir } from '../support/wait';
import { MemoryStore } from '../support/memoryStore';

const BUDGET = DEFAULT_OPTIONS.recoveryBudget;
const BASE = DEFAULT_OPTIONS.baseDelayMs;
const DAY = 24 * 60 * 60_000;
const T = 'thread-1';

const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
  for (const h of harnesses) fs.rmSync(h.dir, { recursive: true, force: true });
});

async function armed(dir = tempDir('cgr-budget-'), store = new MemoryStore()) {
  return { h: await armedHarness([T], { dir, store }, harnesses), store };
}

/** The daemon's own count of automatic sets on the thread. */
function sets(h: Harness): number {
  return [...h.daemon.automaticSets].filter(([key]) => key.startsWith(`${T}/`)).reduce((n, [, c]) => n + c, 0);
}

let turnNo = 0;
/** A new turn fails transiently (the goal blocked), and the engine reacts (a backoff, or the budget). */
async function fail(h: Harness): Promise<void> {
  turnNo += 10;
  failByEvents(h.daemon, T, `turn-${turnNo}`);
  await h.settle();
}

/** The recovered turn completes (the failure count resets) and a new one runs: the goal goes on. */
async function goesOn(h: Harness): Promise<void> {
  const t = h.daemon.thread(T);
  t.turn = testTurn(t.turn.id, 'completed');
  t.status = { type: 'idle' };
  h.daemon.notify('turn/completed', { threadId: T, turn: t.turn });
  t.turn = testTurn(`turn-${turnNo + 5}`, 'inProgress');
  t.status = { type: 'active', activeFlags: [] };
  h.daemon.notify('thread/status/changed', { threadId: T, status: t.status });
  h.daemon.notifySubscribed(T, 'turn/started', { threadId: T, turn: t.turn });
  await h.settle();
}

/** One outage recovered at its first attempt, then the goal goes on. */
async function outage(h: Harness): Promise<void> {
  const before = sets(h);
  await fail(h);
  await h.advance(BASE + 1_000);
  assert.equal(sets(h), before + 1, `outage ${before + 1} not recovered: ${JSON.stringify(h.engine.watch(T)?.state)}`);
  await goesOn(h);
}

const attentions = (h: Harness) => h.decisions.filter((d) => d.type === 'attention' && d.threadId === T).length;

describe('the recovery budget', () => {
  it(`spent after ${BUDGET} recoveries in 24 h: budgetSpent, said once (also across a crash), and no set`, async () => {
    const { h, store } = await armed();
    for (let i = 0; i < BUDGET; i++) await outage(h);
    const start = h.engine.watch(T)!.recoveries[0];
    await fail(h);
    const w = h.engine.watch(T)!;
    assert.deepEqual(w.state, { kind: 'budgetSpent', used: BUDGET, limit: BUDGET, until: start + DAY });
    assert.equal(attentions(h), 1, 'the spent budget was not said');
    await h.advance(2 * 60 * 60_000);
    assert.equal(sets(h), BUDGET, 'recovered past the budget');
    assert.equal(attentions(h), 1, 'said again');
    // Saved before it was said: a crash and a restart from the store say nothing again, send nothing.
    assert.equal(store.saved.watches[T]?.state.kind, 'budgetSpent');
    h.crash();
    const second = await makeHarness({ dir: h.dir, daemon: h.daemon, store, clock: h.clock });
    harnesses.push(second);
    await second.reconcile();
    await second.advance(60 * 60_000);
    assert.equal(second.engine.watch(T)!.state.kind, 'budgetSpent');
    assert.equal(attentions(second), 0, `the restarted engine said it again: ${JSON.stringify(second.decisions)}`);
    assert.equal(sets(second), BUDGET, 'the restarted engine recovered past the budget');
  });

  it('the window rolls: 24 h after the first recoveries, the goal is recovered again', async () => {
    const { h } = await armed();
    for (let i = 0; i < BUDGET; i++) await outage(h);
    await h.advance(DAY);
    await outage(h); // the 13th, a day later: the 12 before it left the window
    assert.equal(h.engine.watch(T)!.state.kind, 'running');
    assert.equal(h.engine.watch(T)!.recoveries.length, 1, 'the window was not pruned');
    assert.equal(attentions(h), 0);
  });

  it('Retry now recovers once past the budget (counted), then the budget holds again', async () => {
    const { h } = await armed();
    for (let i = 0; i < BUDGET; i++) await outage(h);
    await fail(h);
    assert.equal(h.engine.watch(T)!.state.kind, 'budgetSpent');
    await h.engine.commands.retryNow(T);
    await h.settle();
    assert.equal(sets(h), BUDGET + 1, 'Retry now did not recover it');
    assert.equal(h.engine.watch(T)!.recoveries.length, BUDGET + 1, "the person's recovery was not counted");
    await goesOn(h);
    await fail(h);
    assert.equal(h.engine.watch(T)!.state.kind, 'budgetSpent');
    await h.advance(60 * 60_000);
    assert.equal(sets(h), BUDGET + 1, 'recovered past the budget after the Retry now');
    assert.equal(attentions(h), 2, 'each time the budget holds a recovery, said once');
  });

  it('Disarm then Re-arm starts the budget afresh: the held failure is recovered', async () => {
    const { h } = await armed();
    for (let i = 0; i < BUDGET; i++) await outage(h);
    await fail(h);
    assert.equal(h.engine.watch(T)!.state.kind, 'budgetSpent');
    await h.engine.commands.disarm(T);
    await h.engine.commands.rearm(T);
    await h.settle();
    await h.advance(BASE + 1_000);
    assert.equal(sets(h), BUDGET + 1, 'not recovered after the re-arm');
    assert.equal(h.engine.watch(T)!.recoveries.length, 1, 'the re-arm did not reset the budget');
  });

  it('a set called off before it goes out gives its count back', async () => {
    const { h } = await armed();
    await fail(h);
    await h.advance(BASE - DEFAULT_OPTIONS.prepareMs / 2); // prepared ahead: its write-ahead counted it
    assert.equal(h.engine.watch(T)!.recoveries.length, 1, 'not counted with its write-ahead');
    await h.engine.commands.pauseAll(); // the set waiting for its due time is called off by the veto
    await h.advance(BASE + 1_000);
    assert.equal(sets(h), 0);
    assert.deepEqual(h.engine.watch(T)!.recoveries, [], 'a set never sent was counted');
  });

  it('a set on the wire when the engine stops keeps its count and its outcome: only sets not sent are withdrawn', async () => {
    const { h, store } = await armed();
    await fail(h);
    const failed = h.engine.watch(T)!.lastFailure!.turnId;
    const stopping: Promise<void>[] = [];
    h.daemon.before = (m) => {
      // The set has left the engine; its reply has not reached it yet.
      if (m.method === 'thread/goal/set') stopping.push(h.engine.stop());
    };
    await h.advance(BASE + 1_000);
    assert.equal(sets(h), 1);
    assert.equal(stopping.length, 1, 'the engine was not stopped with its set on the wire');
    await Promise.all(stopping);
    const w = store.saved.watches[T];
    assert.equal(w.recoveries.length, 1, 'a set that went out was taken back from the budget');
    assert.deepEqual(w.recovered, [failed], 'its outcome (the goal active again) was not kept');
    assert.equal(w.pending, null);
  });
});

describe('the recovery budget on disk', () => {
  it('old state without the field loads unchanged, with no recoveries counted', () => {
    const w = newWatch(T, 1_000) as unknown as Record<string, unknown>;
    delete w.recoveries;
    const parsed = parsePersisted({ version: 2, pausedAt: null, watches: { [T]: w }, disarmed: {} });
    assert.ok(!('error' in parsed), JSON.stringify(parsed));
    assert.deepEqual(parsed.state.watches[T].recoveries, []);
  });

  it('the count is stored (a crash cannot lose it) and read back', () => {
    const w = { ...newWatch(T, 1_000), recoveries: [5_000, 6_000] };
    const state = { version: 2 as const, pausedAt: null, watches: { [T]: w }, disarmed: {} };
    const text = new StateSerializer().serialize(state);
    const parsed = parsePersisted(JSON.parse(text));
    assert.ok(!('error' in parsed));
    assert.deepEqual(parsed.state.watches[T].recoveries, [5_000, 6_000]);
  });
});
