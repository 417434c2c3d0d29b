// The first run as a person meets it, in a real VS Code (code-server + Chromium) with a fresh
// profile (no setting of `autoArm`, nothing in globalState: a Marketplace install's first
// activation), against the real Codex daemon and the project's mock model (docs/first-run.md):
// the walkthrough "Get started with Codex Goal Recovery" opens by itself; until the person chooses,
// the extension observes (an active goal shows "not adopted", a failed one is not recovered:
// counted from the daemon's own record, test/support/daemonJudge.ts); "Watch every goal" in the
// walkthrough arms the active goal at once (not at the next resync) and writes the setting; each
// step is checked as it is done. A second fresh profile chooses "Watch only the goals I pick": no
// goal is armed until "Watch this goal". A third opens two windows: the choice made in the window
// that follows reaches the leader's engine, which arms at once.
//
// Settings other than the shipped ones, and why: none of `autoArm` (the first run is what is
// tested); `baseDelaySeconds: 1`, `maxDelaySeconds: 2`, so that an engine that armed the failed goal
// would have recovered it within the wait before "no set" is checked. The rest is as shipped.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitTurnCompleted } from '../../../src/demo/goalThreads';
import { type UserClient } from '../../../src/demo/userClient';
import { assertNoAutomaticSet, daemonRecord, rolloutPathOf } from '../../support/daemonJudge';
import type { DaemonLab } from '../../support/daemonLab';
import type { Json } from '../../support/json';
import { extensionLogFiles } from '../exthost';
import { engineLookedAfter, openLabWindow, type LabWindow } from './labWindow';
import { eventually, type Workbench } from './workbench';

const STATUS = 'codex-goal-recovery.status';
const VIEW = 'Watched goals';
const CONTAINER = 'Codex Goal Recovery';
const T = 60_000;
/** `maxDelaySeconds` below: an armed engine would have recovered a failure by this long after it. */
const MAX_DELAY_MS = 2_000;
/** The engine's resync (shipped): "at once" is well inside it. */
const RESYNC_MS = 60_000;
const WALKTHROUGH = 'codex-goal-recovery.codex-goal-recovery#gettingStarted';
const SETTINGS = { 'codexGoalRecovery.baseDelaySeconds': 1, 'codexGoalRecovery.maxDelaySeconds': 2 };

/** A step of the walkthrough in the Welcome editor, by its id in the manifest. */
function step(wb: Workbench, id: string) {
  return wb.page.locator(`button.getting-started-step[data-step-id="${WALKTHROUGH}#${id}"]`);
}

/** Whether the step shows its check mark. */
async function checked(wb: Workbench, id: string): Promise<boolean> {
  return (await step(wb, id).locator('[data-done-step-id]').getAttribute('aria-checked')) === 'true';
}

function waitChecked(wb: Workbench, id: string): Promise<boolean> {
  return eventually(
    () => checked(wb, id),
    (c) => c,
    T,
    `the step ${id} to be checked`,
  );
}

/** Each step's media (media/walkthrough/*.md): its heading. */
const MEDIA_HEADING: Record<string, string> = {
  startDaemon: 'The Codex daemon',
  chooseGoals: 'Every goal, or the goals you pick',
  watchGoal: 'Watch one goal',
  pause: 'Pause',
};

/**
 * Opens a step (a click on its title) and clicks one of its buttons, as a person does: once the step's
 * media shows beside it (the webview that shows it takes the focus as it loads, and a quick pick the
 * button opened before would close).
 */
async function clickStepButton(wb: Workbench, id: string, button: string): Promise<void> {
  const s = step(wb, id);
  if ((await s.getAttribute('aria-expanded')) !== 'true') await s.locator('h3.step-title').click();
  await wb.page
    .frameLocator('.getting-started-media iframe.webview')
    .frameLocator('#active-frame')
    .locator('h1', { hasText: MEDIA_HEADING[id] })
    .waitFor({ state: 'visible', timeout: T });
  const b = s.locator('.monaco-button', { hasText: button });
  await b.waitFor({ state: 'visible', timeout: T });
  await b.click();
}

