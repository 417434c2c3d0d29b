// The headless runner against the real Codex app-server daemon (@openai/codex, pinned) and the
// project's mock model, through the daemon's control socket. Each test gets its own CODEX_HOME,
// daemon, mock model and runner state, and cleans every process it started.
//
// Every runner here runs with the shipped resync (60 s): a 1 s resync saves the state every
// second and hid issue 8 (a decision announced, then lost with a crash). A promise about restarts
// is checked for both ways a runner ends: a crash (SIGKILL, nothing saved on the way out) and a
// clean stop (SIGINT, it saves). "Nothing else happened" is never a fixed sleep: the runner is
// settled and stopped cleanly (test/support/runnerProcess.ts settleAndStop: past every due time
// it announced, its state file shows each thread decided with nothing planned, then its stop
// waits for the work under way, its connect-time look included, and saves). The daemon is the
// judge: every "exactly one recovery per failed turn" and "no set" is counted from the daemon's
// own record (test/support/daemonJudge.ts: the rollout's automatic activations per failed turn,
// the turns, the goal), never from the runner's `recovering` lines alone (a second set on a goal
// that is already active starts no turn and the runner prints nothing for it). The runner's
// lines are checked too, as its own contract.
// Flags: --base-delay/--max-delay (public options) shorten the backoff so an outage fits in a
// test; each test that sets other values says why. No tuning variable is set: the shipped resync
// (60 s), limiter and prepare lead.
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startMockModel } from '../../src/demo/mockModel';
import { type MockModel } from '../../src/demo/mockModes';
import { codexBuilds, type CodexBuild } from '../../src/demo/codexBinary';
import { makeCodexHome, type CodexHome } from '../../src/demo/codexHome';
import { killAllTracked, sleep, trackedAlive } from '../../src/demo/codexProcesses';
import { controlSocketPath, daemonPid, restartDaemon, startDaemon, stopDaemon } from '../../src/demo/managedDaemon';
import {
  startThreadWithGoal,
  waitGoalStatus,
  waitTurnCompleted,
  type StartedGoalThread,
} from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import { RunnerProcess, settleAndStop, statusOfFile } from '../support/runnerProcess';
import {
  assertNoAutomaticSet,
  assertOneRecoveryPerFailedTurn,
  daemonRecord,
  type DaemonRecord,
} from '../support/daemonJudge';
import type { Json } from '../support/json';
import { poll } from '../support/wait';
import { readHead } from '../../src/store/snapshotHead';

const T = 60_000;
/**
 * "Not before the due time", to within what timers promise: the rollout's timestamps and the
 * runner's due times come from one clock in whole ms, and a Node timer counts from the event
 * loop's cached time, so it may fire a few ms early by the wall clock on a busy loop.
 */
const CLOCK_SLACK_MS = 25;

interface Env {
  mock: MockModel;
  home: CodexHome;
  user: UserClient<Json>;
  dir: string;
  state: string;
  runners: RunnerProcess[];
  threads: StartedGoalThread<Json>[];
}

let env: Env;

async function setUp(codex: CodexBuild): Promise<void> {
  const mock = await startMockModel();
  const home = await makeCodexHome(mock.url, '', { codex });
  await startDaemon(home.dir);
  const user = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: 'test-user' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-it-'));
  env = { mock, home, user, dir, state: path.join(dir, 'state.json'), runners: [], threads: [] };
}

async function tearDown(): Promise<void> {
  for (const r of env.runners) await r.kill();
  await env.user.close().catch(() => undefined);
  await stopDaemon(env.home.dir, { force: true });
  await env.home.cleanup();
  await env.mock.close();
  for (const t of env.threads) await t.cleanup();
  await killAllTracked();
  fs.rmSync(env.dir, { recursive: true, force: true });
  assert.deepEqual(trackedAlive(), [], 'a process was left behind');
}

function runner(extra: string[] = ['--base-delay', '0.5', '--max-delay', '2']): RunnerProcess {
  const r = new RunnerProcess(['--codex-home', env.home.dir, '--state', env.state, ...extra]);
  env.runners.push(r);
  return r;
}

