/// <reference types="mocha" />
// "Watch this goal" in the real extension host, against the real Codex daemon and the project's
// mock model: the command is contributed with a `when` clause that offers it on `notAdopted`
// rows only, the row's tooltip says what it does, and running it on a goal blocked before (HTTP
// 500) arms the goal without recovering that failure; a failure after the person resumes the
// goal is recovered exactly once. The daemon is the judge (test/support/daemonJudge.ts).
//
// Settings other than the shipped ones, and why: `autoArm: false`, the observe-first mode this
// command is for (with the shipped `autoArm: true` an active goal is armed at first sight);
// `notifications: none` (no toasts over the workbench); `baseDelaySeconds`/`maxDelaySeconds` 4,
// so the recovery of the new failure falls due within the test (2–4 s, not 15–30 s). The resync,
// the prepare lead and the limiter stay as shipped. Every setting is put back at the end.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { CodexGoalRecoveryApi } from '../../../src/extension';
import { controlSocketPath } from '../../../src/demo/managedDaemon';
import { waitGoalStatus, waitTurnCompleted } from '../../../src/demo/goalThreads';
import type { UserClient } from '../../../src/demo/userClient';
import { newWatch } from '../../../src/model/watch';
import { contextValue, tooltip } from '../../../src/views/presentation';
import { assertNoAutomaticSet, assertOneRecoveryPerFailedTurn, daemonRecord } from '../../support/daemonJudge';
import { DaemonLab } from '../../support/daemonLab';
import type { Json } from '../../support/json';

const EXTENSION_ID = 'codex-goal-recovery.codex-goal-recovery';
const COMMAND = 'codexGoalRecovery.watchGoal';
const T = 60_000;
const G = vscode.ConfigurationTarget.Global;
const SETTINGS = ['autoArm', 'notifications', 'baseDelaySeconds', 'maxDelaySeconds', 'codexHome'];

interface Manifest {
  contributes: {
    commands: { command: string; title: string; category?: string }[];
    menus: Record<string, { command: string; when?: string; group?: string }[]>;
  };
}

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration('codexGoalRecovery');
}

async function until<V>(what: string, probe: () => V | undefined | false, timeoutMs = T): Promise<V> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The `viewItem =~ /…/` test of a `when` clause, as VS Code evaluates it on a row's context value. */
function viewItemRegex(when: string): RegExp {
  const m = /viewItem =~ \/(.+?)\/(?:\s|$)/.exec(when);
  assert.ok(m, `no viewItem test in ${when}`);
  return new RegExp(m[1]);
}