/**
 * Clicks a step's button that opens a quick pick, and picks `label` in it. The step's media (a
 * webview) can take the focus a moment after it shows, and the quick pick then closes before the
 * click (VS Code's rule for quick picks, not the extension's): a person clicks the button again, and
 * so does this, up to three times. A quick pick still open after a failed pick is a failure.
 */
async function clickStepButtonAndPick(wb: Workbench, id: string, button: string, label: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await clickStepButton(wb, id, button);
    try {
      await wb.pick(label, 10_000);
      return;
    } catch (err) {
      if (attempt >= 3 || (await wb.page.locator('.quick-input-widget').isVisible())) throw err;
    }
  }
}

/** The text above the view's rows (its message), '' when it shows none. */
async function viewMessageText(wb: Workbench): Promise<string> {
  const pane = await wb.showView(VIEW);
  const message = pane.locator('.message');
  if ((await message.count()) === 0 || !(await message.first().isVisible())) return '';
  return ((await message.first().textContent()) ?? '').trim();
}

/** The value of `codexGoalRecovery.autoArm` in the user's or the remote machine's settings file. */
function writtenAutoArm(wb: Workbench): { file: string; value: unknown }[] {
  return ['User', 'Machine'].flatMap((dir) => {
    const file = path.join(wb.server.userDataDir, dir, 'settings.json');
    if (!fs.existsSync(file)) return [];
    const json = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    return 'codexGoalRecovery.autoArm' in json ? [{ file: dir, value: json['codexGoalRecovery.autoArm'] }] : [];
  });
}

async function judge(user: UserClient<Json>, threadId: string) {
  return daemonRecord(user, threadId, await rolloutPathOf(user, threadId));
}

