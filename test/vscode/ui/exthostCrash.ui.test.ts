// The extension host dies by SIGKILL during a backoff, in a real VS Code (code-server +
// Chromium), against the real Codex daemon: once the window has reloaded (a new extension host),
// the failed turn is recovered exactly once, counted from the daemon's own record (the rollout's
// automatic activations, the goal's status), not from the extension's log. A second test crashes
// the whole window (the extension host and the renderer) the moment the backoff is announced,
// before the workbench has written globalState to disk: the restarted extension still resumes
// the announced backoff (from its crash journal), and recovers once. docs/globalstate-durability.md
// has the measurements behind both. The daemon is the judge (test/support/daemonJudge.ts).
//
// Settings other than the shipped ones, and why: `baseDelaySeconds`/`maxDelaySeconds` 12, so a
// backoff (6–12 s) is long enough for the kill to land inside it and short enough for the suite
// (the shipped 30 s base: 15–30 s per test). `autoArm: true` (the shipped default) set explicitly: a
// fresh profile observes until a person chooses (docs/first-run.md); here goals are armed at first
// sight, as after "Watch every goal". The rest is as shipped.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_PREPARE_MS } from '../../../src/core/schedule';
import { waitGoalStatus } from '../../../src/demo/goalThreads';
import { type UserClient } from '../../../src/demo/userClient';
import {
  assertNoAutomaticSet,
  assertOneRecoveryPerFailedTurn,
  daemonRecord,
  rolloutPathOf,
  type DaemonRecord,
} from '../../support/daemonJudge';
import { DaemonLab } from '../../support/daemonLab';
import {
  extensionLogFiles,
  killHard,
  newExtensionLogLines,
  readStoredGlobalState,
  sleep,
  storedWatch,
  waitForExtensionHost,
  waitForLogLine,
} from '../exthost';
import { openLabWindow, type LabWindow } from './labWindow';
import type { Workbench } from './workbench';
import type { Json } from '../../support/json';

const STATUS = 'codex-goal-recovery.status';
const VIEW = 'Watched goals';
const T = 90_000;
const EXTENSION_ID = 'codex-goal-recovery.codex-goal-recovery';
/** The longest a recovery is prepared ahead of its due time. */
const MAX_LEAD_MS = MAX_PREPARE_MS;

