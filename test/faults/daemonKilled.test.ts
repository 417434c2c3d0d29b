// Fault 1: the Codex daemon is SIGKILLed at a random point of a recovery, and started again.
//
// One real daemon (@openai/codex 0.169.0, pinned), the project's mock model and ONE headless runner
// (dist/cli.js, --json) for every iteration; each iteration has its own thread. An iteration: the
// user gives a thread a goal while the model answers HTTP 500; the turn fails and blocks the goal;
// the model is healthy again (its next answer completes the goal). Then the daemon's process group
// gets SIGKILL in one phase of the recovery, aimed (the same number of iterations per aim, order
// and jitter from a seeded PRNG) by the runner's lines, its state file and the daemon itself, not
// by luck:
//   - backoff:  between the `backoff` line and the prepare lead before the due time;
//   - prepare:  as soon as the write-ahead intent is in the runner's state file (the reads and
//               checks done, the set held for its due time, up to 200 ms later);
//   - set:      the set sent, its reply not read: once the intent is on disk the daemon's process
//               group is stopped (SIGSTOP), so the set the runner sends at its due time cannot be
//               read or answered; the kill follows the runner's `recovering` line (printed once
//               the set is on the wire);
//   - reply:    0–20 ms after the runner's `recovered` line (it read the set's reply);
//   - turn:     0–200 ms after the user's client sees the recovery turn start.
// Where each kill landed is then read from the record, not from the aim: the runner's lines in
// the order its engine decided them (a `recovered` "thread/goal/set accepted" before the lost
// connection: after the reply; a lost-reply warning: set sent, no reply; neither: before the set,
// split at the prepare lead before the due time) and the user's notifications before the kill (a
// recovery turn started, the goal complete). The counts per phase are printed and each of the
// phases "backoff", "prepare", "set sent, no reply yet" and "after the reply" must be hit at least
// MIN_HITS times per run. The daemon is started again with `codex app-server daemon restart`.
// The user's client reconnects and resumes its thread (as a client does after a daemon restart:
// after SIGKILL the daemon loads no thread by itself, measured). The engine never loads a thread
// on its own (only "Retry now", a person's click, does: test/integration/retryUnloaded.test.ts).
//
// Invariants, checked after every iteration:
//  1. at most (here: exactly) one effective recovery per failed turn, from the daemon's own
//     records (test/support/daemonJudge.ts assertOneRecoveryAcrossKill). Before the kill: the
//     goal's status as the restarted daemon reports it before any client acts (the goal store
//     commits at once: active or complete there means a set before the kill took effect; nothing
//     but the engine sets this goal active). After the restart: the rollout's automatic
//     activations past the size it had at the restart (every set there is written, no kill
//     follows; test/support/rolloutGoals.ts says why the rollout and not thread/turns/list).
//     Their sum must be 1, and the thread must have exactly one failed turn.
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
// The shipped 60 s resync and prepare lead: every change the engine makes, a goal's completion
// included, is saved before it is shown or announced (durable before announced), so invariant 4
// does not wait for a resync to find the state file consistent. One tuning value differs, and
// only here: the global limiter refills one slot per 0.2 s (CODEX_GOAL_RECOVERY_LIMITER_INTERVAL_S)
// instead of one per 5 s. The limiter is not what this test is about (its own tests are in
// test/unit and the transport property), and with one recovery per iteration, two when a kill
// swallowed a set, the shipped interval would make most iterations wait for a slot; it stays on
// (burst 3, every set takes a slot). --base-delay 1 (public flag): the recovery is due 0.5–1 s
// after the failure, room for the backoff aim; --max-attempts 50: no iteration gives up.
//
// Replay a failure with CGR_FAULT_SEED=<seed printed below>; CGR_FAULT_ITERATIONS (default 20).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { sleep, trackedAlive } from '../../src/demo/codexProcesses';
import { daemonPid, restartDaemon } from '../../src/demo/managedDaemon';
import { startThreadWithGoal, waitTurnCompleted, type StartedGoalThread } from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import {
  PREPARE_LEAD_MS,
  RunnerProcess,
  savedWatches,
  statusOfFile,
  type RunnerDecision,
} from '../support/runnerProcess';
import { DaemonLab } from '../support/daemonLab';
import { assertOneRecoveryAcrossKill, daemonRecord } from '../support/daemonJudge';
import { faultSeed, readRolloutGoals } from '../support/rolloutGoals';
import { readStateFile } from '../../src/store/jsonFileStore';
import { rng as seededRandom } from '../support/random';
import type { Json } from '../support/json';

