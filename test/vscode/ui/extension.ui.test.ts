// The extension as a person sees it, in a real VS Code (code-server + Chromium), against the
// real Codex daemon and the project's mock model: the sidebar with threads in several states,
// the status-bar countdown, and "Pause auto-recovery" from the command palette.
//
// Settings other than the shipped ones, and why: `baseDelaySeconds`/`maxDelaySeconds` 90, so the
// outage thread stays in its first backoff (45–90 s) while the suite looks at the tree and the
// countdown: nothing falls due during it. The rest is as shipped.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { waitGoalStatus, waitTurnCompleted } from '../../../src/demo/goalThreads';
import { type UserClient } from '../../../src/demo/userClient';
import { DaemonLab } from '../../support/daemonLab';
import { openLabWindow, type LabWindow } from './labWindow';
import type { Workbench } from './workbench';
import type { Json } from '../../support/json';

const STATUS = 'codex-goal-recovery.status';
const VIEW = 'Watched goals';
const T = 60_000;

/** Seconds left in "retry in m:ss". */
function secondsLeft(text: string): number {
  const m = /retry in (\d+):(\d\d)/.exec(text);
  assert.ok(m, `no countdown in "${text}"`);
  return Number(m[1]) * 60 + Number(m[2]);
}

describe('the extension in a real VS Code', { timeout: 300_000 }, () => {
  let env: LabWindow | undefined;
  let lab: DaemonLab;
  let user: UserClient<Json>;
  let wb: Workbench;

  before(
    async () => {
      env = await openLabWindow('cgr-ui-ext-', {
        'codexGoalRecovery.baseDelaySeconds': 90,
        'codexGoalRecovery.maxDelaySeconds': 90,
      });
      ({ lab, wb } = env);
      await wb
        .waitForStatusBarText(STATUS, (t) => /watched/.test(t), T)
        .catch(async (error: unknown) => {
          // Say why: the item's tooltip carries the connection's state.
          const label = await wb.statusBarAriaLabel(STATUS, 1_000).catch(() => '(no label)');
          throw new Error(`${error instanceof Error ? error.message : String(error)}\nstatus item: ${label}`);
        });
      user = await lab.user();
      // Three goals, three states: completed by the model, blocked by the model, and blocked by
      // an outage (waiting to retry).
      lab.mock.setMode('goalComplete');
      const done = await lab.goal('Write the release notes');
      await waitGoalStatus(user, done.threadId, 'complete', T, done.goalSetSeq);
      lab.mock.setMode('goalBlocked');
      const blocked = await lab.goal('Migrate the billing tables');
      await waitGoalStatus(user, blocked.threadId, 'blocked', T, blocked.goalSetSeq);
      lab.mock.setMode('http500');
      const outage = await lab.goal('Fix the flaky integration test');
      await waitTurnCompleted(user, outage.threadId, 'failed', T, outage.goalSetSeq);
    },
    { timeout: 240_000 },
  );

  after(async () => {
    await env?.close();
  });

  it('shows the watched threads in their states in the sidebar', () =>
    wb.guard('ui-tree', async () => {
      await wb.openViewContainer('Codex Goal Recovery');
      // The model's block can show as a failure until the rollout line that tells it is read
      // (at the latest right before the retry, which it then calls off): allow that long.
      const rows = await wb.waitForTreeRows(
        VIEW,
        (r) =>
          r.length >= 3 &&
          r.some((x) => /retry in/.test(x)) &&
          r.some((x) => /blocked by the model/.test(x)) &&
          r.some((x) => /, complete$/.test(x)),
        2 * T,
      );
      assert.ok(
        rows.some((r) => /^Fix the flaky integration test, retry in \d+:\d\d · attempt 1\/6$/.test(r)),
        rows.join('\n'),
      );
      assert.ok(rows.includes('Migrate the billing tables, blocked by the model'), rows.join('\n'));
      assert.ok(rows.includes('Write the release notes, complete'), rows.join('\n'));
      // The thread waiting to retry comes first.
      assert.match(rows[0], /^Fix the flaky integration test/);
      const shot = await wb.screenshot('watched-goals');
      assert.ok(fs.statSync(shot).size > 10_000);
    }));

  it('counts the next retry down in the status bar', () =>
    wb.guard('ui-countdown', async () => {
      const first = await wb.waitForStatusBarText(STATUS, (t) => /retry in \d+:\d\d/.test(t), T);
      const seenAt = Date.now();
      // Waits for the text to fall (not for a fixed time), then checks it fell by about the time that passed.
      const second = await wb
        .waitForStatusBarText(STATUS, (t) => /retry in \d+:\d\d/.test(t) && secondsLeft(t) < secondsLeft(first), 10_000)
        .catch((error: unknown) => {
          throw new Error(
            `the countdown did not fall from "${first}" within 10 s: ${error instanceof Error ? error.message : String(error)}`,
          );
        });
      const elapsed = (Date.now() - seenAt) / 1000;
      assert.ok(
        secondsLeft(first) - secondsLeft(second) <= Math.ceil(elapsed) + 1,
        `the countdown jumped: "${first}" then "${second}" ${elapsed.toFixed(1)} s later`,
      );
    }));

  it('"Pause auto-recovery" from the command palette shows in the status bar, and resumes', () =>
    wb.guard('ui-pause', async () => {
      await wb.runCommand('Codex Goal Recovery: Pause auto-recovery');
      await wb.waitForStatusBarText(STATUS, (t) => /recovery paused/.test(t), T);
      const rows = await wb.waitForTreeRows(VIEW, (r) => r.some((x) => /· recovery paused$/.test(x)), T);
      assert.ok(
        rows.some((x) => /^Fix the flaky integration test, retry in .* · recovery paused$/.test(x)),
        rows.join('\n'),
      );
      await wb.screenshot('recovery-paused');
      await wb.runCommand('Codex Goal Recovery: Resume auto-recovery');
      await wb.waitForStatusBarText(STATUS, (t) => /retry in \d+:\d\d/.test(t), T);
    }));

  it('"Reset state…" asks first, then forgets the watched threads', () =>
    wb.guard('ui-reset', async () => {
      await wb.runCommand('Codex Goal Recovery: Reset state…');
      const dialog = wb.page.locator('.monaco-dialog-box');
      await dialog.waitFor({ state: 'visible', timeout: T });
      assert.match((await dialog.textContent()) ?? '', /forgets every watched thread/);
      await dialog.getByRole('button', { name: 'Reset' }).click();
      // Seen again after the reset, the goals are no longer active: shown, but not adopted.
      const rows = await wb.waitForTreeRows(VIEW, (r) => r.length >= 3 && r.every((x) => /not adopted/.test(x)), T);
      assert.ok(
        rows.includes('Write the release notes, not adopted (already complete when first seen)'),
        rows.join('\n'),
      );
    }));
});