describe('the extension host killed during a backoff', { timeout: 600_000 }, () => {
  let env: LabWindow | undefined;
  let lab: DaemonLab;
  let user: UserClient<Json>;
  let wb: Workbench;

  before(
    async () => {
      // 6–12 s backoffs: the kill lands well inside one, and the reload may end before or after it.
      env = await openLabWindow('cgr-ui-crash-', {
        'codexGoalRecovery.baseDelaySeconds': 12,
        'codexGoalRecovery.maxDelaySeconds': 12,
        'codexGoalRecovery.autoArm': true,
      });
      ({ lab, wb } = env);
      await wb.waitForStatusBarText(STATUS, (t) => /watched/.test(t), T);
      user = await lab.user();
    },
    { timeout: 240_000 },
  );

  after(async () => {
    await env?.close();
  });

  /**
   * A goal whose turn fails; returns once the extension has announced the backoff (its log line)
   * and the tree shows it: the failed turn and the announced due time.
   */
  async function failedGoal(title: string): Promise<{
    threadId: string;
    rolloutPath: string;
    goalSetSeq: number;
    failedTurn: string;
    dueAt: number;
    seenAt: number;
  }> {
    lab.mock.setMode('http500');
    const t = await lab.goal(title);
    const { line, seenAt } = await waitForLogLine(wb.server.userDataDir, new RegExp(`backoff ${t.threadId}:`), T, 5);
    const m = /on turn (\S+); attempt 1 in .* \(at (\S+)\)$/.exec(line);
    assert.ok(m, `not a first backoff: ${line}`);
    return {
      threadId: t.threadId,
      rolloutPath: await rolloutPathOf(user, t.threadId),
      goalSetSeq: t.goalSetSeq,
      failedTurn: m[1],
      dueAt: Date.parse(m[2]),
      seenAt,
    };
  }

  /** After the restart: the goal completes, the restarted extension says so, and the daemon's record is read. */
  async function recoveredOnce(g: Awaited<ReturnType<typeof failedGoal>>, title: string) {
    await waitGoalStatus(user, g.threadId, 'complete', T, g.goalSetSeq);
    await wb.openViewContainer('Codex Goal Recovery');
    await wb.waitForTreeRows(VIEW, (r) => r.includes(`${title}, complete`), T);
    const r: DaemonRecord = await daemonRecord(user, g.threadId, g.rolloutPath);
    assert.equal(r.goalStatus, 'complete');
    assert.deepEqual(r.failed, [g.failedTurn], `the announced failed turn is the only one: ${JSON.stringify(r.turns)}`);
    assertOneRecoveryPerFailedTurn(r);
    assert.equal(r.rollout.user.length, 1, 'the user set the goal once');
    assert.deepEqual(
      r.turns.map((x) => x.status).sort(),
      ['completed', 'failed'],
      'one failed turn, one recovery turn',
    );
    return r;
  }

  it('SIGKILL of the extension host during the backoff, once the workbench has stored it, then a reload: recovered exactly once', () =>
    wb.guard('exthost-killed', async () => {
      const title = 'Recovered once after the extension host was killed';
      const g = await failedGoal(title);
      await wb.openViewContainer('Codex Goal Recovery');
      await wb.waitForTreeRows(VIEW, (r) => r.some((x) => x.startsWith(`${title}, retry `)), T);
      const host = await waitForExtensionHost(wb.server.pgid, T);
      // Positive: the workbench's stored globalState (IndexedDB) holds the announced backoff.
      for (const deadline = Date.now() + T; ;) {
        const w = storedWatch(await readStoredGlobalState(wb.page, EXTENSION_ID), g.threadId);
        if (w?.kind === 'backoff' && w.failedTurnId === g.failedTurn) break;
        if (Date.now() > deadline)
          throw new Error(`the workbench never stored the backoff of ${g.threadId}: ${JSON.stringify(w)}`);
        await sleep(20);
      }
      assert.ok(
        Date.now() < g.dueAt - MAX_LEAD_MS,
        'the kill must land during the backoff, before a recovery can be prepared',
      );
      await killHard(host);
      assertNoAutomaticSet(
        await daemonRecord(user, g.threadId, g.rolloutPath, { settled: false }),
        'recovered before the kill',
      );
      lab.mock.setMode('goalComplete'); // the provider is back
      const before = extensionLogFiles(wb.server.userDataDir);
      await wb.reload(T);
      await waitForExtensionHost(wb.server.pgid, T, [host]);
      await recoveredOnce(g, title);
      // What the restarted extension found: the announced backoff, not a new decision on it.
      const again = newExtensionLogLines(wb.server.userDataDir, before).filter(
        (l) => l.includes(`backoff ${g.threadId}:`) && l.includes(g.failedTurn),
      );
      assert.deepEqual(again, [], 'the restarted extension decided the backoff again: it had lost it');
    }));

  it('the whole window crashes as the backoff is announced (before globalState reaches the disk): the announced backoff is resumed, recovered exactly once', () =>
    wb.guard('window-crashed', async () => {
      const title = 'Recovered once after the window crashed';
      const host = await waitForExtensionHost(wb.server.pgid, T);
      const cdp = await wb.page.context().newCDPSession(wb.page);
      const g = await failedGoal(title);
      // At once: the workbench writes globalState to IndexedDB about 100 ms after the update (measured).
      void cdp.send('Page.crash').catch(() => undefined); // never answers: its page is gone
      await killHard(host);
      const crashedAfter = Date.now() - g.seenAt;
      lab.mock.setMode('goalComplete');
      const before = extensionLogFiles(wb.server.userDataDir);
      await wb.reopenCrashed(T);
      await waitForExtensionHost(wb.server.pgid, T, [host]);
      await wb.waitForStatusBarText(STATUS, (t) => /watched|retry in|recover/.test(t), T);
      const record = await recoveredOnce(g, title);
      const lines = newExtensionLogLines(wb.server.userDataDir, before);
      const again = lines.filter((l) => l.includes(`backoff ${g.threadId}:`) && l.includes(g.failedTurn));
      assert.deepEqual(
        again,
        [],
        `the restarted extension decided the backoff again (killed ${crashedAfter} ms after it was announced): the announced one was lost`,
      );
      // The daemon's record agrees: the recovery went out at the announced time, not earlier.
      const at = record.rollout.automatic[0].at;
      assert.ok(
        at >= g.dueAt - 1_000,
        `re-activated at ${new Date(at).toISOString()}, before the announced ${new Date(g.dueAt).toISOString()}`,
      );
    }));
});