describe('a fresh install: the walkthrough, observing, then "Watch every goal"', { timeout: 420_000 }, () => {
  let env: LabWindow | undefined;
  let lab: DaemonLab;
  let user: UserClient<Json>;
  let wb: Workbench;
  let failed: { threadId: string };

  before(
    async () => {
      env = await openLabWindow('cgr-ui-walk-', SETTINGS);
      ({ lab, wb } = env);
      await wb.waitForStatusBarText(STATUS, (t) => /watched|Codex/.test(t), T);
      user = await lab.user();
    },
    { timeout: 240_000 },
  );

  after(async () => {
    await env?.close();
  });

  it('opens the walkthrough by itself, and observes: an active goal is not armed, a failed one not recovered', () =>
    wb.guard('walkthrough-observing', async () => {
      const title = wb.page.locator('.gettingStartedDetailsContent h2.category-title');
      await title.waitFor({ state: 'visible', timeout: T });
      assert.equal((await title.textContent())?.trim(), 'Get started with Codex Goal Recovery');
      // Connected to the daemon: the first step is done; nothing is chosen yet.
      await waitChecked(wb, 'startDaemon');
      assert.equal(await checked(wb, 'chooseGoals'), false);
      // An active goal whose turn runs (the mock model answers in 10 minutes).
      lab.mock.setMode('slow', { delayMs: 600_000 });
      await lab.goal('Keep the docs in step');
      await wb.openViewContainer(CONTAINER);
      await wb.waitForTreeRows(VIEW, (r) => r.includes('Keep the docs in step, not adopted'), T);
      // A goal whose turn fails (HTTP 500): an armed engine would recover it within 2 s.
      lab.mock.setMode('http500');
      const t = await lab.goal('Fix the flaky test');
      failed = t;
      await waitTurnCompleted(user, t.threadId, 'failed', T, t.goalSetSeq);
      const rows = await wb.waitForTreeRows(VIEW, (r) => r.includes('Fix the flaky test, not adopted'), T);
      assert.ok(rows.includes('Keep the docs in step, not adopted'), rows.join('\n'));
      assert.match(await viewMessageText(wb), /^Observing: no goal is watched until you choose/);
      // Past any due time an armed engine could have chosen, and the engine has looked again.
      await engineLookedAfter(wb, Date.now() + MAX_DELAY_MS);
      assertNoAutomaticSet(await judge(user, t.threadId), 'a goal recovered before the person chose');
      assert.deepEqual(writtenAutoArm(wb), [], 'a setting written before the person chose');
      assert.equal(await checked(wb, 'chooseGoals'), false);
      await wb.screenshot('walkthrough-observing');
    }));

  it('"Watch every goal" in the walkthrough arms the active goal at once and writes the setting; its step is checked', () =>
    wb.guard('walkthrough-every-goal', async () => {
      const clicked = Date.now();
      await clickStepButton(wb, 'chooseGoals', 'Watch every goal');
      await wb.waitForTreeRows(VIEW, (r) => r.includes('Keep the docs in step, running'), T);
      const took = Date.now() - clicked;
      assert.ok(took < RESYNC_MS / 2, `armed ${took} ms after the choice: it waited for a resync`);
      await waitChecked(wb, 'chooseGoals');
      assert.deepEqual(
        writtenAutoArm(wb).map((w) => w.value),
        [true],
      );
      // The failure from before the choice is an old block: shown, never adopted, never recovered.
      const rows = await wb.treeRows(VIEW);
      assert.ok(rows.includes('Fix the flaky test, not adopted'), rows.join('\n'));
      await eventually(
        () => viewMessageText(wb),
        (m) => m === '',
        T,
        'the observing message to go',
      );
      await engineLookedAfter(wb, Date.now() + MAX_DELAY_MS);
      assertNoAutomaticSet(await judge(user, failed.threadId), 'a failure from before the choice was recovered');
      await wb.screenshot('walkthrough-every-goal');
    }));

  it('"Watch one goal" and "Pause": each step is checked when its command runs', () =>
    wb.guard('walkthrough-watch-pause', async () => {
      assert.equal(await checked(wb, 'watchGoal'), false);
      await clickStepButtonAndPick(wb, 'watchGoal', 'Watch a goal', 'Fix the flaky test');
      await wb.waitForTreeRows(
        VIEW,
        (r) => r.some((x) => x.startsWith('Fix the flaky test, ') && !/not adopted/.test(x)),
        T,
      );
      await waitChecked(wb, 'watchGoal');
      assert.equal(await checked(wb, 'pause'), false);
      await clickStepButton(wb, 'pause', 'Pause auto-recovery');
      await wb.waitForStatusBarText(STATUS, (t) => /recovery paused/.test(t), T);
      await waitChecked(wb, 'pause');
      for (const id of ['startDaemon', 'chooseGoals', 'watchGoal', 'pause']) assert.ok(await checked(wb, id), id);
      // Armed by the person after it failed: that failure is still never recovered.
      assertNoAutomaticSet(await judge(user, failed.threadId), 'the failure from before the arming was recovered');
      await wb.screenshot('walkthrough-done');
    }));
});

