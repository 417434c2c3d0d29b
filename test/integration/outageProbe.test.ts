// One outage, one probe, on the real daemon (src/core/outage.ts; docs/architecture.md "Outages"):
// ten goals on the mock blocked by one outage (HTTP 500). One recovery goes out as the probe while
// the nine others wait for it; the probe fails again (the provider still down), and the ten take
// its next step together, each counted once; the provider heals, the next probe's first response
// (`thread/tokenUsage/updated`) releases the nine at once, through the limiter, and every goal
// completes. Judged from the daemon's record: one automatic activation per failed turn, and the
// outage cost 2 probes + 9 releases = 11 recoveries where each goal alone would have spent 20.
//
// Options other than the shipped ones, and why: the backoff base = cap = 20 s, so that each step
// falls due 10–20 s after its failure instead of 15–30 s, then 30–60 s (the ten failures, spread
// over the 3 s of the mock's slow answers and Codex's one retry, all come before the first is due;
// the limiter, the resync, the prepare lead and the budget stay as shipped; the cap also bounds
// the wait for a probe's verdict, which here comes within a second).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { codexBuilds } from '../../src/demo/codexBinary';
import { waitGoalStatus } from '../../src/demo/goalThreads';
import type { StartedGoalThread } from '../../src/demo/goalThreads';
import { engineLab } from '../support/engineLab';
import type { RealEngine } from '../support/realEngine';
import { assertOneRecoveryPerFailedTurn, daemonRecord } from '../support/daemonJudge';
import type { Json } from '../support/json';

const T = 60_000;
const DELAY_MS = 20_000;
const GOALS = 10;

for (const codex of codexBuilds())
  describe(`one outage, one probe (real daemon), codex ${codex.version}`, () => {
    const env = engineLab(codex, { baseDelayMs: DELAY_MS, maxDelayMs: DELAY_MS });

    it(
      '10 goals, one outage: one probe, a group step on its failure, the rest released by its answer',
      { timeout: 6 * T },
      async () => {
        const { lab, real } = env;
        const { engine, decisions } = real;
        const user = await lab.user();
        // Armed while running (a slow first answer): subscribed before anything fails.
        lab.mock.setMode('slow', { delayMs: 3_000 });
        const goals: StartedGoalThread<Json>[] = [];
        for (let i = 0; i < GOALS; i++) goals.push(await lab.goal(`outage goal ${i}`));
        const ids = goals.map((g) => g.threadId);
        await real.until(() => ids.every((id) => engine.watch(id)?.state.kind === 'running'), 'all ten armed');
        await engine.idle();
        assert.ok(
          ids.every((id) => engine.watch(id)?.runsOn === 'mock/mock-model'),
          'what each runs on',
        );

        lab.mock.setMode('http500'); // the provider goes down: each goal's next request fails
        const seq = user.lastSeq;
        const probe1 = await untilDecision(real, 'probe');
        assert.equal(probe1.type === 'probe' && probe1.others, GOALS - 1, JSON.stringify(probe1));
        // The probe's recovery fails too: the nine that waited take its step, and nothing else went out.
        await real.until(
          () => decisions.filter((d) => d.type === 'backoff' && d.error.includes("outage's probe")).length >= GOALS - 1,
          'the group moved to the probe’s next step',
          2 * T,
        );
        assert.equal(
          decisions.filter((d) => d.type === 'recovering').length,
          1,
          `one recovery in the outage:\n${real.decisionLog()}`,
        );
        for (const id of ids) assert.equal(engine.watch(id)?.failures, 2, `${id}: the group’s step`);

        lab.mock.setMode('goalComplete'); // the provider is back
        const probe2 = await untilDecision(real, 'probe', probe1);
        await real.until(
          () => decisions.filter((d) => d.type === 'released').length === GOALS - 1,
          'the nine released by the second probe’s answer',
          T,
        );
        assert.ok(
          decisions.every((d) => d.type !== 'released' || (probe2.type === 'probe' && d.by === probe2.threadId)),
          `released by the probe’s answer (${probe2.type === 'probe' ? probe2.threadId : '?'}):\n${real.decisionLog()}`,
        );
        for (const id of ids) await waitGoalStatus(user, id, 'complete', 2 * T, seq);
        await real.settle();

        let recoveries = 0;
        for (const g of goals) {
          const record = await daemonRecord(user, g.threadId, String(g.thread.path));
          assertOneRecoveryPerFailedTurn(record);
          recoveries += record.rollout.automatic.length;
        }
        assert.equal(recoveries, 2 + (GOALS - 1), 'two probes and nine releases');
        assert.equal(decisions.filter((d) => d.type === 'gave-up' || d.type === 'attention').length, 0);
      },
    );
  });

/** The first decision of `type` after `since` (a decision already seen), waited for. */
async function untilDecision(real: RealEngine, type: string, since?: object) {
  const from = since ? real.decisions.indexOf(since as never) + 1 : 0;
  const found = () => real.decisions.slice(from).find((d) => d.type === type);
  await real.until(() => found() !== undefined, `a ${type} decision`, 2 * T);
  return found()!;
}
