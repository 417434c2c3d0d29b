// The extension as a person sees it, in a real VS Code (code-server + Chromium) at a laptop's size
// (1280×800, the side bar about 300 px), against the real Codex daemon and the project's mock
// model: the sidebar with threads in several states (short rows, state first), the status-bar
// countdown, the palette's commands following the state (Pause or Resume), "Pause auto-recovery",
// the view's badge for goals that need attention (it appears and goes), a row's history, Copy
// Diagnostics on the clipboard, and "Reset state…". It takes the README's screenshots: into
// test-artifacts/ always, and into media/ (shipped in the .vsix) with CGR_UPDATE_MEDIA=1.
//
// Settings other than the shipped ones, and why: `baseDelaySeconds`/`maxDelaySeconds` 90, so the
// outage thread stays in its first backoff (45–90 s) while the suite looks at the tree and the
// countdown: nothing falls due during it. `autoArm: true` (the shipped default) set explicitly: the
// fresh profile would otherwise start observing until a person chooses (docs/first-run.md), and this
// suite watches goals armed at first sight, as an install whose person chose "Watch every goal" does.
// The rest is as shipped.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitGoalStatus, waitTurnCompleted } from '../../../src/demo/goalThreads';
import { type UserClient } from '../../../src/demo/userClient';
import { DaemonLab } from '../../support/daemonLab';
import { REPO_ROOT } from '../paths';
import { openLabWindow, type LabWindow } from './labWindow';
import type { TreeRow, Workbench } from './workbench';
import type { Json } from '../../support/json';

const STATUS = 'codex-goal-recovery.status';
const VIEW = 'Watched goals';
const T = 60_000;
const CONTAINER = 'Codex Goal Recovery';
const PALETTE = 'Codex Goal Recovery:';

/** A screenshot for the README: in test-artifacts/, and in media/ when CGR_UPDATE_MEDIA=1. */
async function readmeShot(wb: Workbench, name: string): Promise<string> {
  const shot = await wb.screenshot(name);
  assert.ok(fs.statSync(shot).size > 10_000, `${shot} is nearly empty`);
  if (process.env.CGR_UPDATE_MEDIA === '1')
    fs.copyFileSync(shot, path.join(REPO_ROOT, 'media', `screenshot-${name}.png`));
  return shot;
}