describe('a fresh install: "Watch only the goals I pick"', { timeout: 300_000 }, () => {
  let env: LabWindow | undefined;
  let lab: DaemonLab;
  let user: UserClient<Json>;
  let wb: Workbench;

  before(
    async () => {
      env = await openLabWindow('cgr-ui-walk-pick-', SETTINGS);
      ({ lab, wb } = env);
      await wb.waitForStatusBarText(STATUS, (t) => /watched|Codex/.test(t), T);
      user = await lab.user();
    },
    { timeout: 240_000 },
  );

  after(async () => {
    await env?.close();
  });

  it('leaves every goal unarmed, a failed one unrecovered, until "Watch this goal"', () =>
    wb.guard('walkthrough-picked-goals', async () => {
      await waitChecked(wb, 'startDaemon');
      lab.mock.setMode('slow', { delayMs: 600_000 });
      await lab.goal('Keep the docs in step');
      await wb.openViewContainer(CONTAINER);
      await wb.waitForTreeRows(VIEW, (r) => r.includes('Keep the docs in step, not adopted'), T);
      await clickStepButton(wb, 'chooseGoals', 'Watch only the goals I pick');
      await waitChecked(wb, 'chooseGoals');
      assert.deepEqual(
        writtenAutoArm(wb).map((w) => w.value),
        [false],
      );
      await eventually(
        () => viewMessageText(wb),
        (m) => m === '',
        T,
        'the observing message to go',
      );
      // A goal that becomes active after the choice, and fails: not adopted, not recovered.
      lab.mock.setMode('http500');
      const t = await lab.goal('Fix the flaky test');
      await waitTurnCompleted(user, t.threadId, 'failed', T, t.goalSetSeq);
      await engineLookedAfter(wb, Date.now() + MAX_DELAY_MS);
      const rows = await wb.waitForTreeRows(VIEW, (r) => r.includes('Fix the flaky test, not adopted'), T);
      assert.ok(rows.includes('Keep the docs in step, not adopted'), rows.join('\n'));
      assertNoAutomaticSet(await judge(user, t.threadId), 'a goal the person did not pick was recovered');
      await wb.screenshot('walkthrough-picked-goals');
      // The person picks one.
      await wb.runCommand('Codex Goal Recovery: Watch this goal');
      await wb.pick('Keep the docs in step');
      await wb.waitForTreeRows(VIEW, (r) => r.includes('Keep the docs in step, running'), T);
      await waitChecked(wb, 'watchGoal');
      assert.ok((await wb.treeRows(VIEW)).includes('Fix the flaky test, not adopted'));
    }));
});

describe('two windows of a fresh install: the choice made in the one that follows', { timeout: 300_000 }, () => {
  let env: LabWindow | undefined;
  let lab: DaemonLab;
  let first: Workbench;
  let second: Workbench;

  before(
    async () => {
      env = await openLabWindow('cgr-ui-walk-two-', SETTINGS);
      ({ lab, wb: first } = env);
      await first.waitForStatusBarText(STATUS, (t) => /watched/.test(t), T);
      second = await first.openWindow();
      await second.waitForStatusBarText(STATUS, (t) => /watched/.test(t), T);
    },
    { timeout: 240_000 },
  );

  after(async () => {
    await second?.closeWindow();
    await env?.close();
  });

  it("reaches the leader's engine: the active goal is armed at once in both windows", () =>
    second.guard('walkthrough-two-windows', async () => {
      // The second window follows the first (which runs the engine): its log says so (once the
      // log is written: a window's status bar can show before its log file is on disk).
      await eventually(
        () => Promise.resolve(extensionLogFiles(first.server.userDataDir).map((f) => fs.readFileSync(f, 'utf8'))),
        (logs) =>
          logs.length === 2 &&
          /this window runs the engine/.test(logs[0]) &&
          /runs against this daemon: following it/.test(logs[1]),
        T,
        'the two windows to log their roles',
      );
      lab.mock.setMode('slow', { delayMs: 600_000 });
      await lab.goal('Keep the docs in step');
      for (const wb of [first, second]) {
        await wb.openViewContainer(CONTAINER);
        await wb.waitForTreeRows(VIEW, (r) => r.includes('Keep the docs in step, not adopted'), T);
      }
      const chosen = Date.now();
      await second.runCommand('Codex Goal Recovery: Watch every goal');
      for (const wb of [first, second])
        await wb.waitForTreeRows(VIEW, (r) => r.includes('Keep the docs in step, running'), T);
      const took = Date.now() - chosen;
      assert.ok(took < RESYNC_MS / 2, `armed ${took} ms after the choice: it waited for a resync`);
      assert.deepEqual(
        writtenAutoArm(first).map((w) => w.value),
        [true],
      );
      await second.screenshot('walkthrough-two-windows');
    }));
});