async function goal(
  objective: string,
  opts: Parameters<typeof startThreadWithGoal>[2] = {},
): Promise<StartedGoalThread<Json>> {
  const t = await startThreadWithGoal(env.user, objective, { timeoutMs: T, ...opts });
  env.threads.push(t);
  return t;
}

/** How a runner is ended before it is started again: a crash, or Ctrl-C. */
type Ending = 'SIGKILL' | 'SIGINT';
const ENDINGS: readonly Ending[] = ['SIGKILL', 'SIGINT'];

async function end(r: RunnerProcess, how: Ending): Promise<void> {
  if (how === 'SIGKILL') await r.kill();
  else assert.equal(await r.stop(), 0, `the runner did not stop cleanly\n${r.transcript()}`);
}

interface SavedWatch {
  threadId: string;
  state: { kind: string; dueAt?: number };
  pending: unknown;
  recovered: string[];
  history: { outcome: string; failedTurnId: string }[];
  lastFailure: { turnId: string; dueAt: number | null } | null;
}

/** What the runner's state file holds for a thread, through its public reader (`status --json`). */
function saved(threadId: string): SavedWatch | undefined {
  const r = statusOfFile(env.state, ['--codex-home', env.home.dir]);
  assert.equal(r.status, 0, `status could not read the state file: ${r.stderr}`);
  assert.equal(r.stderr, '', 'status found a problem in the state file');
  return (JSON.parse(r.stdout) as { watches: SavedWatch[] }).watches.find((w) => w.threadId === threadId);
}

/**
 * After a runner stopped cleanly: its file records the failed turn as recovered exactly once,
 * with no intent pending and no recovery still planned.
 */
function assertSavedRecovered(threadId: string, failedTurnId: string): SavedWatch {
  const w = saved(threadId);
  assert.ok(w, 'the stopped runner saved no record of the thread');
  assert.equal(w.pending, null, `an intent is still pending: ${JSON.stringify(w)}`);
  assert.deepEqual(w.recovered, [failedTurnId], `recovered: ${JSON.stringify(w)}`);
  assert.equal(
    w.history.filter((h) => h.outcome === 'recovered' && h.failedTurnId === failedTurnId).length,
    1,
    `the recovery is not recorded exactly once: ${JSON.stringify(w.history)}`,
  );
  assert.ok(
    !['backoff', 'recovering', 'usageLimited'].includes(w.state.kind),
    `a recovery is still planned: ${JSON.stringify(w.state)}`,
  );
  return w;
}

/** The daemon's record of a thread the user gave a goal once (test/support/daemonJudge.ts). */
async function record(t: StartedGoalThread<Json>): Promise<DaemonRecord> {
  const r = await daemonRecord(env.user, t.threadId, String(t.thread.path));
  assert.equal(r.rollout.user.length, 1, 'the user set the goal once');
  return r;
}

/**
 * The daemon's record of the thread: the failed turns given, then one completed; exactly one
 * automatic activation right after each failed turn and none elsewhere; the goal complete.
 * Returns the activation after the last failed turn.
 */
async function assertRecoveredOnceByDaemon(
  t: StartedGoalThread<Json>,
  ...failedTurnIds: string[]
): Promise<{ at: number }> {
  const r = await record(t);
  assert.deepEqual(
    r.turns.map((x) => x.status).sort(),
    [...failedTurnIds.map(() => 'failed'), 'completed'].sort(),
    `turns: ${JSON.stringify(r.turns)}`,
  );
  assert.deepEqual([...r.failed].sort(), [...failedTurnIds].sort(), 'the failed turns');
  assertOneRecoveryPerFailedTurn(r);
  assert.equal(r.goalStatus, 'complete');
  return r.automaticAfter.get(failedTurnIds.at(-1)!)![0];
}

