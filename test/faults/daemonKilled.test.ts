// Fault 1: the Codex daemon is SIGKILLed at a random point of a recovery, and started again.
//
// One real daemon (@openai/codex 0.169.0, pinned), the project's mock model and ONE headless runner
// (dist/cli.js, --json, short backoff, the shipped resync, the global limiter's interval 0.2 s) for every
// iteration; each iteration has its
// own thread. An iteration: the user gives a thread a goal while the model answers HTTP 500; the
// turn fails and blocks the goal; the model is healthy again (its next answer completes the goal).
// Then the daemon's process group gets SIGKILL at a point drawn from a seeded PRNG, either
//   - "uniform": a delay uniform in [0, 1500] ms after the failed turn's turn/completed, a window
//     that covers the runner's backoff (base 1 s: due 0.5–1 s after the failure), its pre-set
//     reads, the set and the recovery turn's turn/started and run, or
//   - "at-set": 0–20 ms after the runner prints `recovering` (it prints it just before it sends
//     thread/goal/set: the set is unsent, in flight, or applied without its reply),
// and is started again with `codex app-server daemon restart`. The user's client reconnects and
// resumes its thread (as a client does after a daemon restart: after SIGKILL the daemon loads no
// thread by itself, measured). The engine never loads a thread on its own
// (only "Retry now", a person's click, does: test/integration/retryUnloaded.test.ts).
//
// Invariants, checked after every iteration:
//  1. at most (here: exactly) one effective recovery per failed turn, from the daemon's own
//     records. Before the kill: the goal's status as the restarted daemon reports it before any
//     client acts (the goal store commits at once: active or complete there means a set before
//     the kill took effect; nothing but the engine sets this goal active). After the restart: the
//     rollout's automatic activations past the size it had at the restart (every set there is
//     written, no kill follows; test/support/rolloutGoals.ts says why the rollout and not
//     thread/turns/list). Their sum must be 1, and the thread must have exactly one failed turn.
//     (The rollout alone undercounts: measured, a kill can lose the line of a set whose status the
//     goal store already committed.)
//  2. no pending recovery lost: the goal ends `complete` (the recovery, or the daemon's own
//     continuation of the goal the recovery re-activated before the kill, completed it);
//  3. no crash: the runner is still running, wrote nothing to stderr, and printed a clear line
//     for the fault (a `connection` line that is not `connected`, after the kill) and reconnected;
//  4. the runner's persisted state is consistent: for the thread, no pending intent, the failed
//     turn recorded as recovered exactly once (recovered list and history), goal complete, and
//     `status` reads the file;
//  5. never a set on a complete goal: covered by (1), as such a set writes another activation.
//
// The shipped 60 s resync: every change the engine makes, a goal's completion included, is saved
// before it is shown or announced (durable before announced), so invariant 4 does not wait for
// a resync to find the state file consistent.
//
// Replay a failure with CGR_FAULT_SEED=<seed printed below>; CGR_FAULT_ITERATIONS (default 20).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { daemonPid, restartDaemon, sleep, trackedAlive } from '../../src/demo/codexProcesses';
import { startThreadWithGoal, UserClient, waitTurnCompleted, type StartedGoalThread } from '../../src/demo/userClient';
import { CLI, RunnerProcess, type RunnerDecision } from '../support/runnerProcess';
import { DaemonLab } from '../support/daemonLab';
import { faultSeed, readRolloutGoals } from '../support/rolloutGoals';
import { readStateFile } from '../../src/store/jsonFileStore';
import { rng as seededRandom } from '../support/random';

const T = 60_000;
const SEED = faultSeed();
const ITERATIONS = Math.max(1, Number(process.env.CGR_FAULT_ITERATIONS ?? 20) || 20);
const WINDOW_MS = 1_500;

interface SavedWatch {
  pending: unknown;
  recovered: string[];
  history: { outcome: string; failedTurnId: string }[];
  goal: { status: string } | null;
  state: { kind: string };
}

