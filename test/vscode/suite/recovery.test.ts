/// <reference types="mocha" />
// The extension in a real extension host, against the real Codex daemon and the project's
// mock model: the tree through an outage and its recovery, the commands that record the
// user's intent, and the "no daemon" state.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { CodexGoalRecoveryApi } from '../../../src/extension';
import { codexBinary, controlSocketPath, makeCodexHome, seedDaemonPackage, stopDaemon } from '../../../src/demo/codexProcesses';
import { waitGoalStatus, type UserClient } from '../../../src/demo/userClient';
import { DaemonLab } from '../../support/daemonLab';

const EXTENSION_ID = 'codex-goal-recovery.codex-goal-recovery';
const T = 60_000;
const G = vscode.ConfigurationTarget.Global;

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration('codexGoalRecovery');
}

async function until<T>(what: string, probe: () => T | undefined | false, timeoutMs = T): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

suite('recovery in the extension host (real daemon)', function () {
  this.timeout(3 * T);
  let api: CodexGoalRecoveryApi;
  let lab: DaemonLab;
  let user: UserClient;
  /** Every description a thread's row showed, in order. */
  const seen = new Map<string, string[]>();

  const row = (threadId: string) => api.rows().find((r) => r.threadId === threadId);
  const record = () => {
    for (const r of api.rows()) {
      const list = seen.get(r.threadId) ?? [];
      if (list.at(-1) !== r.description) list.push(r.description);
      seen.set(r.threadId, list);
    }
  };

  suiteSetup(async () => {
    api = (await vscode.extensions.getExtension<CodexGoalRecoveryApi>(EXTENSION_ID)!.activate());
    await config().update('notifications', 'none', G);
    lab = await DaemonLab.start();
    api.onDidChange(record);
  });

  suiteTeardown(async () => {
    for (const key of ['codexHome', 'codexPath', 'baseDelaySeconds', 'maxDelaySeconds', 'resyncIntervalSeconds', 'notifications']) await config().update(key, undefined, G);
    await lab?.close();
  });

  test('shows that no daemon runs where it looks', async () => {
    await config().update('codexHome', `${lab.home.dir}-missing`, G);
    const snap = await until('the missing daemon', () => {
      const s = api.snapshot();
      return s.connection.kind === 'disconnected' && s.target.startsWith(`${lab.home.dir}-missing`) ? s : undefined;
    });
    assert.match(snap.connection.detail, /no Codex daemon socket|daemon is not running/);
  });

  test('connects when pointed at a running daemon (settings apply live)', async () => {
    // The second retry waits 2–4 s: time for the test to switch the mock before it goes out.
    await config().update('baseDelaySeconds', 2, G);
    await config().update('maxDelaySeconds', 8, G);
    await config().update('resyncIntervalSeconds', 2, G);
    await config().update('codexHome', lab.home.dir, G);
    await until('the connection', () => api.snapshot().connection.kind === 'connected' && api.snapshot().target === controlSocketPath(lab.home.dir));
    assert.equal(api.role(), 'leader');
    user = await lab.user();
  });

  test('the tree follows an outage of two turns and its recovery', async () => {
    lab.mock.setMode('http500');
    const t = await lab.goal('tree: outage and recovery');
    await until('the row', () => row(t.threadId));
    await until('the second backoff', () => (seen.get(t.threadId) ?? []).some((d) => /^retry in \d+:\d\d · attempt 2\/6$/.test(d)));
    lab.mock.setMode('goalComplete');
    await waitGoalStatus(user, t.threadId, 'complete', T, t.goalSetSeq);
    await until('the completed row', () => row(t.threadId)?.description === 'complete');
    const shown = seen.get(t.threadId)!;
    assert.ok(shown.some((d) => /^retry in \d+:\d\d · attempt 1\/6$/.test(d)), `no first backoff in ${JSON.stringify(shown)}`);
    assert.equal(row(t.threadId)?.icon, 'pass');
    const w = api.snapshot().watches.find((x) => x.threadId === t.threadId)!;
    assert.deepEqual(w.history.map((h) => h.outcome), ['recovered', 'failed-again', 'recovered']);
    assert.equal(w.history.filter((h) => h.outcome === 'recovered').length, 2, 'one recovery per failed turn');
  });

  test('Pause goal writes the user marker into the rollout and stops recovery', async () => {
    await config().update('baseDelaySeconds', 6, G);
    await config().update('maxDelaySeconds', 6, G);
    lab.mock.setMode('http500');
    const t = await lab.goal('tree: paused by the user');
    await until('the backoff', () => row(t.threadId)?.description.startsWith('retry in'));
    assert.match(row(t.threadId)!.contextValue, /\bpausable\b/);
    await vscode.commands.executeCommand('codexGoalRecovery.pauseGoal', { threadId: t.threadId });
    await until('paused by you', () => row(t.threadId)?.description === 'paused by you');
    const w = api.snapshot().watches.find((x) => x.threadId === t.threadId)!;
    const rollout = fs.readFileSync(w.rolloutPath!, 'utf8');
    assert.match(rollout, /User set goal status: \\"paused\\"/, 'no user marker in the rollout');
    assert.match(rollout, /user\.goal/);
    await new Promise((r) => setTimeout(r, 7_000)); // past the due time
    const goal = (await user.request('thread/goal/get', { threadId: t.threadId }, T)).goal;
    assert.equal(goal.status, 'paused');
    assert.equal(api.snapshot().watches.find((x) => x.threadId === t.threadId)!.history.filter((h) => h.outcome === 'recovered').length, 0);
  });

  test('Start Codex daemon starts the daemon of the configured Codex home, with the configured executable', async () => {
    const fresh = await makeCodexHome(lab.mock.url);
    try {
      seedDaemonPackage(fresh.dir);
      await config().update('codexPath', codexBinary(), G);
      await config().update('codexHome', fresh.dir, G);
      await until('no daemon there yet', () => api.snapshot().connection.kind === 'disconnected' && api.snapshot().target === controlSocketPath(fresh.dir));
      await vscode.commands.executeCommand('codexGoalRecovery.startDaemon');
      await until('the new daemon', () => api.snapshot().connection.kind === 'connected' && api.snapshot().target === controlSocketPath(fresh.dir));
    } finally {
      await config().update('codexHome', lab.home.dir, G);
      await stopDaemon(fresh.dir, { force: true });
      await fresh.cleanup();
    }
    await until('back on the test daemon', () => api.snapshot().connection.kind === 'connected' && api.snapshot().target === controlSocketPath(lab.home.dir));
  });

  test('after a daemon crash the row says the thread is not loaded, and Retry now loads it and recovers it', async () => {
    await config().update('baseDelaySeconds', 120, G);
    await config().update('maxDelaySeconds', 120, G);
    lab.mock.setMode('http500');
    const t = await lab.goal('tree: not loaded after a crash');
    await until('the backoff', () => row(t.threadId)?.description.startsWith('retry in'));
    lab.mock.setMode('goalComplete');
    await lab.crashAndRestart();
    user = await lab.user();
    await until('the not-loaded row', () => row(t.threadId)?.description === 'not loaded in the daemon');
    assert.match(row(t.threadId)!.contextValue, /\bretry\b/, 'Retry now is not offered on the row');
    assert.equal(row(t.threadId)!.icon, 'cloud-offline');
    const since = user.lastSeq;
    await vscode.commands.executeCommand('codexGoalRecovery.retryNow', { threadId: t.threadId });
    await waitGoalStatus(user, t.threadId, 'complete', T, since);
    await until('the completed row', () => row(t.threadId)?.description === 'complete');
    const w = api.snapshot().watches.find((x) => x.threadId === t.threadId)!;
    assert.deepEqual(w.history.map((h) => h.outcome), ['recovered']);
  });

  test('Disarm, Re-arm, Retry now, Pause and Resume auto-recovery, Refresh and Open rollout work', async () => {
    await config().update('baseDelaySeconds', 30, G);
    await config().update('maxDelaySeconds', 30, G);
    lab.mock.setMode('http500');
    const t = await lab.goal('tree: commands');
    await until('the backoff', () => row(t.threadId)?.description.startsWith('retry in'));

    await vscode.commands.executeCommand('codexGoalRecovery.pauseAutoRecovery');
    await until('paused', () => api.snapshot().pausedAt !== null && row(t.threadId)?.description.endsWith('· recovery paused'));
    await vscode.commands.executeCommand('codexGoalRecovery.resumeAutoRecovery');
    await until('resumed', () => api.snapshot().pausedAt === null);

    await vscode.commands.executeCommand('codexGoalRecovery.disarmThread', { threadId: t.threadId });
    await until('disarmed', () => row(t.threadId)?.description === 'disarmed');
    assert.match(row(t.threadId)!.contextValue, /\brearm\b/);
    await vscode.commands.executeCommand('codexGoalRecovery.rearmThread', { threadId: t.threadId });
    await until('re-armed', () => row(t.threadId)?.description.startsWith('retry in'));

    await vscode.commands.executeCommand('codexGoalRecovery.refresh');
    lab.mock.setMode('goalComplete');
    await vscode.commands.executeCommand('codexGoalRecovery.retryNow', { threadId: t.threadId });
    await waitGoalStatus(user, t.threadId, 'complete', T, t.goalSetSeq);
    await until('complete', () => row(t.threadId)?.description === 'complete');

    await vscode.commands.executeCommand('codexGoalRecovery.openRollout', { threadId: t.threadId });
    const w = api.snapshot().watches.find((x) => x.threadId === t.threadId)!;
    await until('the rollout editor', () => vscode.window.activeTextEditor?.document.uri.fsPath === w.rolloutPath);
    await vscode.commands.executeCommand('codexGoalRecovery.showLog');
  });
});
