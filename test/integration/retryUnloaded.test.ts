// The engine in-process on the real daemon's control socket, after the daemon was SIGKILLed and
// started again during a backoff: it loads no thread by itself (measured), so the engine shows
// the thread as not loaded and never sets its goal, until a person presses "Retry now". That
// loads the thread (`thread/resume` of a blocked goal starts no turn) and runs the recovery once.
// The engine runs with the shipped options (resync 60 s, limiter, prepare lead) except the backoff:
// base = cap = 10 s, so the recovery falls due 5–10 s after the failure, after the daemon's crash
// and restart (about 1–3 s here) and the engine's look that finds the thread not loaded, i.e.
// inside the window where the engine must leave the thread alone. The test checks that it did:
// past that due time and a resync after it, the daemon's record shows no set.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { codexBuilds } from '../../src/demo/codexBinary';
import { canRetryNow } from '../../src/model/queries';
import { waitGoalStatus, waitTurnCompleted } from '../../src/demo/goalThreads';
import { type UserClient } from '../../src/demo/userClient';
import { engineLab } from '../support/engineLab';
import { assertNoAutomaticSet, assertOneRecoveryPerFailedTurn, daemonRecord } from '../support/daemonJudge';
import type { Json } from '../support/json';

const T = 60_000;

for (const codex of codexBuilds())
  describe(`Retry now after a daemon restart (real daemon), codex ${codex.version}`, () => {
    const env = engineLab(codex, { baseDelayMs: 10_000, maxDelayMs: 10_000 });
    let user: UserClient<Json>;
    before(async () => (user = await env.lab.user()));

    it(
      'shows the thread as not loaded, sets nothing by itself, and Retry now recovers it once',
      { timeout: 3 * T },
      async () => {
        const { lab, real } = env;
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
        // The recovery falls due while the thread is not loaded: the case this test is about.
        const due = w.lastFailure.dueAt!;
        assert.ok(
          due > Date.now(),
          `the recovery was due ${Date.now() - due} ms before the engine saw the thread not loaded: the window holds no due time (a slow daemon restart?)`,
        );

        // Left alone, the engine neither loads the thread nor sets its goal: past the due time,
        // with nothing planned or under way, and a resync after it.
        await real.settle({ dueAt: due });
        assert.equal(engine.watch(t.threadId)?.state.kind, 'unloaded');
        const untouched = await daemonRecord(user, t.threadId, rolloutPath);
        assertNoAutomaticSet(untouched, 'set the goal of a thread the daemon has not loaded');
        assert.equal(untouched.goalStatus, 'blocked');
        assert.equal(
          fs.statSync(rolloutPath).size,
          sizeBefore,
          'something wrote to the rollout of the unloaded thread',
        );
        assert.ok(!decisions.some((d) => d.type === 'recovering' || d.type === 'loaded'));

        const seq = user.lastSeq;
        await engine.commands.retryNow(t.threadId);
        assert.ok(
          decisions.some((d) => d.type === 'loaded' && d.threadId === t.threadId),
          'no line says the thread was loaded',
        );
        await waitGoalStatus(user, t.threadId, 'complete', T, seq);
        await until(() => engine.watch(t.threadId)?.state.kind === 'complete', 'the complete state');

        // The daemon's record (read once no turn runs: this client gets no turn events): exactly one
        // automatic activation, after the failed turn, written after the restart.
        await real.settle();
        const record = await daemonRecord(user, t.threadId, rolloutPath);
        assert.deepEqual(
          record.turns.map((x) => x.status).sort(),
          ['completed', 'failed'],
          `turns: ${JSON.stringify(record.turns)}`,
        );
        assert.deepEqual(record.failed, [failedTurnId]);
        assertOneRecoveryPerFailedTurn(record);
        assert.ok(
          record.rollout.automatic.every((a) => a.offset >= sizeBefore),
          'an activation before the restart',
        );
        assert.equal(decisions.filter((d) => d.type === 'recovering' && d.threadId === t.threadId).length, 1);
        const done = engine.watch(t.threadId)!;
        assert.deepEqual(done.recovered, [failedTurnId]);
        assert.ok(!canRetryNow(done));
      },
    );
  });