interface IterationRecord {
  i: number;
  strategy: 'uniform' | 'at-set';
  delayMs: number;
  /** Where the kill landed, from the runner's lines and the user's notifications before it. */
  phase: string;
  /** `recovering` lines for the failed turn (a set whose reply the kill swallowed and that did not take effect is sent again). */
  sets: number;
  /** The goal's status in the restarted daemon before anyone acted. */
  statusAtRestart: string;
  /** The set before the kill took effect but its rollout line was lost with the daemon. */
  lineLost: boolean;
  /** The other way round: the rollout kept the set's line, the goal store did not keep its status (the set did not survive). */
  statusLost: boolean;
  restartMs: number;
  /** From the kill to the runner's `connected`. */
  reconnectMs: number;
  ms: number;
  /** Where the iteration's time went (ms). */
  split: string;
  /** The runner's lines about the thread and the connection, from the failure on (shown when a set was sent twice). */
  story: string;
}

describe('fault 1: the daemon is SIGKILLed during a recovery', { timeout: 30 * 60_000 }, () => {
  let lab: DaemonLab;
  let user: UserClient;
  let runner: RunnerProcess;
  let dir: string;
  let statePath: string;
  const threads: StartedGoalThread[] = [];

  before(async () => {
    lab = await DaemonLab.start();
    // Its own user client, not the lab's: a new one after every restart.
    user = await UserClient.overSocket(lab.socket, { name: 'fault-user' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-fault1-'));
    statePath = path.join(dir, 'state.json');
    // The global limiter (one recovery per 10 s after a burst of 3) would hold most iterations'
    // recoveries past the kill window: one per 0.2 s here.
    runner = new RunnerProcess(['--codex-home', lab.home.dir, '--state', statePath, '--base-delay', '1', '--max-delay', '1', '--max-attempts', '50'], { CODEX_GOAL_RECOVERY_LIMITER_INTERVAL_S: '0.2' });
    await runner.connected();
  });

  after(async () => {
    await runner?.kill();
    await user?.close().catch(() => undefined);
    for (const t of threads) await t.cleanup();
    await lab?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(trackedAlive(), [], 'a process was left behind');
  });

  it(`exactly one recovery per failed turn, none lost, no crash, consistent state: ${ITERATIONS} kills (seed ${SEED})`, async (t) => {
    t.diagnostic(`seed ${SEED} (replay: CGR_FAULT_SEED=${SEED} npm run test:faults)`);
    const random = seededRandom(SEED);
    const records: IterationRecord[] = [];
    const started = Date.now();
    for (let i = 0; i < ITERATIONS; i++) {
      const strategy = random() < 0.5 ? 'uniform' : 'at-set';
      const delayMs = Math.round(strategy === 'uniform' ? random() * WINDOW_MS : random() * 20);
      const context = `iteration ${i} (seed ${SEED}, ${strategy} +${delayMs} ms)`;
      try {
        const record = await iteration(i, strategy, delayMs);
        records.push(record);
        t.diagnostic(`#${i} ${strategy} +${delayMs} ms → ${record.phase}; goal ${record.statusAtRestart} after the restart${record.lineLost ? ' (its activation line lost with the daemon)' : ''}${record.statusLost ? ' (an activation line kept, its status lost)' : ''}; sets ${record.sets}; restart ${record.restartMs} ms; runner reconnected ${record.reconnectMs} ms after the kill; ${record.ms} ms`);
        if (record.sets > 1) t.diagnostic(`   runner, this thread: ${record.story}`);
        if (process.env.CGR_FAULT_VERBOSE) t.diagnostic(`   ${record.split}`);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        throw new Error(`${context}: ${message}\n--- runner ---\n${runner.transcript().split('\n').slice(-40).join('\n')}`, { cause: error });
      }
    }
    const total = Date.now() - started;
    const phases = new Map<string, number>();
    for (const r of records) phases.set(r.phase, (phases.get(r.phase) ?? 0) + 1);
    t.diagnostic(`${records.length} iterations in ${(total / 1000).toFixed(1)} s (${Math.round(total / records.length)} ms each); kills landed: ${[...phases].map(([p, n]) => `${p} ×${n}`).join(', ')}`);
    t.diagnostic(`sets re-sent after a swallowed reply: ${records.filter((r) => r.sets > 1).length}; activation lines lost with the daemon: ${records.filter((r) => r.lineLost).length}; statuses lost with a line kept: ${records.filter((r) => r.statusLost).length}; reconnect after kill: median ${median(records.map((r) => r.reconnectMs))} ms`);
    // The suite as a whole: the runner survived every kill.
    assert.ok(runner.running, `the runner exited (${runner.exitCode ?? runner.signalCode})`);
    assert.deepEqual(runner.stderr, [], 'the runner wrote to stderr');
    const status = spawnSync(process.execPath, [CLI, 'status', '--state', statePath, '--json'], { encoding: 'utf8' });
    assert.equal(status.status, 0, status.stderr);
  });

  async function iteration(i: number, strategy: 'uniform' | 'at-set', delayMs: number): Promise<IterationRecord> {
    const t0 = Date.now();
    lab.mock.setMode('http500');
    const thread = await startThreadWithGoal(user, `killed daemon ${i}`, { timeoutMs: T });
    threads.push(thread);
    const id = thread.threadId;
    const mine = (type: string) => (d: RunnerDecision) => d.type === type && d.threadId === id;
    await runner.waitFor(mine('armed'), T, 'armed');
    const failed = await waitTurnCompleted(user, id, 'failed', T, thread.goalSetSeq);
    lab.mock.setMode('goalComplete');
    const failedTurnId = String(failed.params.turn.id);

    if (strategy === 'uniform') await sleep(Math.max(0, failed.at + delayMs - Date.now()));
    else {
      await runner.waitFor(mine('recovering'), T, 'recovering');
      await sleep(delayMs);
    }
    const pid = daemonPid(lab.home.dir);
    assert.ok(pid, 'no daemon to kill');
    process.kill(-pid, 'SIGKILL');
    const killedAt = Date.now();
    const lines = runner.decisions.length;
    const witness = user; // what the user's client had seen before the kill

    await user.close();
    const r0 = Date.now();
    await restartDaemon(lab.home.dir);
    const restartMs = Date.now() - r0;
    user = await UserClient.overSocket(lab.socket, { name: `fault-user-${i}` });
    // What survived the kill, before anyone acts (the thread is not loaded: nothing can change it;
    // the engine never sets the goal of a thread that is not loaded).
    const rolloutPath = String(thread.thread.path);
    const statusAtRestart = String((await user.request('thread/goal/get', { threadId: id }, T)).goal?.status);
    const sizeAtRestart = fs.statSync(rolloutPath).size;
    const keptBeforeKill = readRolloutGoals(rolloutPath);
    assert.ok(['blocked', 'active', 'complete'].includes(statusAtRestart), `the goal is ${statusAtRestart} after the restart`);
    // The user's client opens its thread again (the daemon loaded none after the kill).
    await user.request('thread/resume', { threadId: id }, T);

    // 3. a clear line for the fault, then a reconnect.
    const after = () => runner.decisions.slice(lines);
    const lost = await runner.waitFor((d) => after().includes(d) && d.type === 'connection' && d.state !== 'connected', T, 'a line saying the connection was lost');
    assert.ok(typeof lost.detail === 'string' && lost.detail.length > 0, 'the connection line says nothing');
    const back = await runner.waitFor((d) => after().includes(d) && d.type === 'connection' && d.state === 'connected', T, 'the reconnect');

    // 2. no pending recovery lost: the goal ends complete.
    const resumedAt = Date.now();
    await waitGoal(id, 'complete');
    const completeAt = Date.now();

    // 4. the persisted state: poll until the runner saved what it saw (a save may land between
    // a goal event and the state the engine derives from it: the next one carries both).
    const saved = await waitSaved(id, (w) => w.goal?.status === 'complete' && w.state.kind === 'complete' && w.pending === null && w.recovered.includes(failedTurnId));
    assert.equal(saved.recovered.filter((x) => x === failedTurnId).length, 1);
    assert.equal(saved.history.filter((h) => h.outcome === 'recovered' && h.failedTurnId === failedTurnId).length, 1, `recovery not recorded exactly once: ${JSON.stringify(saved.history)}`);
    assert.equal(saved.state.kind, 'complete');
    const savedAt = Date.now();

    // 1. exactly one effective recovery of the one failed turn, from the daemon's record.
    const turns = (await user.request('thread/turns/list', { threadId: id }, T)).data as { id: string; status: string }[];
    const failedTurns = turns.filter((x) => x.status === 'failed').map((x) => x.id);
    assert.deepEqual(failedTurns, [failedTurnId], `failed turns: ${JSON.stringify(turns)}`);
    const goals = readRolloutGoals(rolloutPath);
    assert.deepEqual(goals.unreadable, [], 'the rollout has a line that is not JSON: the oracle cannot read it');
    assert.equal(goals.user.length, 1, 'the user set the goal once');
    const setBeforeKill = statusAtRestart !== 'blocked' ? 1 : 0;
    const afterRestart = goals.automatic.filter((a) => a.offset >= sizeAtRestart);
    assert.equal(setBeforeKill + afterRestart.length, 1,
      `effective recoveries: ${setBeforeKill} before the kill (goal ${statusAtRestart} at the restart) + ${afterRestart.length} after it; rollout activations ${JSON.stringify(goals.automatic)}; turns ${JSON.stringify(turns)}`);
    for (const a of goals.automatic) assert.equal(a.afterTurn, failedTurnId, 'an activation does not follow the failed turn');

    return {
      i,
      strategy,
      delayMs,
      // Now that every line the runner wrote before the kill has been read.
      phase: phaseAt(killedAt, id, failed.at, witness),
      sets: runner.decisions.filter((d) => d.type === 'recovering' && d.threadId === id && d.failedTurnId === failedTurnId).length,
      statusAtRestart,
      lineLost: setBeforeKill === 1 && keptBeforeKill.automatic.length === 0,
      statusLost: setBeforeKill === 0 && keptBeforeKill.automatic.length > 0,
      restartMs,
      reconnectMs: Date.parse(back.ts) - killedAt,
      ms: Date.now() - t0,
      split: `goal→failed ${failed.at - t0}, failed→kill ${killedAt - failed.at}, restart ${restartMs}, resume→complete ${completeAt - resumedAt}, →saved ${savedAt - completeAt}, checks ${Date.now() - savedAt}`,
      story: runner.decisions
        .filter((d) => Date.parse(d.ts) >= failed.at - 50 && (d.threadId === id || d.type === 'connection'))
        .map((d) => `${d.ts.slice(17, 23)} ${d.type}${d.state ? ` ${d.state}` : ''}${d.reason ? ` (${d.reason})` : ''}${d.message ? ` (${d.message})` : ''}${d.how ? ` (${d.how})` : ''}${d.type === 'role' ? '' : ''}`)
        .join(' | ') + ` | kill at ${new Date(killedAt).toISOString().slice(17, 23)}`,
    };
  }

  /** The last step of the recovery the runner had printed (or the user had seen) before the kill. */
  function phaseAt(at: number, id: string, failedAt: number, client: UserClient): string {
    const before = runner.decisions.filter((d) => d.threadId === id && Date.parse(d.ts) <= at).map((d) => d.type);
    const recoveryStarted = client.notifications.some((n) => n.at <= at && n.at > failedAt && n.method === 'turn/started' && n.params?.threadId === id);
    const complete = client.notifications.some((n) => n.at <= at && n.method === 'thread/goal/updated' && n.params?.threadId === id && n.params?.goal?.status === 'complete');
    if (complete) return 'after the goal completed';
    if (recoveryStarted) return 'during the recovery turn';
    if (before.includes('recovered')) return 'set acknowledged, before turn/started';
    if (before.includes('recovering')) return 'set sent, no reply yet';
    if (before.includes('backoff')) return 'backoff';
    return 'before the runner saw the failure';
  }

  async function waitGoal(threadId: string, status: string): Promise<void> {
    const deadline = Date.now() + T;
    let last = '';
    while (Date.now() < deadline) {
      last = (await user.request('thread/goal/get', { threadId }, T)).goal?.status;
      if (last === status) return;
      await sleep(200);
    }
    throw new Error(`the goal is ${last}, not ${status}: a recovery was lost`);
  }

  async function waitSaved(threadId: string, ok: (w: SavedWatch) => boolean): Promise<SavedWatch> {
    const deadline = Date.now() + 20_000;
    let w: SavedWatch | undefined;
    while (Date.now() < deadline) {
      // The snapshot and its journal, read as a restarted runner would (absent at first).
      const stored = await readStateFile(statePath).catch(() => null);
      w = stored?.kind === 'state' ? stored.state.watches[threadId] as SavedWatch | undefined : undefined;
      if (w && ok(w)) return w;
      await sleep(100);
    }
    throw new Error(`the runner's saved state never became consistent: ${JSON.stringify(w)}`);
  }
});

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.floor(s.length / 2)]!;
}
