// Issue 24 on the real daemon, for each Codex build: the recovery budget reached and told once, and
// one notification for a burst. The engine in-process on the daemon's control socket; its
// decisions go, with its snapshot of that moment, to the product's notifications
// (src/views/notificationBurst.ts `BurstNotifier`, the vscode-free part of src/views/notifier.ts)
// on the real timers, with a recorded window (`NotifyIo`) in place of VS Code's.
//
// (1) The budget. A goal whose every turn fails (the mock model answers HTTP 500) is recovered
// until its budget is spent: then `budgetSpent`, one `attention` decision and one notification
// (with Retry now) say so, and no set goes out past the time the next recovery would have been
// due (the backoff cap after the failure that found the budget spent), nor at the engine's next
// full look (a resync). A person's Retry now, pressed on that notification, sends exactly one
// more; its turn fails too and the goal is held again, told once more. Judged from the daemon's
// record: the rollout's automatic activations, one per failed turn, none after a held one.
// Test-only options, and why: `recoveryBudget` 3 (shipped 12) and the backoff base 1 s, cap 3 s
// (shipped 30 s, 30 min), so the budget is spent in about 15 s instead of hours. Here one run of
// failures spends it (the shipped 12 is spent over several outages): 3 sits below `maxAttempts`
// (shipped 6, kept), so the budget and not the give-up stops the goal, and the person's retry
// (a 5th failure) is held by the budget again, not given up. The limiter, the prepare lead, the
// resync and the outage grouping are shipped.
//
// (2) The burst, with the shipped options throughout. Five goals set at once meet an HTTP 400 (a
// request the provider refuses: never retried, each goal needs a person at once). One
// notification, "5 goals need attention", is shown for them (each goal told once in the engine's
// decisions), and never a second; none of the goals is ever set. A goal that needs a person alone
// afterwards gets its own notification, with its own text.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { codexBuilds } from '../../src/demo/codexBinary';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import type { Decision } from '../../src/model/decision';
import { asksForPerson } from '../../src/model/notice';
import { personWait } from '../../src/model/queries';
import { BURST_HOLD_MS, BurstNotifier, realTimers } from '../../src/views/notificationBurst';
import { engineLab } from '../support/engineLab';
import { RecordedWindow } from '../support/recordedWindow';
import type { RealEngine } from '../support/realEngine';
import {
  assertNoAutomaticSet,
  assertOneRecoveryPerFailedTurn,
  daemonRecord,
  waitForDaemonRecord,
} from '../support/daemonJudge';
import { immediate } from '../support/wait';

const T = 60_000;
const SHOW_COMMAND = 'codexGoalRecovery.watchedGoals.focus';
const RETRY_COMMAND = 'codexGoalRecovery.retryNow';
const BUDGET = 3;
const BUDGET_OPTIONS: Partial<EngineOptions> = { recoveryBudget: BUDGET, baseDelayMs: 1_000, maxDelayMs: 3_000 };
const BURST = 5;

type PersonDecision = Extract<Decision, { type: 'gave-up' | 'attention' }>;

/** The lab's engine with its decisions reaching the product's notifications, as in a window. */
function withNotifications(real: RealEngine) {
  const window = new RecordedWindow();
  const notifier = new BurstNotifier(window, SHOW_COMMAND, realTimers);
  /** performance.now() when each decision that needs a person reached the notifier. */
  const told: { at: number; d: PersonDecision }[] = [];
  real.onDecision((d) => {
    if (asksForPerson(d)) told.push({ at: performance.now(), d });
    notifier.decided(d, real.engine.snapshot());
  });
  return { real, window, notifier, told };
}

/**
 * Waits until every burst the notifier holds has closed: a burst closes at the latest
 * `BURST_HOLD_MS` after the last decision it took, and shows what it held at once.
 */
async function burstsClosed(real: RealEngine, told: readonly { at: number }[]): Promise<void> {
  const last = Math.max(0, ...told.map((x) => x.at));
  await real.until(() => performance.now() > last + BURST_HOLD_MS + 100, 'the burst to close');
  await immediate();
}