suite('Watch this goal (real daemon)', function () {
  this.timeout(4 * T);
  let api: CodexGoalRecoveryApi;
  let lab: DaemonLab;
  let user: UserClient<Json>;
  const manifest = () => vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as Manifest;
  const row = (threadId: string) => api.rows().find((r) => r.threadId === threadId);
  const watch = (threadId: string) => api.snapshot().watches.find((x) => x.threadId === threadId);

  suiteSetup(async () => {
    api = await vscode.extensions.getExtension<CodexGoalRecoveryApi>(EXTENSION_ID)!.activate();
    lab = await DaemonLab.start();
    await config().update('notifications', 'none', G);
    await config().update('autoArm', false, G);
    await config().update('baseDelaySeconds', 4, G);
    await config().update('maxDelaySeconds', 4, G);
    await config().update('codexHome', lab.home.dir, G);
    await until(
      'the connection',
      () => api.snapshot().connection.kind === 'connected' && api.snapshot().target === controlSocketPath(lab.home.dir),
    );
    await until('autoArm off in the policy', () => api.snapshot().policy?.autoArm === false);
    user = await lab.user();
  });

  suiteTeardown(async () => {
    for (const key of SETTINGS) await config().update(key, undefined, G);
    await lab?.close();
  });

  test('is contributed as "Watch this goal", offered on not-adopted rows only', async () => {
    const m = manifest();
    const command = m.contributes.commands.find((c) => c.command === COMMAND);
    assert.deepEqual(command && { title: command.title, category: command.category }, {
      title: 'Watch this goal',
      category: 'Codex Goal Recovery',
    });
    assert.ok((await vscode.commands.getCommands(true)).includes(COMMAND), 'not registered');
    const menus = m.contributes.menus['view/item/context'].filter((e) => e.command === COMMAND);
    assert.ok(
      menus.some((e) => e.group?.startsWith('inline')),
      'not an inline action of the row',
    );
    assert.ok(menus.length >= 2, 'not in the row’s context menu as well');
    const blocked = newWatch('t-blocked', Date.now());
    blocked.state = { kind: 'notAdopted', status: 'blocked' };
    const active = newWatch('t-active', Date.now());
    active.state = { kind: 'notAdopted', status: 'active' };
    const running = newWatch('t-running', Date.now());
    const disarmed = newWatch('t-disarmed', Date.now());
    disarmed.state = { kind: 'disarmed', at: Date.now() };
    const before = newWatch('t-before', Date.now());
    before.state = { kind: 'failedBeforeArming', code: 'internalServerError', message: 'HTTP 500' };
    for (const e of menus) {
      assert.match(e.when ?? '', /view == codexGoalRecovery\.watchedGoals/);
      const offered = viewItemRegex(e.when ?? '');
      assert.match(contextValue(blocked), offered);
      assert.match(contextValue(active), offered);
      for (const w of [running, disarmed, before])
        assert.doesNotMatch(contextValue(w), offered, `offered on a ${w.state.kind} row`);
    }
    assert.match(tooltip(blocked, Date.now(), 6).value, /Watch this goal/);
    assert.match(tooltip(before, Date.now(), 6).value, /older than the arming/);
  });

  test('on a goal blocked before: armed, that failure not recovered; a failure after the person resumes it is, once', async () => {
    lab.mock.setMode('http500');
    const t = await lab.goal('watch: blocked before the arming');
    const rolloutPath = String(t.thread.path);
    const old = await waitTurnCompleted(user, t.threadId, 'failed', T, t.goalSetSeq);
    const oldTurnId = String(old.params.turn.id);
    await until('the not-adopted blocked row', () => {
      const w = watch(t.threadId);
      return w?.state.kind === 'notAdopted' && w.state.status === 'blocked';
    });
    const offered = viewItemRegex(
      manifest().contributes.menus['view/item/context'].find((e) => e.command === COMMAND)!.when!,
    );
    assert.match(row(t.threadId)!.contextValue, offered);

    await vscode.commands.executeCommand(COMMAND, { threadId: t.threadId });
    await until('the row shown as stopped before the arming', () => row(t.threadId)?.description === 'blocked earlier');
    assert.doesNotMatch(row(t.threadId)!.contextValue, offered, 'still offered once armed');
    assert.equal(row(t.threadId)!.icon, 'eye');
    // Past the time a recovery of the old failure would have fallen due, and the engine's look after it.
    await new Promise((r) => setTimeout(r, 4_500));
    await api.refresh();
    assertNoAutomaticSet(
      await daemonRecord(user, t.threadId, rolloutPath),
      'the failure from before the arming was recovered',
    );
    assert.equal(watch(t.threadId)!.state.kind, 'failedBeforeArming');

    const seq = user.lastSeq;
    await user.request('thread/goal/set', { threadId: t.threadId, status: 'active', origin: 'user' }, T);
    const fresh = await waitTurnCompleted(user, t.threadId, 'failed', T, seq);
    const newTurnId = String(fresh.params.turn.id);
    lab.mock.setMode('goalComplete');
    await waitGoalStatus(user, t.threadId, 'complete', T, seq);
    await until('the completed row', () => row(t.threadId)?.description === 'complete');
    await api.refresh();
    const r = await daemonRecord(user, t.threadId, rolloutPath);
    assert.deepEqual(r.failed.sort(), [newTurnId, oldTurnId].sort());
    assertOneRecoveryPerFailedTurn(r, [newTurnId]);
    assert.equal(r.rollout.automatic.length, 1);
  });
});
