// Several VS Code windows on one Codex daemon, in a real VS Code (code-server + Chromium):
// each window has its own extension host; exactly one runs the engine. Exactly one recovery per
// failed turn; when the leader's window closes, another takes over; a disarm survives a reload.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { about, waitGoalStatus, waitTurnCompleted, type UserClient } from '../../../src/demo/userClient';
import { DaemonLab } from '../../support/daemonLab';
import { openLabWindow, type LabWindow } from './labWindow';
import type { Workbench } from './workbench';

const STATUS = 'codex-goal-recovery.status';
const VIEW = 'Watched goals';
const T = 60_000;

describe('two windows on one daemon', { timeout: 420_000 }, () => {
  let env: LabWindow | undefined;
  let lab: DaemonLab;
  let user: UserClient;
  let first: Workbench;
  let second: Workbench;

  const turnStatuses = async (threadId: string) =>
    ((await user.request('thread/turns/list', { threadId }, T)).data as { status: string }[]).map((x) => x.status).sort();

  before(async () => {
    // A closed page's extension host ends a second later (code-server keeps it 3 h by default).
    env = await openLabWindow('cgr-ui-win-', { 'codexGoalRecovery.baseDelaySeconds': 1, 'codexGoalRecovery.maxDelaySeconds': 2 }, ['--reconnection-grace-time', '1']);
    ({ lab, wb: first } = env);
    await first.waitForStatusBarText(STATUS, (t) => /watched/.test(t), T);
    second = await first.openWindow();
    await second.waitForStatusBarText(STATUS, (t) => /watched/.test(t), T);
    user = await lab.user();
  }, { timeout: 240_000 });

  after(async () => {
    await second?.close();
    await env?.close(); // stops code-server and the browser, then the daemon
  });

  it('recovers each failed turn exactly once, and both windows show it', () =>
    second.guard('ui-two-windows', async () => {
      lab.mock.setMode('http500');
      const t = await lab.goal('Two windows, one recovery');
      await user.waitFor(about(t.threadId, 'turn/completed', (p) => p.turn?.status === 'failed'), T, t.goalSetSeq);
      const failed = () => user.notifications.filter((n) => n.method === 'turn/completed' && n.params?.threadId === t.threadId && n.params?.turn?.status === 'failed').length;
      const deadline = Date.now() + T;
      while (failed() < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.equal(failed(), 2, 'the first recovery did not happen');
      lab.mock.setMode('goalComplete');
      await waitGoalStatus(user, t.threadId, 'complete', T, t.goalSetSeq);
      await new Promise((r) => setTimeout(r, 3_000)); // room for a duplicate to show up
      assert.deepEqual(await turnStatuses(t.threadId), ['completed', 'failed', 'failed'], 'not exactly one new turn per failed turn');
      for (const wb of [first, second]) {
        await wb.openViewContainer('Codex Goal Recovery');
        await wb.waitForTreeRows(VIEW, (r) => r.includes('Two windows, one recovery, complete'), T);
      }
    }));

  it('takes over when the window that runs the engine closes', () =>
    second.guard('ui-takeover', async () => {
      await first.closeWindow();
      lab.mock.setMode('http500');
      const t = await lab.goal('Recovered after the takeover');
      await user.waitFor(about(t.threadId, 'turn/completed', (p) => p.turn?.status === 'failed'), T, t.goalSetSeq);
      lab.mock.setMode('goalComplete');
      const complete = await waitGoalStatus(user, t.threadId, 'complete', 30_000, t.goalSetSeq);
      await waitTurnCompleted(user, t.threadId, 'completed', T, complete.seq);
      assert.deepEqual(await turnStatuses(t.threadId), ['completed', 'failed']);
      await second.waitForTreeRows(VIEW, (r) => r.includes('Recovered after the takeover, complete'), T);
    }));

  it('a disarm survives a reload of the window (globalState)', () =>
    second.guard('ui-disarm-reload', async () => {
      lab.mock.setMode('http500');
      const t = await lab.goal('Disarmed by the user');
      await second.waitForTreeRows(VIEW, (r) => r.some((x) => x.startsWith('Disarmed by the user, retry in')), T);
      await second.runCommand('Codex Goal Recovery: Disarm thread');
      await second.pick('Disarmed by the user');
      await second.waitForTreeRows(VIEW, (r) => r.includes('Disarmed by the user, disarmed'), T);
      await new Promise((r) => setTimeout(r, 1_000)); // a turn started just before the disarm ends
      const before = await turnStatuses(t.threadId);
      assert.ok(before.every((x) => x === 'failed'), JSON.stringify(before));
      await second.reload();
      await second.waitForStatusBarText(STATUS, (x) => /watched/.test(x), T);
      await second.openViewContainer('Codex Goal Recovery');
      await second.waitForTreeRows(VIEW, (r) => r.includes('Disarmed by the user, disarmed'), T);
      await new Promise((r) => setTimeout(r, 3_000));
      assert.deepEqual(await turnStatuses(t.threadId), before, 'recovered a disarmed thread');
    }));
});
