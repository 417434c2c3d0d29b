// The engine in-process on the real daemon's control socket, after the daemon was SIGKILLed and
// started again during a backoff: it loads no thread by itself (measured), so the engine shows
// the thread as not loaded and never sets its goal, until a person presses "Retry now". That
// loads the thread (`thread/resume` of a blocked goal starts no turn) and runs the recovery once.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { canRetryNow } from '../../src/model/watch';
import { connectDaemon } from '../../src/protocol/client';
import { sleep } from '../../src/demo/codexProcesses';
import { waitGoalStatus, waitTurnCompleted, type UserClient } from '../../src/demo/userClient';
import { DaemonLab } from '../support/daemonLab';
import { RealEngine } from '../support/realEngine';
import { readRolloutGoals } from '../support/rolloutGoals';

const T = 60_000;

describe('Retry now after a daemon restart (real daemon)', () => {
  let lab: DaemonLab;
  let real: RealEngine;
  let user: UserClient;

  before(async () => {
    lab = await DaemonLab.start();
    // A long backoff: nothing but the button may recover the goal during the test.
    real = await RealEngine.start((listener) => connectDaemon({ kind: 'socket', path: lab.socket }, listener, { clientVersion: 'test' }),
      { baseDelayMs: 120_000, maxDelayMs: 120_000, resyncMs: 1_000 });
    user = await lab.user();
  });

  after(async () => {
    await real?.close();
    await lab?.close();
  });

  it('shows the thread as not loaded, sets nothing by itself, and Retry now recovers it once', { timeout: 3 * T }, async () => {
    const { engine, decisions } = real;
    const until = real.until.bind(real);
    lab.mock.setMode('http500');
    const t = await lab.goal('retry an unloaded thread');
    const failed = await waitTurnCompleted(user, t.threadId, 'failed', T, t.goalSetSeq);
    const failedTurnId = String(failed.params.turn.id);
    await until(() => engine.watch(t.threadId)?.state.kind === 'backoff', 'the backoff');
    lab.mock.setMode('goalComplete');

    await lab.crashAndRestart();
    user = await lab.user();
    await until(() => engine.watch(t.threadId)?.state.kind === 'unloaded', 'the thread shown as not loaded');
    const w = engine.watch(t.threadId)!;
    assert.equal(w.lastFailure?.turnId, failedTurnId, 'the failure was forgotten');
    assert.ok(canRetryNow(w), 'Retry now is not offered');
    const rolloutPath = String(t.thread.path);
    const sizeBefore = fs.statSync(rolloutPath).size;

    // Left alone, the engine neither loads the thread nor sets its goal.
    await sleep(3_000);
    assert.equal((await user.request('thread/goal/get', { threadId: t.threadId }, T)).goal.status, 'blocked');
    assert.equal(fs.statSync(rolloutPath).size, sizeBefore, 'something wrote to the rollout of the unloaded thread');
    assert.ok(!decisions.some((d) => d.type === 'recovering' || d.type === 'loaded'));

    const seq = user.lastSeq;
    await engine.retryNow(t.threadId);
    assert.ok(decisions.some((d) => d.type === 'loaded' && d.threadId === t.threadId), 'no line says the thread was loaded');
    await waitGoalStatus(user, t.threadId, 'complete', T, seq);
    await until(() => engine.watch(t.threadId)?.state.kind === 'complete', 'the complete state');

    // This client is not subscribed to the thread (no turn events): read until the turn ended.
    type TurnRow = { id: string; status: string };
    let turns: TurnRow[] = [];
    for (const deadline = Date.now() + T; Date.now() < deadline; await sleep(100)) {
      turns = (await user.request('thread/turns/list', { threadId: t.threadId }, T)).data as TurnRow[];
      if (!turns.some((x) => x.status === 'inProgress')) break;
    }
    assert.deepEqual(turns.map((x) => x.status).sort(), ['completed', 'failed'], `turns: ${JSON.stringify(turns)}`);
    const goals = readRolloutGoals(rolloutPath);
    const activations = goals.automatic.filter((a) => a.offset >= sizeBefore);
    assert.equal(activations.length, 1, `automatic activations after the restart: ${JSON.stringify(goals.automatic)}`);
    assert.equal(activations[0]!.afterTurn, failedTurnId);
    assert.equal(decisions.filter((d) => d.type === 'recovering' && d.threadId === t.threadId).length, 1);
    const done = engine.watch(t.threadId)!;
    assert.deepEqual(done.recovered, [failedTurnId]);
    assert.ok(!canRetryNow(done));
  });
});
