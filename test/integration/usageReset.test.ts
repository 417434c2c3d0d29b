// A usage limit on the real daemon resumes at its real reset (docs/daemon-behaviour.md (o)). The
// engine in-process on the daemon's control socket, shipped options (usageMarginMs 60 s). The
// mock model answers a 429 `usage_limit_reached`: (a) with the provider's rate-limit headers, a
// reset a few seconds away: the daemon sends `account/rateLimits/updated` with it, and the goal is
// resumed exactly once, right after the exact reset plus the margin; (b) without headers, a reset
// seconds away in the same clock minute: only the message's minute is known, and the goal is
// resumed once by that minute's end plus the margin, never before the reset, not tomorrow; (c) the
// workspace out of credits (the reached type the daemon passes on from the headers): no reset
// clears it, so the goal needs attention and is never resumed on a timer; (d) two goals limited at
// once, one with the headers and one without: each resumed at its own reset, the first from its
// own rollout's line (docs/daemon-behaviour.md (r)), not the other's rate-limit update.
// Judged from the daemon's record: the rollout's automatic activation and when it was written.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { codexBuilds } from '../../src/demo/codexBinary';
import { rateLimitHeaders } from '../../src/demo/mockModes';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { waitGoalStatus, waitTurnCompleted } from '../../src/demo/goalThreads';
import { engineLab } from '../support/engineLab';
import { assertNoAutomaticSet, assertOneRecoveryPerFailedTurn, daemonRecord } from '../support/daemonJudge';
import { sleep } from '../support/wait';

const T = 60_000;
const MARGIN = DEFAULT_OPTIONS.usageMarginMs;

