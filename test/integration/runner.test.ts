// The headless runner against the real Codex app-server daemon (@openai/codex, pinned) and the
// project's mock model, through the daemon's control socket. Each test gets its own CODEX_HOME,
// daemon, mock model and runner state, and cleans every process it started.
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startMockModel, type MockModel } from '../../src/demo/mockModel';
import { controlSocketPath, killAllTracked, makeCodexHome, restartDaemon, sleep, startDaemon, stopDaemon, trackedAlive, type CodexHome } from '../../src/demo/codexProcesses';
import { startThreadWithGoal, UserClient, waitGoalStatus, waitTurnCompleted, type StartedGoalThread } from '../../src/demo/userClient';
import { CLI, RunnerProcess } from '../support/runnerProcess';
import { spawnSync } from 'node:child_process';

const T = 60_000;

interface Env {
  mock: MockModel;
  home: CodexHome;
  user: UserClient;
  dir: string;
  state: string;
  runners: RunnerProcess[];
  threads: StartedGoalThread[];
}

let env: Env;

beforeEach(async () => {
  const mock = await startMockModel();
  const home = await makeCodexHome(mock.url);
  await startDaemon(home.dir);
  const user = await UserClient.overSocket(controlSocketPath(home.dir), { name: 'test-user' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-it-'));
  env = { mock, home, user, dir, state: path.join(dir, 'state.json'), runners: [], threads: [] };
});

afterEach(async () => {
  for (const r of env.runners) await r.kill();
  await env.user.close().catch(() => undefined);
  await stopDaemon(env.home.dir, { force: true });
  await env.home.cleanup();
  await env.mock.close();
  for (const t of env.threads) await t.cleanup();
  await killAllTracked();
  fs.rmSync(env.dir, { recursive: true, force: true });
  assert.deepEqual(trackedAlive(), [], 'a process was left behind');
});

function runner(extra: string[] = ['--base-delay', '0.5', '--max-delay', '2']): RunnerProcess {
  const r = new RunnerProcess(['--codex-home', env.home.dir, '--state', env.state, ...extra]);
  env.runners.push(r);
  return r;
}

async function goal(objective: string, opts: Parameters<typeof startThreadWithGoal>[2] = {}): Promise<StartedGoalThread> {
  const t = await startThreadWithGoal(env.user, objective, { timeoutMs: T, ...opts });
  env.threads.push(t);
  return t;
}

async function turns(threadId: string): Promise<{ id: string; status: string }[]> {
  return (await env.user.request('thread/turns/list', { threadId }, T)).data;
}

describe('runner against the real daemon (control socket)', () => {
  it('recovers an outage of 3 failed turns after 3 backoffs, with exactly one set per failed turn', { timeout: 2 * T }, async () => {
    const r = runner();
    await r.connected();
    env.mock.setMode('http500');
    const t = await goal('outage of three turns');
    await r.waitFor((d) => d.type === 'backoff' && d.attempt === 3, T, 'the third backoff');
    env.mock.setMode('goalComplete');
    const complete = await waitGoalStatus(env.user, t.threadId, 'complete', T, t.goalSetSeq);
    await waitTurnCompleted(env.user, t.threadId, 'completed', T, complete.seq);
    await r.waitFor((d) => d.type === 'recovered' && d.attempt === 3, T, 'the third recovery');
    const recovering = r.of('recovering', t.threadId);
    assert.deepEqual(recovering.map((d) => d.attempt), [1, 2, 3]);
    assert.equal(new Set(recovering.map((d) => d.failedTurnId)).size, 3, 'two sets for one failed turn');
    assert.deepEqual(r.of('backoff', t.threadId).map((d) => d.attempt), [1, 2, 3]);
    const all = await turns(t.threadId);
    assert.deepEqual(all.map((x) => x.status).sort(), ['completed', 'failed', 'failed', 'failed'], 'one new turn per failed turn');
    await sleep(2_500);
    assert.equal(r.of('recovering').length, 3, 'recovered a completed goal');
    assert.equal(await r.stop(), 0);
    const status = spawnSync(process.execPath, [CLI, 'status', '--state', env.state], { encoding: 'utf8' });
    assert.equal(status.status, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`${t.threadId}\\s+complete`));
  });

  it('a user pause during backoff stops the recovery', { timeout: T }, async () => {
    const r = runner(['--base-delay', '4', '--max-delay', '4']);
    await r.connected();
    env.mock.setMode('http500');
    const t = await goal('paused by the user');
    const backoff = await r.waitFor((d) => d.type === 'backoff', T, 'backoff');
    await env.user.request('thread/goal/set', { threadId: t.threadId, status: 'paused', origin: 'user' }, T);
    await r.waitFor((d) => d.type === 'disarmed' && d.threadId === t.threadId, T, 'disarmed');
    const due = Date.parse(String(backoff.dueAtIso));
    await sleep(Math.max(0, due - Date.now()) + 2_000);
    assert.equal(r.of('recovering').length, 0, 'recovered a goal the user paused');
    const g = (await env.user.request('thread/goal/get', { threadId: t.threadId }, T)).goal;
    assert.equal(g.status, 'paused');
  });

  it('never touches a model-set block (even if its turn then fails), a complete goal or a budget-limited goal', { timeout: 2 * T }, async () => {
    const r = runner();
    await r.connected();
    env.mock.setMode('goalBlocked');
    const blocked = await goal('the model blocks it');
    await waitGoalStatus(env.user, blocked.threadId, 'blocked', T, blocked.goalSetSeq);
    env.mock.setMode('goalBlocked');
    const blockedThenFailed = await goal('the model blocks it, then its turn fails');
    await waitGoalStatus(env.user, blockedThenFailed.threadId, 'blocked', T, blockedThenFailed.goalSetSeq);
    env.mock.setMode('http500'); // the answer to the tool's output fails: blocked goal, failed turn
    await waitTurnCompleted(env.user, blockedThenFailed.threadId, 'failed', T, blockedThenFailed.goalSetSeq);
    env.mock.setMode('goalComplete');
    const complete = await goal('the model completes it');
    await waitGoalStatus(env.user, complete.threadId, 'complete', T, complete.goalSetSeq);
    env.mock.setMode('healthy');
    const budget = await goal('runs out of budget', { tokenBudget: 1 });
    await waitGoalStatus(env.user, budget.threadId, 'budgetLimited', T, budget.goalSetSeq);
    await sleep(4_000); // twice the maximum delay
    assert.equal(r.of('recovering').length, 0, `touched a goal it must leave alone\n${r.transcript()}`);
    for (const [t, status] of [[blocked, 'blocked'], [blockedThenFailed, 'blocked'], [complete, 'complete'], [budget, 'budgetLimited']] as const) {
      assert.equal((await env.user.request('thread/goal/get', { threadId: t.threadId }, T)).goal.status, status);
    }
    await r.stop();
    const status = spawnSync(process.execPath, [CLI, 'status', '--state', env.state], { encoding: 'utf8' });
    assert.match(status.stdout, /blocked by the model/);
    assert.match(status.stdout, /budget limit reached/);
  });

  it('never answers a pending approval nor competes with it; the user\'s accept still runs the command', { timeout: 2 * T }, async () => {
    const sandboxLeftover = `/tmp/codex-bwrap-synthetic-mount-targets-${process.getuid?.() ?? 0}`;
    const hadLeftover = fs.existsSync(sandboxLeftover);
    const r = runner();
    await r.connected();
    const file = path.join(env.dir, 'approved.txt');
    env.mock.setMode('slow', { delayMs: 2_000 });
    const t = await goal('needs an approval', { approvalPolicy: 'untrusted', sandbox: 'workspace-write' });
    await r.waitFor((d) => d.type === 'armed' && d.threadId === t.threadId, T, 'armed');
    env.mock.setMode('approval', { file });
    const request = await env.user.waitForServerRequest((m) => m.method === 'item/commandExecution/requestApproval', T);
    // The runner, subscribed to the thread, received the same request and left it alone.
    await r.waitFor((d) => d.type === 'skipped' && d.reason === 'waiting for the user', T, 'the runner seeing the approval');
    await sleep(3_000);
    assert.equal(fs.existsSync(file), false);
    assert.equal(r.of('recovering').length, 0, 'competed with a pending approval');
    env.mock.setMode('goalComplete');
    env.user.respond(request.id!, { decision: "accept" });
    await waitGoalStatus(env.user, t.threadId, 'complete', T, t.goalSetSeq);
    assert.ok(fs.existsSync(file), 'the user\'s accept did not run the command: someone declined first');
    if (!hadLeftover) fs.rmSync(sandboxLeftover, { recursive: true, force: true });
  });

  it('a daemon restart during backoff ends in exactly one recovery', { timeout: 2 * T }, async () => {
    const r = runner(['--base-delay', '6', '--max-delay', '6']);
    await r.connected();
    env.mock.setMode('http500');
    const t = await goal('daemon restarts during backoff');
    await r.waitFor((d) => d.type === 'backoff', T, 'backoff');
    env.mock.setMode('goalComplete');
    await env.user.close();
    await restartDaemon(env.home.dir);
    await r.waitFor((d) => d.type === 'connection' && d.state === 'connected' && r.of('connection').indexOf(d) > 0, T, 'reconnect');
    env.user = await UserClient.overSocket(controlSocketPath(env.home.dir), { name: 'test-user-2' });
    await r.waitFor((d) => d.type === 'recovered' && d.threadId === t.threadId, T, 'the recovery');
    const g = await env.user.request('thread/goal/get', { threadId: t.threadId }, T);
    if (g.goal.status !== 'complete') await waitGoalStatus(env.user, t.threadId, 'complete', T);
    await sleep(2_000);
    assert.equal(r.of('recovering', t.threadId).length, 1, 'more than one recovery');
    assert.deepEqual((await turns(t.threadId)).map((x) => x.status).sort(), ['completed', 'failed']);
  });

  it('a runner killed right after sending the set does not send a second one when restarted', { timeout: 2 * T }, async () => {
    const first = runner();
    await first.connected();
    env.mock.setMode('http500');
    const t = await goal('runner crashes mid-recovery');
    await first.waitFor((d) => d.type === 'backoff', T, 'backoff');
    env.mock.setMode('goalComplete');
    const failed = await waitTurnCompleted(env.user, t.threadId, 'failed', T, t.goalSetSeq);
    await first.waitFor((d) => d.type === 'recovering', T, 'recovering');
    // The set reached the daemon: kill the runner now, before it can record the outcome.
    await waitGoalStatus(env.user, t.threadId, 'active', T, failed.seq);
    await first.kill();
    await waitGoalStatus(env.user, t.threadId, 'complete', T, failed.seq);
    const second = runner();
    await second.connected();
    await sleep(3_000);
    assert.equal(second.of('recovering').length, 0, `sent a second set after the crash\n${second.transcript()}`);
    // On disk, the recovery is recorded exactly once (the first runner may have printed it
    // before it died, without saving it: then the second confirms it from the daemon's state).
    assert.equal(await second.stop(), 0);
    const saved = JSON.parse(fs.readFileSync(env.state, 'utf8')) as { watches: Record<string, { recovered: string[]; pending: unknown; history: { outcome: string }[] }> };
    const w = saved.watches[t.threadId]!;
    assert.equal(w.pending, null);
    assert.equal(w.recovered.length, 1);
    assert.equal(w.history.filter((h) => h.outcome === 'recovered').length, 1, 'the recovery was not recorded exactly once');
    const all = await turns(t.threadId);
    assert.deepEqual(all.map((x) => x.status).sort(), ['completed', 'failed']);
  });

  it('does not adopt a goal that was already blocked when it started', { timeout: T }, async () => {
    env.mock.setMode('http500');
    const t = await goal('blocked before the runner');
    await waitTurnCompleted(env.user, t.threadId, 'failed', T, t.goalSetSeq);
    env.mock.setMode('goalComplete');
    const r = runner();
    await r.connected();
    await sleep(4_000);
    assert.equal(r.of('recovering').length, 0, 'adopted an old blocked goal');
    assert.equal(r.of('armed', t.threadId).length, 0);
    await r.stop();
    const status = spawnSync(process.execPath, [CLI, 'status', '--state', env.state], { encoding: 'utf8' });
    assert.match(status.stdout, /not adopted \(already blocked/);
  });
});