const T = 60_000;
const SEED = faultSeed();
const ITERATIONS = Math.max(1, Number(process.env.CGR_FAULT_ITERATIONS ?? 20) || 20);
const AIMS = ['backoff', 'prepare', 'set', 'reply', 'turn'] as const;
type Aim = (typeof AIMS)[number];
/** Where a kill landed, from the record. */
const PHASES = [
  'before the runner saw the failure',
  'backoff',
  'prepare',
  'set sent, no reply yet',
  'set acknowledged, before turn/started',
  'during the recovery turn',
  'after the goal completed',
] as const;
type Phase = (typeof PHASES)[number];
/** The phases of a recovery every run must reach, and how often at least. */
const REQUIRED: Record<string, readonly Phase[]> = {
  backoff: ['backoff'],
  prepare: ['prepare'],
  'set sent, no reply yet': ['set sent, no reply yet'],
  'after the reply': ['set acknowledged, before turn/started', 'during the recovery turn', 'after the goal completed'],
};
/** Each aim gets ITERATIONS / 5 kills; half of them must land in its phase (2 in 20). */
const MIN_HITS = Math.max(1, Math.floor(ITERATIONS / AIMS.length / 2));

interface SavedWatch {
  pending: unknown;
  recovered: string[];
  history: { outcome: string; failedTurnId: string }[];
  goal: { status: string } | null;
  state: { kind: string };
}

interface IterationRecord {
  i: number;
  aim: Aim;
  /** The jitter drawn for the aim, 0..1. */
  jitter: number;
  /** Where the kill landed, from the runner's lines and the user's notifications before it. */
  phase: Phase;
  /**
   * `recovering` lines for the failed turn (a set whose reply the kill swallowed and that did not take effect is sent
   * again).
   */
  sets: number;
  /** The goal's status in the restarted daemon before anyone acted. */
  statusAtRestart: string;
  /** The set before the kill took effect but its rollout line was lost with the daemon. */
  lineLost: boolean;
  /**
   * The other way round: the rollout kept the set's line, the goal store did not keep its status (the set did not
   * survive).
   */
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
  let user: UserClient<Json>;
  let runner: RunnerProcess;
  let dir: string;
  let statePath: string;
  /** The current iteration's story so far (storyOf), for its failure's message. */
  let told = (): string => '';
  const threads: StartedGoalThread<Json>[] = [];