for (const codex of codexBuilds())
  describe(`A usage limit resumes at its real reset (real daemon), codex ${codex.version}`, () => {
    const env = engineLab(codex);

    /** A goal that runs into the usage limit (reset at `resetAt`), then is resumed: when, and how often. */
    async function limitedThenResumed(name: string, resetAt: number, headers: boolean) {
      const { lab, real } = env;
      const user = await lab.user();
      const resetS = Math.ceil(resetAt / 1000);
      // The engine must be subscribed to the thread when the limit comes, or the daemon's
      // rate-limit update never reaches it (daemon-behaviour (o): the mock answers a 429 in 50 ms,
      // before the engine has resumed a thread it just armed): a slow first answer keeps the goal
      // running until the engine has armed it; the continuation turn then meets the limit.
      lab.mock.setMode('slow', { delayMs: 2_000 });
      const t = await lab.goal(name);
      await real.until(() => real.engine.watch(t.threadId)?.state.kind === 'running', 'the arming');
      await real.engine.idle();
      lab.mock.setMode('usageLimit', {
        resetsAt: resetS,
        ...(headers
          ? {
              rateLimitHeaders: rateLimitHeaders({
                primary: { usedPercent: 100, windowMinutes: 300, resetAt: resetS },
                secondary: { usedPercent: 20, windowMinutes: 10080, resetAt: resetS + 600_000 },
              }),
            }
          : {}),
      });
      const failed = await waitTurnCompleted(user, t.threadId, 'failed', T, t.goalSetSeq);
      const failedTurnId = String(failed.params.turn.id);
      await real.until(() => real.engine.watch(t.threadId)?.state.kind === 'usageLimited', 'usageLimited');
      const w = structuredClone(real.engine.watch(t.threadId)!); // as scheduled
      lab.mock.setMode('goalComplete');
      const seq = user.lastSeq;
      await waitGoalStatus(user, t.threadId, 'complete', 4 * T, seq).catch((error: unknown) => {
        throw new Error(`${String(error)}\nas scheduled: ${JSON.stringify(w)}\n${real.decisionLog()}`);
      });
      await real.settle();
      const record = await daemonRecord(user, t.threadId, String(t.thread.path));
      assertOneRecoveryPerFailedTurn(record);
      const activations = record.automaticAfter.get(failedTurnId) ?? [];
      assert.equal(activations.length, 1, `activations: ${JSON.stringify(activations)}`);
      return { w, at: activations[0].at, dueAt: w.lastFailure!.dueAt! };
    }

    it(
      'with the rate-limit headers: resumed exactly once, right after the exact reset',
      { timeout: 5 * T },
      async () => {
        const resetAt = Math.ceil((Date.now() + 8_000) / 1000) * 1000;
        const { w, at, dueAt } = await limitedThenResumed('usage limit with headers', resetAt, true);
        assert.equal(w.state.kind === 'usageLimited' && w.state.resetsAt, resetAt, 'not the exact reset');
        assert.equal(dueAt, resetAt + MARGIN);
        assert.ok(at >= resetAt + MARGIN, `resumed ${resetAt + MARGIN - at} ms before the reset plus margin`);
        assert.ok(at < resetAt + MARGIN + 5_000, `resumed ${at - resetAt - MARGIN} ms after the reset plus margin`);
      },
    );

    it(
      'two goals limited at once, one with the headers (reset later), one without (its message names a nearer minute): each resumed at its own reset',
      { timeout: 6 * T },
      async () => {
        const { lab, real } = env;
        const user = await lab.user();
        while (Date.now() % 60_000 > 44_000) await sleep(250);
        const nearAt = Math.ceil((Date.now() + 8_000) / 1000) * 1000;
        const minuteEnd = Math.floor(nearAt / 60_000) * 60_000 + 60_000;
        const farAt = minuteEnd + 20_000; // past the near minute's end: the two dues differ
        lab.mock.setMode('slow', { delayMs: 2_000 }); // both armed (subscribed) before their limits
        const [a, b] = [await lab.goal('limited, with headers'), await lab.goal('limited, without headers')];
        try {
          for (const t of [a, b])
            await real.until(() => real.engine.watch(t.threadId)?.state.kind === 'running', 'the arming');
          await real.engine.idle();
          const seq = user.lastSeq;
          const firstRequest = lab.mock.requestLog.length;
          lab.mock.setThreadMode(a.threadId, 'usageLimit', {
            resetsAt: farAt / 1000,
            rateLimitHeaders: rateLimitHeaders({
              primary: { usedPercent: 100, windowMinutes: 300, resetAt: farAt / 1000 },
            }),
          });
          lab.mock.setThreadMode(b.threadId, 'usageLimit', { resetsAt: nearAt / 1000 });
          lab.mock.answerSlowNow(); // both continuation turns ask at once
          const failed = await Promise.all([a, b].map((t) => waitTurnCompleted(user, t.threadId, 'failed', T, seq)));
          for (const t of [a, b])
            await real.until(() => real.engine.watch(t.threadId)?.state.kind === 'usageLimited', 'usageLimited');
          const planned = [a, b].map((t) => {
            const w = real.engine.watch(t.threadId)!;
            return {
              resetsAt: w.state.kind === 'usageLimited' && w.state.resetsAt,
              dueAt: w.lastFailure?.dueAt,
              source: w.lastFailure?.message,
            };
          });
          assert.deepEqual(planned, [
            {
              resetsAt: farAt,
              dueAt: farAt + MARGIN,
              source: "usage limit reached; reset from the thread's rollout (5-hour window)",
            },
            {
              resetsAt: minuteEnd,
              dueAt: minuteEnd + MARGIN,
              source: 'usage limit reached; reset from the error message (the end of the minute it names)',
            },
          ]);
          const asked = new Set(
            lab.mock.requestLog
              .slice(firstRequest)
              .filter((r) => r.mode === 'usageLimit')
              .map((r) => r.threadId),
          );
          assert.deepEqual(asked, new Set([a.threadId, b.threadId]), 'the mock told the threads apart');
          for (const t of [a, b]) lab.mock.setThreadMode(t.threadId, 'goalComplete');
          for (const t of [a, b]) await waitGoalStatus(user, t.threadId, 'complete', 4 * T, seq);
          await real.settle();
          for (const [i, t] of [a, b].entries()) {
            const record = await daemonRecord(user, t.threadId, String(t.thread.path));
            assertOneRecoveryPerFailedTurn(record);
            const activations = record.automaticAfter.get(String(failed[i].params.turn.id)) ?? [];
            assert.equal(activations.length, 1, `activations: ${JSON.stringify(activations)}`);
            const due = planned[i].dueAt;
            assert.ok(
              activations[0].at >= due && activations[0].at < due + 5_000,
              `${t.threadId} resumed ${activations[0].at - due} ms from its due time`,
            );
          }
        } finally {
          for (const t of [a, b]) lab.mock.setThreadMode(t.threadId, null);
        }
      },
    );

    it(
      'out of credits (a reached type no reset clears): needs attention, never resumed',
      { timeout: 2 * T },
      async () => {
        const { lab, real } = env;
        const user = await lab.user();
        lab.mock.setMode('usageLimit', {
          rateLimitHeaders: rateLimitHeaders({
            primary: { usedPercent: 100, windowMinutes: 300, resetAt: Math.ceil(Date.now() / 1000) + 5 },
            reachedType: 'workspace_owner_credits_depleted',
            credits: { hasCredits: false, unlimited: false, balance: '0' },
          }),
        });
        const t = await lab.goal('usage limit, out of credits');
        await waitTurnCompleted(user, t.threadId, 'failed', T, t.goalSetSeq);
        await real.until(() => real.engine.watch(t.threadId)?.state.kind === 'needsAttention', 'needsAttention');
        const w = real.engine.watch(t.threadId)!;
        assert.deepEqual(
          { kind: w.state.kind, code: w.state.kind === 'needsAttention' && w.state.code, due: w.lastFailure?.dueAt },
          { kind: 'needsAttention', code: 'creditsDepleted', due: null },
        );
        // Past the reset the window named (5 s), and once the engine has nothing left to do.
        await sleep(6_000);
        await real.settle();
        assertNoAutomaticSet(await daemonRecord(user, t.threadId, String(t.thread.path)), 'resumed out of credits');
        assert.equal(real.engine.watch(t.threadId)!.state.kind, 'needsAttention');
      },
    );

    it(
      'without headers, a reset in the same clock minute: resumed by that minute’s end plus margin, not tomorrow',
      {
        timeout: 6 * T,
      },
      async () => {
        // Start where the reset, 8 s away, falls in the same clock minute.
        while (Date.now() % 60_000 > 44_000) await sleep(250);
        const resetAt = Math.ceil((Date.now() + 8_000) / 1000) * 1000;
        const minuteEnd = Math.floor(resetAt / 60_000) * 60_000 + 60_000;
        const { at, dueAt } = await limitedThenResumed('usage limit without headers', resetAt, false);
        assert.equal(dueAt, minuteEnd + MARGIN, `due ${dueAt - Date.now()} ms from now`);
        assert.ok(at >= resetAt, 'resumed before the reset');
        assert.ok(
          at >= minuteEnd + MARGIN && at < minuteEnd + MARGIN + 5_000,
          `resumed at ${new Date(at).toISOString()}`,
        );
      },
    );
  });
