// `arm THREAD` on the real daemon, the observe-first way to use the product: the engine watches a
// goal only once a person asks it to, never recovers a failure older than the arming, and
// recovers a failure after it exactly once. The daemon is the judge (test/support/daemonJudge.ts:
// the rollout's automatic activations per failed turn).
//
// Options other than the shipped ones, and why: `autoArm: false`, the mode under test (with the
// shipped `autoArm: true` a goal seen active is armed at once, and `arm` has nothing to do); the
// backoff base = cap = 10 s, so that the recovery of the new failure falls due 5–10 s after it
// instead of 15–30 s (the resync, the limiter and the prepare lead stay as shipped).
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { codexBuilds } from '../../src/demo/codexBinary';
import { waitGoalStatus, waitTurnCompleted } from '../../src/demo/goalThreads';
import { type UserClient } from '../../src/demo/userClient';
import { engineLab } from '../support/engineLab';
import { assertNoAutomaticSet, assertOneRecoveryPerFailedTurn, daemonRecord } from '../support/daemonJudge';
import type { Json } from '../support/json';

const T = 60_000;
const DELAY_MS = 10_000;

for (const codex of codexBuilds())
  describe(`arm THREAD with autoArm off (real daemon), codex ${codex.version}`, () => {
    const env = engineLab(codex, { autoArm: false, baseDelayMs: DELAY_MS, maxDelayMs: DELAY_MS });
    let user: UserClient<Json>;
    before(async () => (user = await env.lab.user()));

    it(
      'a goal blocked by HTTP 500 before arm is not recovered; after arm, a new failure is recovered exactly once',
      { timeout: 4 * T },
      async () => {
        const { lab, real } = env;
        const { engine, decisions } = real;
        const until = real.until.bind(real);
        lab.mock.setMode('http500');
        const t = await lab.goal('arm a goal blocked before');
        const rolloutPath = String(t.thread.path);
        const oldFailure = await waitTurnCompleted(user, t.threadId, 'failed', T, t.goalSetSeq);
        const oldTurnId = String(oldFailure.params.turn.id);
        await waitGoalStatus(user, t.threadId, 'blocked', T, t.goalSetSeq);
        await until(
          () => JSON.stringify(engine.watch(t.threadId)?.state) === '{"kind":"notAdopted","status":"blocked"}',
          'the goal shown as not adopted (blocked)',
        );

        await engine.commands.arm(t.threadId);
        const armedAt = Date.now();
        assert.ok(
          decisions.some((d) => d.type === 'armed' && d.threadId === t.threadId),
          'no line says it was armed',
        );
        await until(
          () => engine.watch(t.threadId)?.state.kind === 'failedBeforeArming',
          'the failedBeforeArming state',
        );
        assert.equal(engine.watch(t.threadId)?.beforeArming, oldTurnId);

        // Left alone past the time a recovery of that failure would have fallen due, and a resync
        // after it: the daemon's record shows no automatic set.
        await real.settle({ dueAt: armedAt + DELAY_MS });
        assert.equal(engine.watch(t.threadId)?.state.kind, 'failedBeforeArming');
        const untouched = await daemonRecord(user, t.threadId, rolloutPath);
        assertNoAutomaticSet(untouched, 'the failure from before the arming was recovered');
        assert.equal(untouched.goalStatus, 'blocked');
        assert.ok(!decisions.some((d) => d.type === 'recovering' || d.type === 'backoff'));

        // The person resumes the goal; its turn fails again (HTTP 500): a failure after the
        // arming. The model answers the recovery's turn by completing the goal.
        const seq = user.lastSeq;
        await user.request('thread/goal/set', { threadId: t.threadId, status: 'active', origin: 'user' }, T);
        const newFailure = await waitTurnCompleted(user, t.threadId, 'failed', T, seq);
        const newTurnId = String(newFailure.params.turn.id);
        assert.notEqual(newTurnId, oldTurnId);
        lab.mock.setMode('goalComplete');
        await waitGoalStatus(user, t.threadId, 'complete', 2 * T, seq);
        await until(() => engine.watch(t.threadId)?.state.kind === 'complete', 'the complete state');

        await real.settle();
        const record = await daemonRecord(user, t.threadId, rolloutPath);
        assert.deepEqual(
          record.turns.map((x) => x.status).sort(),
          ['completed', 'failed', 'failed'],
          `turns: ${JSON.stringify(record.turns)}`,
        );
        assert.deepEqual(record.failed.sort(), [newTurnId, oldTurnId].sort());
        assertOneRecoveryPerFailedTurn(record, [newTurnId]);
        assert.equal(record.rollout.automatic.length, 1, 'not exactly one automatic activation in all');
        assert.deepEqual(engine.watch(t.threadId)?.recovered, [newTurnId]);
        assert.equal(decisions.filter((d) => d.type === 'recovering' && d.threadId === t.threadId).length, 1);
      },
    );
  });