  before(async () => {
    lab = await DaemonLab.start();
    // Its own user client, not the lab's: a new one after every restart.
    user = await UserClient.overSocket<Json>(lab.socket, { name: 'fault-user' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-fault1-'));
    statePath = path.join(dir, 'state.json');
    // The global limiter (one recovery per 5 s after a burst of 3) would hold most iterations'
    // recoveries past the kill window: one per 0.2 s here.
    runner = new RunnerProcess(
      [
        '--codex-home',
        lab.home.dir,
        '--state',
        statePath,
        '--base-delay',
        '1',
        '--max-delay',
        '1',
        '--max-attempts',
        '50',
      ],
      { CODEX_GOAL_RECOVERY_LIMITER_INTERVAL_S: '0.2' },
    );
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
    const aims: Aim[] = [];
    for (let i = 0; i < ITERATIONS; i++) aims.push(AIMS[i % AIMS.length]);
    for (let i = aims.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [aims[i], aims[j]] = [aims[j], aims[i]];
    }
    const records: IterationRecord[] = [];
    const started = Date.now();
    for (let i = 0; i < ITERATIONS; i++) {
      const aim = aims[i];
      const jitter = random();
      const context = `iteration ${i} (seed ${SEED}, aimed at ${aim}, jitter ${jitter.toFixed(3)})`;
      try {
        const record = await iteration(i, aim, jitter);
        records.push(record);
        t.diagnostic(
          `#${i} aimed ${aim} → ${record.phase}; goal ${record.statusAtRestart} after the restart${record.lineLost ? ' (its activation line lost with the daemon)' : ''}${record.statusLost ? ' (an activation line kept, its status lost)' : ''}; sets ${record.sets}; restart ${record.restartMs} ms; runner reconnected ${record.reconnectMs} ms after the kill; ${record.ms} ms`,
        );
        if (record.sets > 1) t.diagnostic(`   runner, this thread: ${record.story}`);
        if (process.env.CGR_FAULT_VERBOSE) t.diagnostic(`   ${record.split}`);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        throw new Error(
          `${context}: ${told()}\n${message}\n--- runner ---\n${runner.transcript().split('\n').slice(-40).join('\n')}`,
          { cause: error },
        );
      }
    }
    const total = Date.now() - started;
    const phases = new Map<string, number>(PHASES.map((p) => [p, 0]));
    for (const r of records) phases.set(r.phase, (phases.get(r.phase) ?? 0) + 1);
    t.diagnostic(
      `${records.length} iterations in ${(total / 1000).toFixed(1)} s (${Math.round(total / records.length)} ms each); kills landed: ${[...phases].map(([p, n]) => `${p} ×${n}`).join(', ')}`,
    );
    const reached = Object.entries(REQUIRED).map(
      ([name, of]) => [name, records.filter((r) => of.includes(r.phase)).length] as const,
    );
    t.diagnostic(
      `required phases (at least ${MIN_HITS} each): ${reached.map(([name, n]) => `${name} ×${n}`).join(', ')}`,
    );
    t.diagnostic(
      `sets re-sent after a swallowed reply: ${records.filter((r) => r.sets > 1).length}; activation lines lost with the daemon: ${records.filter((r) => r.lineLost).length}; statuses lost with a line kept: ${records.filter((r) => r.statusLost).length}; reconnect after kill: median ${median(records.map((r) => r.reconnectMs))} ms`,
    );
    // The suite as a whole: the runner survived every kill.
    assert.ok(runner.running, `the runner exited (${runner.exitCode ?? runner.signalCode})`);
    assert.deepEqual(runner.stderr, [], 'the runner wrote to stderr');
    const status = statusOfFile(statePath, ['--codex-home', lab.home.dir]);
    assert.equal(status.status, 0, status.stderr);
    // The kills reached every phase of a recovery, each often enough.
    for (const [name, n] of reached)
      assert.ok(
        n >= MIN_HITS,
        `only ${n} kill(s) landed in the phase "${name}" (at least ${MIN_HITS} required; seed ${SEED}): ${records.map((r) => `#${r.i} ${r.aim}→${r.phase}`).join(', ')}`,
      );
  });

  async function iteration(i: number, aim: Aim, jitter: number): Promise<IterationRecord> {
    const t0 = Date.now();
    told = () => '';
    lab.mock.setMode('http500');
    const thread = await startThreadWithGoal(user, `killed daemon ${i}`, { timeoutMs: T });
    threads.push(thread);
    const id = thread.threadId;
    const mine = (type: string) => (d: RunnerDecision) => d.type === type && d.threadId === id;
    await runner.waitFor(mine('armed'), T, 'armed');
    const failed = await waitTurnCompleted(user, id, 'failed', T, thread.goalSetSeq);
    lab.mock.setMode('goalComplete');
    const failedTurnId = String(failed.params.turn.id);
    told = () => storyOf(id, failed.at, null);

    const pid = daemonPid(lab.home.dir);
    assert.ok(pid, 'no daemon to kill');
    const rolloutPath = String(thread.thread.path);
    // Aim the kill.
    const backoff = await runner.waitFor((d) => mine('backoff')(d) && d.failedTurnId === failedTurnId, T, 'backoff');
    const due = Number(backoff.dueAt);
    let stopped = false;
    if (aim === 'backoff') {
      const window = Math.max(0, due - PREPARE_LEAD_MS - 50 - Date.parse(backoff.ts));
      await sleep(Date.parse(backoff.ts) + jitter * window - Date.now());
    } else if (aim === 'prepare' || aim === 'set') {
      await intentOnDisk(id, failedTurnId, due);
      // Write-ahead, judged by the daemon: when the intent first shows on disk, the daemon has
      // not recorded the set (no automatic activation in its rollout, no goal made active).
      const early = readRolloutGoals(rolloutPath).automatic.filter((a) => a.afterTurn === failedTurnId);
      const active = user.notifications.filter(
        (n) =>
          n.seq > failed.seq &&
          n.method === 'thread/goal/updated' &&
          n.params?.threadId === id &&
          n.params?.goal?.status === 'active',
      );
      assert.ok(
        early.length === 0 && active.length === 0,
        `the daemon had the set (${early.length} activation line(s), ${active.length} goal/updated active) before its write-ahead intent was on disk`,
      );
      if (aim === 'set') {
        // Frozen: the set the runner sends at its due time is neither read nor answered.
        process.kill(-pid, 'SIGSTOP');
        stopped = true;
        await runner.waitFor(
          (d) => mine('recovering')(d) && d.failedTurnId === failedTurnId,
          T,
          'the set sent to the stopped daemon',
        );
        await sleep(jitter * 20);
      }
    } else if (aim === 'reply') {
      const recovered = await runner.waitFor(
        (d) => mine('recovered')(d) && d.failedTurnId === failedTurnId,
        T,
        'the set acknowledged',
      );
      await sleep(Date.parse(recovered.ts) + jitter * 20 - Date.now());
    } else {
      const turn = await user.waitFor((n) => n.method === 'turn/started' && n.params?.threadId === id, T, failed.seq);
      await sleep(turn.at + jitter * 200 - Date.now());
    }
    const lines = runner.decisions.length;
    process.kill(-pid, 'SIGKILL');
    const killedAt = Date.now();
    told = () => storyOf(id, failed.at, killedAt);
    if (stopped) {
      try {
        process.kill(-pid, 'SIGCONT'); // a killed group that was stopped: nothing is left to continue
      } catch {
        // gone already
      }
    }
    const witness = user; // what the user's client had seen before the kill

    await user.close();
    const r0 = Date.now();
    await restartDaemon(lab.home.dir);
    const restartMs = Date.now() - r0;
    user = await UserClient.overSocket<Json>(lab.socket, { name: `fault-user-${i}` });
    // What survived the kill, before anyone acts (the thread is not loaded: nothing can change it;
    // the engine never sets the goal of a thread that is not loaded).
    const statusAtRestart = String((await user.request('thread/goal/get', { threadId: id }, T)).goal?.status);
    const sizeAtRestart = fs.statSync(rolloutPath).size;
    const keptBeforeKill = readRolloutGoals(rolloutPath);
    assert.ok(
      ['blocked', 'active', 'complete'].includes(statusAtRestart),
      `the goal is ${statusAtRestart} after the restart`,
    );
    // The user's client opens its thread again (the daemon loaded none after the kill).
    await user.request('thread/resume', { threadId: id }, T);

    // 3. a clear line for the fault, then a reconnect.
    const after = () => runner.decisions.slice(lines);
    const lost = await runner.waitFor(
      (d) => after().includes(d) && d.type === 'connection' && d.state !== 'connected',
      T,
      'a line saying the connection was lost',
    );
    assert.ok(typeof lost.detail === 'string' && lost.detail.length > 0, 'the connection line says nothing');
    const back = await runner.waitFor(
      (d) => after().includes(d) && d.type === 'connection' && d.state === 'connected',
      T,
      'the reconnect',
    );

    // 2. no pending recovery lost: the goal ends complete.
    const resumedAt = Date.now();
    await waitGoal(id, 'complete');
    const completeAt = Date.now();

    // 4. the persisted state: poll until the runner saved what it saw (a save may land between
    // a goal event and the state the engine derives from it: the next one carries both).
    const saved = await waitSaved(
      id,
      (w) =>
        w.goal?.status === 'complete' &&
        w.state.kind === 'complete' &&
        w.pending === null &&
        w.recovered.includes(failedTurnId),
    );
    assert.equal(saved.recovered.filter((x) => x === failedTurnId).length, 1);
    assert.equal(
      saved.history.filter((h) => h.outcome === 'recovered' && h.failedTurnId === failedTurnId).length,
      1,
      `recovery not recorded exactly once: ${JSON.stringify(saved.history)}`,
    );
    assert.equal(saved.state.kind, 'complete');
    const savedAt = Date.now();

    // 1. exactly one effective recovery of the one failed turn, from the daemon's record
    //    (test/support/daemonJudge.ts: the goal's status at the restart, the rollout after it).
    const record = await daemonRecord(user, id, rolloutPath);
    assert.equal(record.rollout.user.length, 1, 'the user set the goal once');
    assertOneRecoveryAcrossKill(record, failedTurnId, statusAtRestart, sizeAtRestart);
    const setBeforeKill = statusAtRestart !== 'blocked' ? 1 : 0;

    return {
      i,
      aim,
      jitter,
      phase: phaseOf(lines, killedAt, id, failedTurnId, due, witness),
      sets: runner.decisions.filter(
        (d) => d.type === 'recovering' && d.threadId === id && d.failedTurnId === failedTurnId,
      ).length,
      statusAtRestart,
      lineLost: setBeforeKill === 1 && keptBeforeKill.automatic.length === 0,
      statusLost: setBeforeKill === 0 && keptBeforeKill.automatic.length > 0,
      restartMs,
      reconnectMs: Date.parse(back.ts) - killedAt,
      ms: Date.now() - t0,
      split: `goal→failed ${failed.at - t0}, failed→kill ${killedAt - failed.at}, restart ${restartMs}, resume→complete ${completeAt - resumedAt}, →saved ${savedAt - completeAt}, checks ${Date.now() - savedAt}`,
      story: told(),
    };
  }

  /**
   * The runner's lines about the thread, and those about no thread (connection, role, warnings),
   * from its failure on, then the kill, then what the user's client (subscribed: it hears every
   * event) was told about the thread since the restart: a failure's message starts with it.
   */
  function storyOf(id: string, from: number, killedAt: number | null): string {
    const clock = (ms: number) => new Date(ms).toISOString().slice(17, 23);
    const lines = runner.decisions
      .filter((d) => Date.parse(d.ts) >= from - 50 && (d.threadId === id || d.threadId === undefined))
      .map(
        (d) =>
          `${d.ts.slice(17, 23)} ${d.type}${d.state ? ` ${d.state}` : ''}${d.reason ? ` (${d.reason})` : ''}${d.message ? ` (${d.message})` : ''}${d.how ? ` (${d.how})` : ''}`,
      );
    if (killedAt === null) return lines.join(' | ');
    const events = user.notifications
      .filter((n) => n.params?.threadId === id)
      .map(
        (n) =>
          `${clock(n.at)} ${n.method}${n.params?.goal?.status ? `(${n.params.goal.status})` : ''}${n.params?.status?.type ? `(${n.params.status.type})` : ''}`,
      );
    return `${lines.join(' | ')} | kill at ${clock(killedAt)} || the user's client since the restart: ${events.join(' | ')}`;
  }

  /**
   * Where the kill landed, from the record: the runner's lines up to the one saying its connection
   * was lost (the engine emits them in the order it decided, and this runner outlived the kill),
   * and what the user's client had seen before the kill.
   */
  function phaseOf(
    mark: number,
    at: number,
    id: string,
    failedTurnId: string,
    due: number,
    client: UserClient<Json>,
  ): Phase {
    const lostAt = runner.decisions.findIndex(
      (d, k) => k >= mark && d.type === 'connection' && d.state !== 'connected',
    );
    const before = runner.decisions.slice(0, lostAt < 0 ? undefined : lostAt).filter((d) => d.threadId === id);
    const acknowledged = before.some(
      (d) => d.type === 'recovered' && d.failedTurnId === failedTurnId && d.how === 'thread/goal/set accepted',
    );
    const lostReply = before.some(
      (d) => d.type === 'warning' && /outcome is read back after reconnecting/.test(String(d.message)),
    );
    const sent = before.some((d) => d.type === 'recovering' && d.failedTurnId === failedTurnId);
    const recoveryStarted = client.notifications.some(
      (n) =>
        n.at <= at && n.method === 'turn/started' && n.params?.threadId === id && n.params?.turn?.id !== failedTurnId,
    );
    const complete = client.notifications.some(
      (n) =>
        n.at <= at &&
        n.method === 'thread/goal/updated' &&
        n.params?.threadId === id &&
        n.params?.goal?.status === 'complete',
    );
    if (acknowledged || recoveryStarted || complete) {
      if (complete) return 'after the goal completed';
      if (recoveryStarted) return 'during the recovery turn';
      return 'set acknowledged, before turn/started';
    }
    if (lostReply || sent) return 'set sent, no reply yet';
    if (!before.some((d) => d.type === 'backoff')) return 'before the runner saw the failure';
    return at >= due - PREPARE_LEAD_MS ? 'prepare' : 'backoff';
  }

  /** Waits until the runner's state file holds the write-ahead intent for the failed turn. */
  async function intentOnDisk(threadId: string, failedTurnId: string, due: number): Promise<void> {
    await sleep(due - PREPARE_LEAD_MS - 100 - Date.now());
    const deadline = Date.now() + T;
    for (;;) {
      const w = (
        (await savedWatches(statePath).catch(() => ({}))) as Record<
          string,
          { pending: { failedTurnId: string } | null; recovered: string[] }
        >
      )[threadId];
      if (w?.pending?.failedTurnId === failedTurnId) return;
      // Past it already (this process woke too late, as on a loaded machine): the kill lands
      // where it lands, and the record says where (the aim is counted by the phase it reached).
      if (w?.recovered.includes(failedTurnId)) return;
      if (Date.now() > deadline)
        throw new Error(`the intent for ${failedTurnId} never reached the state file: ${JSON.stringify(w)}`);
      await sleep(3);
    }
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
      w = stored?.kind === 'state' ? stored.state.watches[threadId] : undefined;
      if (w && ok(w)) return w;
      await sleep(100);
    }
    throw new Error(`the runner's saved state never became consistent: ${JSON.stringify(w)}`);
  }
});

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[Math.floor(s.length / 2)];
}