const budgetTold = (decisions: readonly Decision[], threadId: string) =>
  decisions.filter(
    (d) => d.type === 'attention' && d.threadId === threadId && d.reason.includes('recovery budget is spent'),
  );

for (const codex of codexBuilds()) {
  describe(`The recovery budget on the real daemon, codex ${codex.version}`, () => {
    let world: ReturnType<typeof withNotifications>;
    after(() => world?.notifier.dispose());
    const env = engineLab(codex, BUDGET_OPTIONS);
    before(() => (world = withNotifications(env.real)));

    it(
      `recovers until ${BUDGET} recoveries are spent, says so once, sends no more; Retry now sends one more`,
      { timeout: 3 * T },
      async () => {
        const { real, window, told } = world;
        const { lab } = env;
        const { engine, decisions } = real;
        const maxDelayMs = BUDGET_OPTIONS.maxDelayMs!;
        const user = await lab.user();
        lab.mock.setMode('http500');
        const t = await lab.goal('a goal its provider fails every time');
        const id = t.threadId;
        const rolloutPath = String(t.thread.path);

        await real.until(() => engine.watch(id)?.state.kind === 'budgetSpent', 'the budget spent', 2 * T);
        const w = structuredClone(engine.watch(id)!);
        assert.deepEqual(w.state.kind === 'budgetSpent' && { used: w.state.used, limit: w.state.limit }, {
          used: BUDGET,
          limit: BUDGET,
        });
        const heldTurn = w.lastFailure!.turnId;
        // The next recovery would have been due at most the backoff cap after the failure that
        // found the budget spent: past that time, with nothing planned, and a resync.
        await real.settle({ dueAt: w.lastFailure!.at + maxDelayMs });
        assert.equal(engine.watch(id)?.state.kind, 'budgetSpent', real.decisionLog());
        const held = await daemonRecord(user, id, rolloutPath);
        assert.equal(held.goalStatus, 'blocked');
        assert.equal(held.failed.length, BUDGET + 1, `failed turns: ${JSON.stringify(held.turns)}`);
        assert.equal(held.rollout.automatic.length, BUDGET, 'automatic activations while the budget lasted');
        assertOneRecoveryPerFailedTurn(
          held,
          held.failed.filter((f) => f !== heldTurn),
        );
        assert.equal(held.automaticAfter.get(heldTurn), undefined, 'a set after the budget was spent');

        // Told once: one decision, one notification, with Retry now.
        const said = budgetTold(decisions, id);
        assert.equal(said.length, 1, real.decisionLog());
        assert.deepEqual(
          told.map((x) => x.d),
          said,
          'another decision needs a person',
        );
        await burstsClosed(real, told);
        const title = engine.watch(id)!.title;
        assert.deepEqual(
          window.shown.map(({ text, buttons }) => ({ text, buttons })),
          [
            {
              text: `"${title}" needs attention: ${said[0].type === 'attention' && said[0].reason}`,
              buttons: ['Retry now', 'Open rollout'],
            },
          ],
        );

        // A person's Retry now, on the notification: one set past the budget, its turn fails too.
        await window.shown[0].click('Retry now');
        assert.deepEqual(window.ran, [{ command: RETRY_COMMAND, arg: { threadId: id } }]);
        await engine.commands.retryNow(window.ran[0].arg.threadId); // what the command runs
        await waitForDaemonRecord(
          user,
          id,
          rolloutPath,
          'the person’s recovery',
          (r) => r.rollout.automatic.length > BUDGET,
        );
        // Its turn fails too: the goal waits for a person again (held by the budget, not given up).
        await real.until(() => {
          const now = engine.watch(id);
          return now !== undefined && now.lastFailure?.turnId !== heldTurn && personWait(now) === 'attention';
        }, 'a person’s state again after the person’s recovery failed');
        const again = structuredClone(engine.watch(id)!);
        assert.equal(again.state.kind, 'budgetSpent', real.decisionLog());
        await real.settle({ dueAt: again.lastFailure!.at + maxDelayMs });
        const record = await daemonRecord(user, id, rolloutPath);
        assert.equal(record.rollout.automatic.length, BUDGET + 1, 'one set for the person’s Retry now, no more');
        assert.equal(record.automaticAfter.get(heldTurn)?.length, 1, 'Retry now recovered the held turn');
        assert.equal(record.failed.length, BUDGET + 2, `failed turns: ${JSON.stringify(record.turns)}`);
        assertOneRecoveryPerFailedTurn(
          record,
          record.failed.filter((f) => f !== again.lastFailure!.turnId),
        );
        assert.deepEqual(again.state.kind === 'budgetSpent' && { used: again.state.used, limit: again.state.limit }, {
          used: BUDGET + 1,
          limit: BUDGET,
        });
        assert.equal(budgetTold(decisions, id).length, 2, 'the second hold told once');
        await burstsClosed(real, told);
        assert.equal(window.shown.length, 2, JSON.stringify(window.shown.map((s) => s.text)));
      },
    );
  });

  describe(`One notification for a burst on the real daemon, codex ${codex.version}`, () => {
    let world: ReturnType<typeof withNotifications>;
    after(() => world?.notifier.dispose());
    const env = engineLab(codex, DEFAULT_OPTIONS);
    before(() => (world = withNotifications(env.real)));

    it(
      `${BURST} goals that need a person at once: one notification; a goal alone afterwards: its own`,
      { timeout: 3 * T },
      async () => {
        const { real, window, told } = world;
        const { lab } = env;
        const { engine } = real;
        const user = await lab.user();
        lab.mock.setMode('http400');
        const goals = await Promise.all(
          Array.from({ length: BURST }, (_, i) => lab.goal(`a goal of the burst, ${i + 1}`)),
        );
        const ids = goals.map((g) => g.threadId);
        await real.until(
          () => ids.every((id) => engine.watch(id)?.state.kind === 'needsAttention'),
          'every goal of the burst needs attention',
        );
        await burstsClosed(real, told);
        await real.settle();
        await burstsClosed(real, told);
        // Each goal told once, all within one burst: one notification for them.
        assert.deepEqual(told.map((x) => x.d.threadId).sort(), [...ids].sort(), real.decisionLog());
        const spread = told.map((x, i) => (i === 0 ? 0 : Math.round(x.at - told[i - 1].at)));
        assert.deepEqual(
          window.shown.map(({ text, buttons }) => ({ text, buttons })),
          [{ text: `${BURST} goals need attention`, buttons: ['Show', "Don't show again"] }],
          `ms between the decisions: ${JSON.stringify(spread)}`,
        );
        await window.shown[0].click('Show');
        assert.deepEqual(window.ran, [{ command: SHOW_COMMAND }]);

        // A goal alone, after the burst was shown: its own notification, its own text.
        const alone = await lab.goal('a goal that needs a person alone');
        await real.until(() => engine.watch(alone.threadId)?.state.kind === 'needsAttention', 'the goal alone');
        await real.settle();
        await burstsClosed(real, told);
        const last = told.at(-1)!.d;
        assert.equal(told.length, BURST + 1, real.decisionLog());
        assert.equal(last.threadId, alone.threadId);
        assert.deepEqual(
          window.shown.slice(1).map(({ text, buttons }) => ({ text, buttons })),
          [
            {
              text: `"${engine.watch(alone.threadId)!.title}" needs attention: ${last.type === 'attention' && last.reason}`,
              buttons: ['Open rollout'],
            },
          ],
        );

        // None of them was ever set: a person's call.
        for (const g of [...goals, alone])
          assertNoAutomaticSet(
            await daemonRecord(user, g.threadId, String(g.thread.path)),
            'set a goal that needs a person',
          );
      },
    );
  });
}