/** Seconds left in "retry in m:ss" (the status bar) or "retry m:ss" (a row). */
function secondsLeft(text: string): number {
  const m = /retry (?:in )?(\d+):(\d\d)/.exec(text);
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
      env = await openLabWindow(
        'cgr-ui-ext-',
        {
          'codexGoalRecovery.baseDelaySeconds': 90,
          'codexGoalRecovery.maxDelaySeconds': 90,
          'codexGoalRecovery.autoArm': true,
        },
        undefined,
        { width: 1280, height: 800 },
      );
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

  it('shows the watched threads in their states in the sidebar, each row short and not cut at 300 px', () =>
    wb.guard('ui-tree', async () => {
      await wb.openViewContainer(CONTAINER);
      const width = await wb.sidebarWidth();
      assert.ok(width >= 250 && width <= 360, `the side bar is ${width} px wide, not a normal width`);
      // The model's block can show as a failure until the rollout line that tells it is read
      // (at the latest right before the retry, which it then calls off): allow that long.
      const rows = await wb.waitForTreeRows(
        VIEW,
        (r) =>
          r.length >= 3 &&
          r.some((x) => /, retry \d+:\d\d$/.test(x)) &&
          r.some((x) => /model blocked$/.test(x)) &&
          r.some((x) => /, complete$/.test(x)),
        2 * T,
      );
      assert.ok(
        rows.some((r) => /^Fix the flaky integration test, retry \d+:\d\d$/.test(r)),
        rows.join('\n'),
      );
      assert.ok(rows.includes('Migrate the billing tables, model blocked'), rows.join('\n'));
      assert.ok(rows.includes('Write the release notes, complete'), rows.join('\n'));
      // The thread waiting to retry comes first.
      assert.match(rows[0], /^Fix the flaky integration test/);
      // Every row's description is shown whole: nothing cut by the side bar's edge.
      const cut = await wb
        .view(VIEW)
        .locator('.monaco-list-row .label-description')
        .evaluateAll((els) =>
          els
            .filter((el) => {
              const e = el as unknown as { getBoundingClientRect(): { right: number }; closest(s: string): unknown };
              const row = e.closest('.monaco-list-row') as { getBoundingClientRect(): { right: number } } | null;
              return row !== null && e.getBoundingClientRect().right > row.getBoundingClientRect().right;
            })
            .map((el) => (el as unknown as { textContent: string | null }).textContent),
        );
      assert.deepEqual(cut, [], `cut at the side bar's edge: ${JSON.stringify(cut)}`);
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

  it('the palette offers Pause or Resume as the state is; Pause shows on every row it holds, and resumes', () =>
    wb.guard('ui-pause', async () => {
      const before = await wb.paletteCommands(PALETTE);
      assert.ok(before.includes(`${PALETTE} Pause auto-recovery`), before.join('\n'));
      assert.ok(
        !before.includes(`${PALETTE} Resume auto-recovery`),
        `Resume offered while not paused:\n${before.join('\n')}`,
      );
      assert.ok(!before.includes(`${PALETTE} Start Codex daemon`), `Start Codex daemon offered while connected`);
      // Commands that act on a row show only when a row offers them: none is disarmed yet.
      assert.ok(before.includes(`${PALETTE} Retry now`), before.join('\n'));
      assert.ok(!before.includes(`${PALETTE} Re-arm thread`), `Re-arm offered with nothing disarmed`);
      await wb.runCommand(`${PALETTE} Pause auto-recovery`);
      await wb.waitForStatusBarText(STATUS, (t) => /recovery paused/.test(t), T);
      const rows = await wb.waitForTreeRows(VIEW, (r) => r.some((x) => /, paused · retry /.test(x)), T);
      assert.ok(
        rows.some((x) => /^Fix the flaky integration test, paused · retry \S/.test(x)),
        rows.join('\n'),
      );
      assert.ok(!rows.some((x) => /retry \d+:\d\d$/.test(x)), `a row still counts down:\n${rows.join('\n')}`);
      await wb.screenshot('recovery-paused');
      const paused = await wb.paletteCommands(PALETTE);
      assert.ok(paused.includes(`${PALETTE} Resume auto-recovery`), paused.join('\n'));
      assert.ok(
        !paused.includes(`${PALETTE} Pause auto-recovery`),
        `Pause offered while paused:\n${paused.join('\n')}`,
      );
      await wb.runCommand(`${PALETTE} Resume auto-recovery`);
      await wb.waitForStatusBarText(STATUS, (t) => /retry in \d+:\d\d/.test(t), T);
      await wb.waitForTreeRows(
        VIEW,
        (r) => r.some((x) => /^Fix the flaky integration test, retry \d+:\d\d$/.test(x)),
        T,
      );
    }));

  it('the view badge counts the goals that need attention', () =>
    wb.guard('ui-badge', async () => {
      assert.equal(await wb.activityBarBadge(CONTAINER), '', 'a badge with no goal needing attention');
      lab.mock.setMode('http400'); // a failure no retry fixes: the goal needs a person, at once
      const t = await lab.goal('Rotate the signing keys');
      await waitTurnCompleted(user, t.threadId, 'failed', T, t.goalSetSeq);
      await wb.waitForTreeRows(VIEW, (r) => r.includes('Rotate the signing keys, needs attention'), T);
      await eventuallyEqual(() => wb.activityBarBadge(CONTAINER), '1', 'the badge');
      assert.match(await wb.activityBarLabel(CONTAINER), /1 goal needs attention/);
      await readmeShot(wb, 'watched-goals');
    }));

  it("a row's history: Retry now recovers the goal, and its row expands into what happened", () =>
    wb.guard('ui-history', async () => {
      lab.mock.setMode('goalComplete');
      const title = 'Fix the flaky integration test';
      await wb.runCommand(`${PALETTE} Retry now`);
      await wb.pick(title);
      await wb.waitForTreeRows(VIEW, (r) => r.includes(`${title}, complete`), T);
      // Another outage, so that the picture has a countdown too.
      lab.mock.setMode('http500');
      const next = await lab.goal('Upgrade the build to Node 24');
      await waitTurnCompleted(user, next.threadId, 'failed', T, next.goalSetSeq);
      await wb.waitForTreeRows(VIEW, (r) => r.some((x) => /^Upgrade the build to Node 24, retry \d+:\d\d$/.test(x)), T);
      await wb.treeRow(VIEW, `${title}, complete`).click();
      const items = await eventuallyItems(wb, (rows) =>
        rows.some((r) => r.level === 2 && /· recovered, server error$/.test(r.label)),
      );
      const i = items.findIndex((r) => r.label === `${title}, complete`);
      assert.equal(items[i].expanded, true);
      assert.match(items[i + 1].label, /^\S.* · recovered, server error$/);
      await readmeShot(wb, 'history');
      // The tooltip of the row that needs attention, for the README: a person's pointer comes to
      // rest on the row's label and the hover follows after its delay. (What the tooltip says is
      // checked in the extension-host suite; headless Chromium does not always raise the hover,
      // so here it is a picture when it shows, and said when it does not.)
      const label = wb.treeRow(VIEW, 'Rotate the signing keys, needs attention').locator('.monaco-icon-label').first();
      const hover = wb.page.locator('.monaco-hover, .workbench-hover').filter({ hasText: 'What you can do' }).first();
      const box = (await label.boundingBox())!;
      for (let i = 0; i < 6 && !(await hover.isVisible()); i++) {
        await wb.page.mouse.move(box.x + 12 + i * 7, box.y + box.height / 2, { steps: 4 });
        await hover.waitFor({ state: 'visible', timeout: 2_500 }).catch(() => undefined);
      }
      // A hover can go again between being seen and being read (a CI run waited 30 s for its text).
      const text = (await hover.isVisible()) ? await hover.textContent({ timeout: 2_000 }).catch(() => null) : null;
      if (text !== null) {
        assert.match(text, /Last error: /);
        await readmeShot(wb, 'tooltip');
      } else
        console.log('# the row tooltip did not show (or did not stay) on hover in this browser: no tooltip screenshot');
      await wb.page.mouse.move(900, 600);
    }));

  it('Copy Diagnostics puts the report on the clipboard', () =>
    wb.guard('ui-diagnostics', async () => {
      await wb.allowClipboard();
      await wb.runCommand(`${PALETTE} Copy Diagnostics`);
      const text = await eventuallyEqualBy(
        () => wb.readClipboard(),
        (t) => t.startsWith('## Codex Goal Recovery diagnostics'),
        'the clipboard',
      );
      for (const line of [
        /^- Extension: \d+\.\d+\.\d+/m,
        /^- VS Code: \d+\.\d+\.\d+/m,
        /^- Role: leader \(this window runs the engine\)$/m,
        /^- Leader: this window$/m,
        new RegExp(`^- Target: ${lab.home.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/`, 'm'),
        /^- Socket check: ok/m,
        /^- Connection: connected/m,
        /^- Daemon Codex: 0\.\d+\.\d+ \(tested /m,
        /^- Policy \(machine-wide\): retry after 1\.5 min/m,
        /^### Goals \(5\)$/m,
        /^- complete: 2$/m,
        /^- needsAttention: 1$/m,
        /^- waiting for a person \(the badge\): 1$/m,
        /^### Recent log/m,
        /\[warning\] .*needs attention/,
      ])
        assert.match(text, line);
    }));

  it('"Reset state…" asks first, then forgets the watched threads', () =>
    wb.guard('ui-reset', async () => {
      await wb.runCommand('Codex Goal Recovery: Reset state…');
      const dialog = wb.page.locator('.monaco-dialog-box');
      await dialog.waitFor({ state: 'visible', timeout: T });
      assert.match((await dialog.textContent()) ?? '', /forgets every watched thread/);
      await dialog.getByRole('button', { name: 'Reset' }).click();
      // Seen again after the reset, the goals are no longer active: shown, but not adopted.
      const rows = await wb.waitForTreeRows(VIEW, (r) => r.length >= 5 && r.every((x) => /not adopted$/.test(x)), T);
      assert.ok(rows.includes('Write the release notes, not adopted'), rows.join('\n'));
      // Nothing needs attention any more: the badge goes.
      await eventuallyEqual(() => wb.activityBarBadge(CONTAINER), '', 'the badge');
    }));
});

async function eventuallyEqualBy<V>(read: () => Promise<V>, ok: (v: V) => boolean, what: string): Promise<V> {
  const deadline = Date.now() + T;
  let last: V | undefined;
  for (;;) {
    last = await read().catch(() => last);
    if (last !== undefined && ok(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function eventuallyEqual(read: () => Promise<string>, want: string, what: string): Promise<string> {
  return eventuallyEqualBy(read, (v) => v === want, `${what} to read "${want}"`);
}

function eventuallyItems(wb: Workbench, ok: (rows: TreeRow[]) => boolean): Promise<TreeRow[]> {
  return eventuallyEqualBy(() => wb.treeItems(VIEW), ok, 'the expanded row');
}