for (const codex of codexBuilds())
  describe(`runner against the real daemon (control socket), codex ${codex.version}`, () => {
    beforeEach(() => setUp(codex));
    afterEach(tearDown);
    it(
      'recovers an outage of 3 failed turns after 3 backoffs, with exactly one set per failed turn',
      { timeout: 2 * T },
      async () => {
        const r = runner();
        await r.connected();
        env.mock.setMode('http500');
        const t = await goal('outage of three turns');
        await r.waitFor((d) => d.type === 'backoff' && d.attempt === 3, T, 'the third backoff');
        env.mock.setMode('goalComplete');
        const complete = await waitGoalStatus(env.user, t.threadId, 'complete', T, t.goalSetSeq);
        await waitTurnCompleted(env.user, t.threadId, 'completed', T, complete.seq);
        await r.waitFor((d) => d.type === 'recovered' && d.attempt === 3, T, 'the third recovery');
        // Nothing more: settled (the goal complete on disk, nothing planned) and stopped cleanly.
        await settleAndStop(r, env.state, { [t.threadId]: 'complete' });
        // The daemon's record: three failed turns, each re-activated exactly once, none twice.
        const failedTurnIds = r.of('backoff', t.threadId).map((d) => String(d.failedTurnId));
        await assertRecoveredOnceByDaemon(t, ...failedTurnIds);
        // The runner's own lines (its contract), in addition.
        const recovering = r.of('recovering', t.threadId);
        assert.deepEqual(
          recovering.map((d) => d.attempt),
          [1, 2, 3],
        );
        assert.equal(new Set(recovering.map((d) => d.failedTurnId)).size, 3, 'two sets for one failed turn');
        assert.deepEqual(
          r.of('backoff', t.threadId).map((d) => d.attempt),
          [1, 2, 3],
        );
        assert.equal(r.of('recovering').length, 3, 'recovered a completed goal');
        const status = statusOfFile(env.state, ['--codex-home', env.home.dir], false);
        assert.equal(status.status, 0, status.stderr);
        assert.match(status.stdout, new RegExp(`${t.threadId}\\s+complete`));
      },
    );

    // --base-delay 4: the backoff (2–4 s) outlasts the user's pause request and its disarm line.
    it('a user pause during backoff stops the recovery', { timeout: T }, async () => {
      const r = runner(['--base-delay', '4', '--max-delay', '4']);
      await r.connected();
      env.mock.setMode('http500');
      const t = await goal('paused by the user');
      const backoff = await r.waitFor((d) => d.type === 'backoff', T, 'backoff');
      await env.user.request('thread/goal/set', { threadId: t.threadId, status: 'paused', origin: 'user' }, T);
      await r.waitFor((d) => d.type === 'disarmed' && d.threadId === t.threadId, T, 'disarmed');
      // Past the due time the backoff announced, the runner has it as the user's intent, then stops.
      await settleAndStop(r, env.state, { [t.threadId]: ['userIntent', 'paused'] }, { dueAt: Number(backoff.dueAt) });
      const d = await record(t);
      assertNoAutomaticSet(d, 'a set on a goal the user paused');
      assert.equal(d.goalStatus, 'paused');
      assert.equal(r.of('recovering').length, 0, 'a recovering line for a goal the user paused');
    });

    it(
      'never touches a model-set block (even if its turn then fails), a complete goal or a budget-limited goal',
      { timeout: 2 * T },
      async () => {
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
        // Each decided on disk (and nothing planned), then stopped: any recovery it wrongly
        // planned would have been waited out and sent by then.
        await settleAndStop(r, env.state, {
          [blocked.threadId]: 'modelBlocked',
          [blockedThenFailed.threadId]: 'modelBlocked',
          [complete.threadId]: 'complete',
          [budget.threadId]: 'budgetLimited',
        });
        for (const [t, status] of [
          [blocked, 'blocked'],
          [blockedThenFailed, 'blocked'],
          [complete, 'complete'],
          [budget, 'budgetLimited'],
        ] as const) {
          const d = await record(t);
          assertNoAutomaticSet(d, `a set on a goal that is ${status}`);
          assert.equal(d.goalStatus, status);
        }
        assert.equal(r.of('recovering').length, 0, `touched a goal it must leave alone\n${r.transcript()}`);
        const status = statusOfFile(env.state, ['--codex-home', env.home.dir], false);
        assert.match(status.stdout, /blocked by the model/);
        assert.match(status.stdout, /budget limit reached/);
      },
    );

    it(
      "never answers a pending approval nor competes with it; the user's accept still runs the command",
      { timeout: 2 * T },
      async () => {
        const sandboxLeftover = `/tmp/codex-bwrap-synthetic-mount-targets-${process.getuid?.() ?? 0}`;
        const hadLeftover = fs.existsSync(sandboxLeftover);
        const r = runner();
        await r.connected();
        const file = path.join(env.dir, 'approved.txt');
        env.mock.setMode('slow', { delayMs: 2_000 });
        const t = await goal('needs an approval', { approvalPolicy: 'untrusted', sandbox: 'workspace-write' });
        await r.waitFor((d) => d.type === 'armed' && d.threadId === t.threadId, T, 'armed');
        env.mock.setMode('approval', { file });
        const request = await env.user.waitForServerRequest(
          (m) => m.method === 'item/commandExecution/requestApproval',
          T,
        );
        // The runner, subscribed to the thread, received the same request and left it alone.
        await r.waitFor(
          (d) => d.type === 'skipped' && d.reason === 'waiting for the user',
          T,
          'the runner seeing the approval',
        );
        // No fixed wait: the runner, settled on the approval, is stopped cleanly while it is pending
        // (its stop waits for its work under way; what it sent went out before its connection
        // closed). The request must still be the user's: the daemon has not resolved it.
        await settleAndStop(r, env.state, { [t.threadId]: 'waitingApproval' });
        assert.equal(fs.existsSync(file), false, 'the command ran before the user answered: someone accepted it');
        // (The daemon gives every connection the same request id, measured: docs/daemon-behaviour.md (e).)
        const resolved = (since: number) =>
          env.user.notifications.filter(
            (n) => n.seq > since && n.method === 'serverRequest/resolved' && n.params?.threadId === t.threadId,
          );
        assert.deepEqual(resolved(0), [], 'the approval was resolved before the user answered it');
        env.mock.setMode('goalComplete');
        const answeredAt = env.user.lastSeq;
        env.user.respond(request.id!, { decision: 'accept' });
        await waitGoalStatus(env.user, t.threadId, 'complete', T, t.goalSetSeq);
        assert.ok(fs.existsSync(file), "the user's accept did not run the command: someone declined first");
        assert.equal(
          resolved(answeredAt).length,
          resolved(0).length,
          'the approval was resolved before the user answered it',
        );
        assert.ok(
          resolved(answeredAt).some((n) => String(n.params?.requestId) === String(request.id)),
          "the user's answer resolved no request",
        );
        // The daemon's record: no automatic set on the thread.
        const d = await record(t);
        assertNoAutomaticSet(d, 'competed with a pending approval');
        assert.equal(r.of('recovering').length, 0, 'competed with a pending approval');
        if (!hadLeftover) fs.rmSync(sandboxLeftover, { recursive: true, force: true });
      },
    );

    // The daemon restarted during a backoff, both ways: `daemon restart` (SIGTERM, drains, loads
    // the threads again by itself) and a crash (SIGKILL to its process group, then `daemon
    // restart`: it loads no thread, measured; the user's client opens its thread again, as a real
    // one does after reconnecting, and the engine never loads one on its own).
    for (const how of ['daemon restart', 'SIGKILL + daemon restart'] as const) {
      it(`a daemon restart during backoff ends in exactly one recovery (${how})`, { timeout: 2 * T }, async () => {
        const r = runner(['--base-delay', '6', '--max-delay', '6']);
        await r.connected();
        env.mock.setMode('http500');
        const t = await goal(`daemon restarts during backoff (${how})`);
        const backoff = await r.waitFor((d) => d.type === 'backoff' && d.threadId === t.threadId, T, 'backoff');
        const failedTurnId = String(backoff.failedTurnId);
        env.mock.setMode('goalComplete');
        await env.user.close();
        if (how === 'SIGKILL + daemon restart') {
          const pid = daemonPid(env.home.dir);
          assert.ok(pid, 'no daemon to kill');
          process.kill(-pid, 'SIGKILL');
        }
        await restartDaemon(env.home.dir);
        await r.waitFor(
          (d) => d.type === 'connection' && d.state === 'connected' && r.of('connection').indexOf(d) > 0,
          T,
          'reconnect',
        );
        env.user = await UserClient.overSocket<Json>(controlSocketPath(env.home.dir), { name: 'test-user-2' });
        if (how === 'SIGKILL + daemon restart') await env.user.request('thread/resume', { threadId: t.threadId }, T);
        const recovered = await r.waitFor(
          (d) => d.type === 'recovered' && d.threadId === t.threadId,
          T,
          'the recovery',
        );
        assert.ok(Date.parse(recovered.ts) >= Number(backoff.dueAt) - CLOCK_SLACK_MS, 'recovered before the due time');
        const g = await env.user.request('thread/goal/get', { threadId: t.threadId }, T);
        if (g.goal.status !== 'complete') await waitGoalStatus(env.user, t.threadId, 'complete', T);
        // Nothing more: the stopped runner has no recovery planned, and the daemon saw exactly one.
        await settleAndStop(r, env.state, { [t.threadId]: 'complete' });
        assert.equal(r.of('recovering', t.threadId).length, 1, 'more than one recovery');
        assertSavedRecovered(t.threadId, failedTurnId);
        await assertRecoveredOnceByDaemon(t, failedTurnId);
      });
    }

    // Issue 8, exactly as reported: a goal armed, its turn fails (HTTP 500), the runner announces
    // `backoff` (due in 1.5–3 s with --base-delay 3) and is SIGKILLed 600 ms later, then started
    // again on the same --state. The restarted runner never saw the goal active, so only what the
    // first one saved lets it recover the goal (by its rules, a goal it finds already blocked and has
    // no record of is never adopted). With SIGINT instead of SIGKILL the first runner saves on its
    // way out: the same steps must end the same way.
    for (const how of ENDINGS) {
      it(
        `issue 8: a runner ${how === 'SIGKILL' ? 'SIGKILLed' : 'stopped (SIGINT)'} 600 ms into a backoff and restarted on the same --state recovers the failed turn exactly once, not before its due time`,
        { timeout: 2 * T },
        async () => {
          const args = ['--base-delay', '3', '--max-delay', '3'];
          const first = runner(args);
          await first.connected();
          env.mock.setMode('http500');
          const t = await goal(`issue 8 (${how})`);
          await first.waitFor((d) => d.type === 'armed' && d.threadId === t.threadId, T, 'armed');
          const failed = await waitTurnCompleted(env.user, t.threadId, 'failed', T, t.goalSetSeq);
          const failedTurnId = String(failed.params.turn.id);
          const backoff = await first.waitFor((d) => d.type === 'backoff' && d.threadId === t.threadId, T, 'backoff');
          assert.equal(backoff.failedTurnId, failedTurnId);
          const due = Number(backoff.dueAt);
          env.mock.setMode('goalComplete');
          // The fault itself is timed: 600 ms after the announcement.
          await sleep(Math.max(0, Date.parse(backoff.ts) + 600 - Date.now()));
          assert.equal(first.of('recovering', t.threadId).length, 0, 'the recovery was due already');
          await end(first, how);
          const endedAt = Date.now();
          assert.ok(endedAt < due, `the runner ended ${endedAt - due} ms after the due time: not during the backoff`);
          const left = saved(t.threadId); // what the first runner left on disk (shown if the recovery is lost)

          const second = runner(args);
          await second.connected();
          // The daemon's record: the goal becomes active again and completes. Given until well past
          // the due time (the restarted runner may come up after it: then it acts at once).
          const deadline = Math.max(due, Date.now()) + 20_000;
          const complete = await waitGoalStatus(
            env.user,
            t.threadId,
            'complete',
            deadline - Date.now(),
            failed.seq,
          ).catch(() => null);
          const status = (await env.user.request('thread/goal/get', { threadId: t.threadId }, T)).goal.status;
          assert.ok(
            complete,
            `the restarted runner never recovered the goal: it is still ${status} ${Math.round((Date.now() - due) / 1000)} s after its announced due time; what the ${how === 'SIGKILL' ? 'killed' : 'stopped'} runner had saved for the thread: ${JSON.stringify(left) ?? 'nothing'}; the restarted runner has it as ${JSON.stringify(saved(t.threadId)?.state) ?? 'nothing'} on disk\n--- restarted runner ---\n${second.transcript()}`,
          );
          await waitTurnCompleted(env.user, t.threadId, 'completed', T, complete.seq);
          await settleAndStop(second, env.state, { [t.threadId]: 'complete' });

          const activation = await assertRecoveredOnceByDaemon(t, failedTurnId);
          assert.equal(first.of('recovering', t.threadId).length, 0);
          assert.equal(
            second.of('recovering', t.threadId).length,
            1,
            `the restarted runner sent ${second.of('recovering', t.threadId).length} sets`,
          );
          // It took the thread over from the file: it never saw the goal active, so it never armed it.
          assert.equal(second.of('armed', t.threadId).length, 0, 'the restarted runner armed the thread itself');
          // The due time the first runner announced is the one it saved, and nothing acted before it.
          assert.equal(
            left?.lastFailure?.dueAt,
            due,
            `the announced due time was not on disk when the runner ended: ${JSON.stringify(left)}`,
          );
          const set = second.of('recovering', t.threadId)[0];
          assert.ok(
            Date.parse(set.ts) >= due - CLOCK_SLACK_MS,
            `the restarted runner sent its set ${due - Date.parse(set.ts)} ms before the due time`,
          );
          assert.ok(
            activation.at >= due - CLOCK_SLACK_MS,
            `the daemon recorded the activation ${due - activation.at} ms before the due time`,
          );
          assertSavedRecovered(t.threadId, failedTurnId);
        },
      );
    }

    // A crash right after a takeover was written: the leader is SIGKILLed during a backoff; the
    // follower takes over, and its first write as leader (its load folds the dead leader's journal
    // into a snapshot stamped with its new term) is all it does: it is SIGKILLed the moment that
    // term is on disk, long before the recovery is due, so before it acted. The next runner on the
    // file must take a newer term (else its saves would be refused), then recover the failed turn
    // exactly once, not before its due time: the takeover neither lost nor repeated a recovery.
    it(
      'a runner SIGKILLed right after its takeover wrote its term, before it acted: the next one recovers the failed turn exactly once',
      { timeout: 2 * T },
      async () => {
        const args = ['--base-delay', '20', '--max-delay', '20']; // due 10–20 s after the failure (a takeover: within 5 s)
        const termOnDisk = (): number => {
          const text = fs.existsSync(env.state) ? fs.readFileSync(env.state, 'utf8') : '';
          return readHead(text).term?.n ?? 0;
        };
        const leader = runner(args);
        await leader.connected();
        const follower = runner(args);
        await follower.waitFor((d) => d.type === 'role' && d.role === 'follower', T, 'the follower');
        env.mock.setMode('http500');
        const t = await goal('a takeover cut short');
        const failed = await waitTurnCompleted(env.user, t.threadId, 'failed', T, t.goalSetSeq);
        const failedTurnId = String(failed.params.turn.id);
        const backoff = await leader.waitFor((d) => d.type === 'backoff' && d.threadId === t.threadId, T, 'backoff');
        const due = Number(backoff.dueAt);
        env.mock.setMode('goalComplete');
        const leaderTerm = termOnDisk();
        assert.ok(leaderTerm > 0, 'the leader stamped no term into the state file');
        await leader.kill();
        assert.ok(
          await poll(() => termOnDisk() > leaderTerm, T, 1),
          `the follower never wrote its takeover\n${follower.transcript()}`,
        );
        await follower.kill();
        const takeoverTerm = termOnDisk();
        assert.ok(Date.now() < due, `the takeover came ${Date.now() - due} ms after the due time: it may have acted`);
        assert.deepEqual(follower.of('recovering'), [], 'the follower acted before it was killed');

        const next = runner(args);
        await next.connected();
        const complete = await waitGoalStatus(env.user, t.threadId, 'complete', due - Date.now() + T, failed.seq);
        await waitTurnCompleted(env.user, t.threadId, 'completed', T, complete.seq);
        await settleAndStop(next, env.state, { [t.threadId]: 'complete' });
        assert.ok(termOnDisk() > takeoverTerm, `the next runner wrote no newer term than ${takeoverTerm}`);
        const activation = await assertRecoveredOnceByDaemon(t, failedTurnId);
        assert.equal(next.of('recovering', t.threadId).length, 1, next.transcript());
        assert.ok(activation.at >= due - CLOCK_SLACK_MS, `recovered ${due - activation.at} ms before the due time`);
        assertSavedRecovered(t.threadId, failedTurnId);
      },
    );

    // The runner ended right after its set reached the daemon: a crash (the outcome may not be on
    // disk: only the write-ahead intent, which the restarted runner resolves from the daemon's
    // state), or a clean stop (it waits for the set's reply and saves the outcome).
    for (const how of ENDINGS) {
      it(
        `a runner ${how === 'SIGKILL' ? 'killed' : 'stopped (SIGINT)'} right after sending the set does not send a second one when restarted`,
        { timeout: 2 * T },
        async () => {
          const first = runner();
          await first.connected();
          env.mock.setMode('http500');
          const t = await goal(`runner ends mid-recovery (${how})`);
          await first.waitFor((d) => d.type === 'backoff', T, 'backoff');
          env.mock.setMode('goalComplete');
          const failed = await waitTurnCompleted(env.user, t.threadId, 'failed', T, t.goalSetSeq);
          const failedTurnId = String(failed.params.turn.id);
          await first.waitFor((d) => d.type === 'recovering', T, 'recovering');
          // The set reached the daemon: end the runner now, before it can record the outcome.
          await waitGoalStatus(env.user, t.threadId, 'active', T, failed.seq);
          await end(first, how);
          const complete = await waitGoalStatus(env.user, t.threadId, 'complete', T, failed.seq);
          await waitTurnCompleted(env.user, t.threadId, 'completed', T, complete.seq);
          const second = runner();
          await second.connected();
          // Settled on its first look at the daemon (where a second set would be decided: its stop
          // waits for that look) and stopped; it saved what it decided.
          await settleAndStop(second, env.state, { [t.threadId]: 'complete' });
          assert.equal(
            second.of('recovering').length,
            0,
            `sent a second set after the restart\n${second.transcript()}`,
          );
          // On disk, the recovery is recorded exactly once (the first runner may have printed it
          // before it died, without saving it: then the second confirms it from the daemon's state).
          const w = assertSavedRecovered(t.threadId, failedTurnId);
          assert.equal(w.state.kind, 'complete');
          await assertRecoveredOnceByDaemon(t, failedTurnId);
        },
      );
    }

    it(
      'SIGTERM and SIGHUP stop it cleanly, as a service manager or a closed terminal does: state saved, exit 0',
      { timeout: T },
      async () => {
        for (const sig of ['SIGTERM', 'SIGHUP'] as const) {
          fs.rmSync(env.state, { force: true });
          const r = runner();
          await r.connected();
          assert.equal(await r.stopWith(sig), 0, `${sig}: not a clean stop\n${r.transcript()}`);
          assert.ok(
            r.decisions.some((d) => d.type === 'stopped' && d.signal === sig),
            `${sig}: no "stopped" line\n${r.transcript()}`,
          );
          assert.ok(fs.existsSync(env.state), `${sig}: the state was not saved`);
        }
      },
    );

    it('does not adopt a goal that was already blocked when it started', { timeout: T }, async () => {
      env.mock.setMode('http500');
      const t = await goal('blocked before the runner');
      await waitTurnCompleted(env.user, t.threadId, 'failed', T, t.goalSetSeq);
      env.mock.setMode('goalComplete');
      const r = runner();
      await r.connected();
      // Settled on its first look at the daemon, where it decides about the thread, and stopped.
      await settleAndStop(r, env.state, { [t.threadId]: 'notAdopted' });
      assertNoAutomaticSet(await record(t), 'adopted an old blocked goal');
      assert.equal(r.of('recovering').length, 0, 'adopted an old blocked goal');
      assert.equal(r.of('armed', t.threadId).length, 0);
      const status = statusOfFile(env.state, ['--codex-home', env.home.dir], false);
      assert.match(status.stdout, /not adopted \(already blocked/);
    });
  });
