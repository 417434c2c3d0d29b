// Fault 9: a leading runner STOPPED (SIGSTOP: Ctrl-Z, a debugger, a paused VM), its sockets and
// files left open, then woken (SIGCONT) after another runner took its place. Leadership is a lease
// (src/leader/lease.ts: renewed every RENEW_MS, lost after LEASE_MS of silence): a follower that
// hears nothing for the lease replaces the silent leader's socket and leads; the old leader, woken,
// finds its lease expired on its monotonic clock and acts no more (the fence, asked before every
// set, resume, save and announcement: src/core/engineCore.ts), steps down and follows.
// Headless runners (dist/cli.js watch --json) on one real daemon (DaemonLab: each Codex build in
// node_modules, 0.169.0 pinned and 0.171.0; every test names its version), one XDG_RUNTIME_DIR,
// each runner with its own state file (a takeover cannot lean on a shared file).
//
// Invariants:
//  - no pending recovery lost: a leader stopped in a backoff is replaced by a follower within the
//    lease (plus one renewal and the election), which recovers the failed turn, at once when the
//    due time passed during the stall;
//  - exactly one effective recovery per failed turn, by the daemon's own record
//    (test/support/daemonJudge.ts: the rollout's automatic activations), never from the runners'
//    lines alone: the woken runner sends no second set, neither when woken nor later when it leads
//    again;
//  - a leader stopped between its pre-send reads and its set (the moment its write-ahead intent is
//    on disk) never sends that set once woken, even when woken while the new leader's set for the
//    same failed turn is in flight (held at a tap on the daemon socket, released only once the
//    woken runner follows): an unfenced set would then reach the daemon first and the new leader's
//    would be a second activation. The tap also counts every automatic set frame that leaves a
//    runner: the stopped leader's never leaves;
//  - the woken runner says so: a `leader election: stepping down: lease lost: …` line (--verbose),
//    then a `role` line as follower naming the new leader; it writes nothing to stderr and keeps
//    running (it leads again, without a set, once the new leader stops);
//  - `status` against a stopped leader does not hang: it says the engine (runner, pid N) has not
//    answered for N s and exits 1 (src/runner/cli.ts: status exits 1 on an error), within its 5 s
//    welcome timeout and a margin.
// "Nothing more happened" is never a fixed sleep: the woken runner's `role` line as a follower
// comes after its engine's term ended (src/leader/electedEngine.ts: the engine stopped before it
// follows), and the leader is settled (test/support/runnerProcess.ts `settled`/`settleAndStop`:
// past its due times, its state file decided with nothing planned or under way) before the
// daemon's record is read.
//
// Shipped defaults everywhere (the 5 s lease, the 60 s resync, the limiter, the 200 ms prepare
// lead) except the public flags:
//  - --base-delay 3 --max-delay 3 (test 1): the first recovery is due 1.5–3 s after the failure; the
//    leader is stopped 150–1150 ms into the backoff (before the prepare), so the due time passes
//    during the stall and the new leader must recover the turn as soon as it leads;
//  - --base-delay 2 --max-delay 2 (test 2): due 1–2 s after the failure; the intent is written
//    about 200 ms before the set (the prepare lead): the window the stop is aimed into;
//  - --verbose (output only): the election's diagnostics, where the step-down is said.
// Tried by hand (each fault reverted after): no fence before the set (src/core/attempt.ts `send`):
// test 2 red on both builds (the woken leader's set reaches the daemon first, the new leader's then
// shows as an activation after the recovery turn); `fence()` always null (src/leader/election.ts):
// test 2 red on both builds in 6 rounds (on 0.169.0 only in a run of 3: when the woken leader's
// renewal timer runs before its due timer, it steps down before it could send); `Lease.check` never
// expiring: red only on the step-down line (the woken leader still sends nothing: the fence's
// socket-path check and the path watch stop it; the daemon's record stays clean).
// Seeded (the stop point in the backoff, the wake-up's delay): replay with CGR_FAULT_SEED=<seed>;
// CGR_STALL_ROUNDS sets test 2's rounds (default 3); CGR_FAULT_VERBOSE=1 prints every runner's lines.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { codexBuilds } from '../../src/demo/codexBinary';
import { sleep } from '../../src/demo/codexProcesses';
import { waitGoalStatus, waitTurnCompleted, type StartedGoalThread } from '../../src/demo/goalThreads';
import { type UserClient } from '../../src/demo/userClient';
import { LEASE_MS, RENEW_MS } from '../../src/leader/lease';
import { DaemonLab } from '../support/daemonLab';
import {
  endRunners,
  RunnerProcess,
  runCli,
  savedWatches,
  settleAndStop,
  settled as settledOn,
  type RunnerDecision,
} from '../support/runnerProcess';
import { faultSeed } from '../support/rolloutGoals';
import { assertOneRecoveryPerFailedTurn, daemonRecord, type DaemonRecord } from '../support/daemonJudge';
import { SocketTap, type HeldFrame } from '../support/socketTap';
import { rng as seededRandom } from '../support/random';
import type { Json } from '../support/json';

const T = 60_000;
const SEED = faultSeed();
const VERBOSE = Boolean(process.env.CGR_FAULT_VERBOSE);
const ROUNDS = Math.max(1, Number(process.env.CGR_STALL_ROUNDS ?? 3) || 3);
/** Takeover bound: the lease, one renewal (the last beat may be up to RENEW_MS before the stop), the election. */
const TAKEOVER_MAX_MS = LEASE_MS + RENEW_MS + 2_000;
/** From the new leader's connection (or the due time, if later) to the daemon's activation. */
const RECOVERY_MAX_MS = 3_000;
/** `status` waits 5 s for a welcome (src/runner/control.ts), then reads the leader file. */
const STATUS_MAX_MS = 5_000 + 3_000;
const STEP_DOWN = /^leader election: stepping down: lease lost: /;

type Runner = RunnerProcess & { statePath: string };
interface Takeover {
  version: string;
  what: string;
  toLeaderMs: number;
  toConnectedMs: number;
}
const takeovers: Takeover[] = [];

after(() => {
  for (const version of new Set(takeovers.map((x) => x.version))) {
    const mine = takeovers.filter((x) => x.version === version);
    const fmt = (f: (x: Takeover) => number) => {
      const s = mine.map(f).sort((a, b) => a - b);
      return `min ${s[0]} ms, median ${s[Math.floor(s.length / 2)]} ms, max ${s.at(-1)} ms`;
    };
    process.stdout.write(
      `# codex ${version}: SIGSTOP -> new leader over ${mine.length} stalls: role leader ${fmt((x) => x.toLeaderMs)}; connected ${fmt((x) => x.toConnectedMs)}\n`,
    );
  }
});

for (const codex of codexBuilds())
  describe(
    `fault 9: a leader stopped (SIGSTOP) and woken (SIGCONT), codex ${codex.version}`,
    { timeout: 10 * 60_000 },
    () => {
      let lab: DaemonLab;
      let user: UserClient<Json>;
      let dir: string;
      const runners: Runner[] = [];
      let stateFiles = 0;
      const random = seededRandom(SEED);

      before(async () => {
        lab = await DaemonLab.start(codex);
        user = await lab.user();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-fault9-'));
      });

      // Continued before they are killed (RunnerProcess.kill): nothing is left stopped.
      afterEach((t) => endRunners(runners, t.name, VERBOSE));

      after(async () => {
        for (const r of runners) await r.kill();
        await lab?.close();
        if (dir) fs.rmSync(dir, { recursive: true, force: true });
      });

      /** A runner with its own state file (or the one given), on `socket` (default: the daemon's). */
      function runner(baseDelay: string, socket = lab.socket, statePath?: string): Runner {
        const file = statePath ?? path.join(dir, `state-${++stateFiles}.json`);
        const r = new RunnerProcess([
          '--socket',
          socket,
          '--state',
          file,
          '--base-delay',
          baseDelay,
          '--max-delay',
          baseDelay,
          '--verbose',
        ]);
        const runner = Object.assign(r, { statePath: file });
        runners.push(runner);
        return runner;
      }

      const pidOf = (r: RunnerProcess) => r.child.pid!;
      const since = (r: RunnerProcess, mark: number) => (d: RunnerDecision) => r.decisions.indexOf(d) >= mark;
      // Written once woken: a set the runner sent before the SIGSTOP (a missed aim) was announced
      // before it, and its line may be read only after the wake.
      const afterWake = (d: RunnerDecision, wokenAt: number) => Date.parse(String(d.ts)) >= wokenAt;

      /** The runners' roles once each has one: exactly one leads, the others follow it. */
      async function roles(list: Runner[]): Promise<{ leader: Runner; followers: Runner[] }> {
        for (const r of list) await r.waitFor((d) => d.type === 'role', T, 'a role line');
        const leaders = list.filter((r) => r.of('role').at(-1)?.role === 'leader');
        assert.equal(
          leaders.length,
          1,
          `not exactly one leader: ${list.map((r) => JSON.stringify(r.of('role').at(-1))).join(' ')}`,
        );
        const followers = list.filter((r) => r !== leaders[0]);
        for (const f of followers) {
          const role = f.of('role').at(-1)!;
          assert.deepEqual([role.role, role.leaderPid, role.leaderWho], ['follower', pidOf(leaders[0]), 'runner']);
        }
        return { leader: leaders[0], followers };
      }

      /** After `stoppedAt`: the follower that leads now, its `role: leader` and `connected` lines, timed. */
      async function takeover(
        followers: Runner[],
        stoppedAt: number,
        what: string,
      ): Promise<{ next: Runner; leaderLine: RunnerDecision; connected: RunnerDecision }> {
        const marks = new Map(followers.map((f) => [f, f.decisions.length]));
        const isNewLeader = (f: Runner) => (d: RunnerDecision) =>
          since(f, marks.get(f)!)(d) && d.type === 'role' && d.role === 'leader';
        const next = await Promise.any(followers.map((f) => f.waitFor(isNewLeader(f), T, 'a takeover').then(() => f)));
        const leaderLine = next.decisions.find(isNewLeader(next))!;
        const connected = await next.waitFor(
          (d) =>
            next.decisions.indexOf(d) > next.decisions.indexOf(leaderLine) &&
            d.type === 'connection' &&
            d.state === 'connected',
          T,
          'the new leader connecting',
        );
        const x = {
          version: codex.version,
          what,
          toLeaderMs: Date.parse(leaderLine.ts) - stoppedAt,
          toConnectedMs: Date.parse(connected.ts) - stoppedAt,
        };
        takeovers.push(x);
        assert.ok(
          x.toLeaderMs >= LEASE_MS - RENEW_MS - 50,
          `taken over ${x.toLeaderMs} ms after the SIGSTOP: before the stopped leader's lease could have run out`,
        );
        assert.ok(x.toLeaderMs <= TAKEOVER_MAX_MS, `taken over only ${x.toLeaderMs} ms after the SIGSTOP`);
        return { next, leaderLine, connected };
      }

      /**
       * The woken runner, after `mark` (its lines before the wake-up): says it steps down because its
       * lease was lost, then follows `leader`. Its `role` line as a follower comes once its engine's
       * term has ended (the positive evidence that it will send nothing more). Returns the reason.
       */
      async function stepsDownAndFollows(woken: Runner, mark: number, leader: Runner): Promise<string> {
        const role = await woken.waitFor(
          (d) => since(woken, mark)(d) && d.type === 'role',
          T,
          'a role line from the woken runner',
        );
        assert.deepEqual(
          [role.role, role.leaderPid, role.leaderWho],
          ['follower', pidOf(leader), 'runner'],
          `the woken runner does not follow the new leader: ${JSON.stringify(role)}`,
        );
        const steps = woken.decisions.filter(
          (d) => since(woken, mark)(d) && d.type === 'debug' && STEP_DOWN.test(String(d.message)),
        );
        assert.equal(steps.length, 1, `no (or more than one) step-down line after the wake-up\n${woken.transcript()}`);
        assert.ok(
          woken.decisions.indexOf(steps[0]) < woken.decisions.indexOf(role),
          'it followed before it stepped down',
        );
        assert.ok(woken.running, 'the woken runner exited');
        assert.deepEqual(woken.stderr, [], `runner ${pidOf(woken)} wrote to stderr`);
        return String(steps[0].message).replace('leader election: stepping down: lease lost: ', '');
      }

      async function oneRecovery(g: StartedGoalThread<Json>): Promise<DaemonRecord> {
        const r = await daemonRecord(user, g.threadId, String(g.thread.path));
        assert.equal(r.failed.length, 1, `failed turns: ${JSON.stringify(r.turns)}`);
        assert.equal(r.rollout.user.length, 1, 'the user set the goal once');
        assertOneRecoveryPerFailedTurn(r);
        assert.equal(r.goalStatus, 'complete');
        return r;
      }

      it(`a leader SIGSTOPped mid-backoff: a follower takes over within the lease and recovers the failed turn once; woken, the old leader steps down, follows, and sends no second set (2 rounds, seed ${SEED})`, async (t) => {
        t.diagnostic(`seed ${SEED} (replay: CGR_FAULT_SEED=${SEED} node --test out/test/faults/stalls.test.js)`);
        let { leader, followers } = await roles([runner('3'), runner('3')]);
        await leader.connected();
        const goals: StartedGoalThread<Json>[] = [];
        for (let round = 0; round < 2; round++) {
          // Woken as soon as the follower leads (before or as it recovers), or once the goal is complete.
          const wakeAtTakeover = round === 0;
          lab.mock.setMode('http500');
          const g = await lab.goal(`stopped mid-backoff ${round}`, { timeoutMs: T });
          goals.push(g);
          const backoff = await leader.waitFor(
            (d) => d.type === 'backoff' && d.threadId === g.threadId,
            T,
            'the backoff',
          );
          const due = Number(backoff.dueAt);
          lab.mock.setMode('goalComplete');
          const stopIn = 150 + Math.round(random() * 1_000);
          await sleep(Math.max(0, Date.parse(backoff.ts) + stopIn - Date.now()));
          assert.equal(leader.of('recovering', g.threadId).length, 0, 'the recovery was due already');
          const stopped = leader;
          const mark = stopped.decisions.length;
          const stoppedAt = stopped.freeze();
          assert.ok(stoppedAt < due - 200, `stopped ${stoppedAt - due} ms after the due time: not in the backoff`);

          const { next, connected } = await takeover(followers, stoppedAt, `mid-backoff round ${round}`);
          const x = takeovers.at(-1)!;
          t.diagnostic(
            `round ${round}: SIGSTOP ${stopIn} ms into the backoff (due ${due - stoppedAt} ms after it); takeover: role leader after ${x.toLeaderMs} ms, connected after ${x.toConnectedMs} ms`,
          );
          let wokenAt = 0;
          if (wakeAtTakeover) wokenAt = stopped.thaw();
          await next.waitFor(
            (d) => d.type === 'recovered' && d.threadId === g.threadId,
            T,
            'the recovery by the new leader',
          );
          const complete = await waitGoalStatus(user, g.threadId, 'complete', T, g.goalSetSeq);
          await waitTurnCompleted(user, g.threadId, 'completed', T, complete.seq);
          await settledOn(next, next.statePath, { [g.threadId]: 'complete' });
          if (!wakeAtTakeover) wokenAt = stopped.thaw();
          const reason = await stepsDownAndFollows(stopped, mark, next);
          t.diagnostic(
            `round ${round}: woken ${wakeAtTakeover ? 'as the follower took over' : 'once the goal was complete'} (stopped ${wokenAt - stoppedAt} ms): stepped down (${reason}) and follows pid ${pidOf(next)}`,
          );

          // The daemon's record once the woken runner's engine has ended: one activation, and not
          // later than the lease plus the backoff (the due time, or the takeover if later).
          const record = await oneRecovery(g);
          const activation = record.rollout.automatic[0].at;
          const bound = Math.max(due, Date.parse(connected.ts)) + RECOVERY_MAX_MS;
          assert.ok(
            activation <= bound,
            `recovered ${activation - stoppedAt} ms after the SIGSTOP, ${activation - bound} ms past the lease plus the backoff`,
          );
          assert.ok(activation >= due - 25, 'recovered before the due time');
          assert.equal(next.of('recovering', g.threadId).length, 1, 'the new leader sent more than one set');
          assert.deepEqual(
            stopped.decisions.filter(
              (d) => since(stopped, mark)(d) && afterWake(d, wokenAt) && d.type === 'recovering',
            ),
            [],
            'the woken runner announced a set',
          );
          followers = runners.filter((r) => r !== next && r.running);
          leader = next;
        }
        // The woken runner keeps running: the leader stops (cleanly, settled), the last woken runner
        // leads again on its own file (stale: it holds the backoff it saved before the stop) merged
        // with the leader's last snapshot; settled on its first look at every thread, then stopped;
        // it sent no set, and the daemon's record still shows one activation per failed turn.
        const all = Object.fromEntries(goals.map((g) => [g.threadId, 'complete']));
        const last = followers[0];
        const mark = last.decisions.length;
        await settleAndStop(leader, leader.statePath, all);
        await last.waitFor((d) => since(last, mark)(d) && d.type === 'role' && d.role === 'leader', T, 'leading again');
        await last.waitFor(
          (d) => since(last, mark)(d) && d.type === 'connection' && d.state === 'connected',
          T,
          'connected',
        );
        await settleAndStop(last, last.statePath, all);
        assert.deepEqual(
          last.decisions.filter((d) => since(last, mark)(d) && d.type === 'recovering'),
          [],
          'the woken runner, leading again, sent a set',
        );
        for (const g of goals) await oneRecovery(g);
        for (const r of runners) assert.deepEqual(r.stderr, [], `runner ${pidOf(r)} wrote to stderr`);
      });

      it(`a leader SIGSTOPped as its write-ahead intent reaches the disk: the new leader recovers the failed turn once; woken (also while the new leader's set is in flight), the old one never sends its set, steps down and follows (${ROUNDS} rounds, seed ${SEED})`, async (t) => {
        // Every runner reaches the daemon through the tap: one election (keyed by the tap's path),
        // and every frame a runner sends is seen as it leaves it.
        const tap = await SocketTap.start(lab.socket);
        try {
          let { leader, followers } = await roles([runner('2', tap.socketPath), runner('2', tap.socketPath)]);
          await leader.connected();
          const goals: StartedGoalThread<Json>[] = [];
          let missed = 0;
          for (let round = 0; goals.length < ROUNDS; round++) {
            // Even rounds: woken while the new leader's set for the same failed turn is held at the
            // tap (an unfenced set would reach the daemon first). Odd rounds: woken once the goal is
            // complete (the new leader's events are waiting on its daemon connection).
            const wakeWhileHeld = goals.length % 2 === 0;
            const wakeDelayMs = Math.round(random() * 200);
            lab.mock.setMode('http500');
            const g = await lab.goal(`stopped at its write-ahead ${round}`, { timeoutMs: T });
            const id = g.threadId;
            /** Every automatic set for this thread that left a runner, in order, with who was leading then. */
            const sets: { at: number; phase: 'before the takeover' | 'after the takeover' }[] = [];
            let phase: 'before the takeover' | 'after the takeover' = 'before the takeover';
            let held: HeldFrame | null = null;
            let onHeld: () => void = () => undefined;
            const newLeaderSet = new Promise<void>((resolve) => {
              onHeld = resolve;
            });
            tap.hook = (text, frame) => {
              if (!text.includes('"thread/goal/set"') || !text.includes('"automatic"') || !text.includes(id))
                return false;
              sets.push({ at: Date.now(), phase });
              if (phase === 'after the takeover' && wakeWhileHeld && held === null) {
                held = frame;
                onHeld();
                return true;
              }
              return false;
            };
            const failed = await waitTurnCompleted(user, id, 'failed', T, g.goalSetSeq);
            const failedTurnId = String(failed.params.turn.id);
            lab.mock.setMode('goalComplete');
            const stopped = leader;
            const mark = stopped.decisions.length;
            // The aim: the intent for this failed turn on disk (snapshot and journal, read as a
            // restarted runner would), polled every 2 ms; SIGSTOP at once.
            let stoppedAt = 0;
            for (const deadline = Date.now() + T; stoppedAt === 0; await sleep(2)) {
              const w = (await savedWatches(stopped.statePath))[id];
              if (w?.pending?.failedTurnId === failedTurnId) stoppedAt = stopped.freeze();
              else if (sets.length > 0 || Date.now() > deadline) break;
            }
            assert.ok(stoppedAt > 0, `round ${round}: no intent on disk before the set left\n${stopped.transcript()}`);
            const due = Number(stopped.of('backoff', id).at(-1)?.dueAt);
            const { next } = await takeover(followers, stoppedAt, `write-ahead round ${round}`);
            // Every frame the stopped runner wrote before the stop has long reached the tap.
            const aimed = sets.length === 0;
            phase = 'after the takeover';
            const x = takeovers.at(-1)!;
            let wokenAt = 0;
            if (!aimed) {
              missed++;
              t.diagnostic(`round ${round}: missed (the set left before the SIGSTOP); again`);
              assert.ok(missed <= 3, 'the SIGSTOP landed after the set 4 times: the aim does not work');
            } else if (wakeWhileHeld) {
              await newLeaderSet;
              await sleep(wakeDelayMs);
              wokenAt = stopped.thaw();
            }
            if (!wakeWhileHeld || !aimed) {
              const complete = await waitGoalStatus(user, id, 'complete', T, failed.seq);
              await waitTurnCompleted(user, id, 'completed', T, complete.seq);
              await settledOn(next, next.statePath, { [id]: 'complete' });
              wokenAt = stopped.thaw();
            }
            const reason = await stepsDownAndFollows(stopped, mark, next);
            // The woken runner follows: its engine has ended. Only now is the new leader's set let go.
            void (held as HeldFrame | null)?.forward();
            const complete = await waitGoalStatus(user, id, 'complete', T, failed.seq);
            await waitTurnCompleted(user, id, 'completed', T, complete.seq);
            await settledOn(next, next.statePath, { [id]: 'complete' });
            const record = await oneRecovery(g);
            assert.deepEqual(record.failed, [failedTurnId]);
            if (aimed) {
              assert.equal(
                sets.length,
                1,
                `round ${round}: ${sets.length} automatic sets left the runners for the failed turn (the stopped leader's own, woken: ${sets.filter((s) => s.at >= wokenAt).length})`,
              );
              assert.equal(next.of('recovering', id).length, 1, 'the new leader did not send exactly one set');
              goals.push(g);
            }
            assert.deepEqual(
              stopped.decisions.filter(
                (d) => since(stopped, mark)(d) && afterWake(d, wokenAt) && d.type === 'recovering',
              ),
              [],
              'the woken runner announced a set',
            );
            t.diagnostic(
              `round ${round}: SIGSTOP with the intent on disk and the set unsent${aimed ? '' : ' (missed)'}, ${due - stoppedAt} ms before the set was due; takeover: role leader after ${x.toLeaderMs} ms, connected after ${x.toConnectedMs} ms; woken ${wakeWhileHeld ? `${wakeDelayMs} ms after the new leader's set was held at the tap` : 'once the goal was complete'} (stopped ${wokenAt - stoppedAt} ms): stepped down (${reason}); sets that left a runner: ${sets.length}`,
            );
            tap.hook = null;
            followers = runners.filter((r) => r !== next && r.running);
            leader = next;
          }
          // The end: the follower stops, the leader settles on every thread and stops; the record again.
          for (const f of followers) assert.equal(await f.stop(), 0, 'a follower did not stop cleanly');
          await settleAndStop(leader, leader.statePath, Object.fromEntries(goals.map((g) => [g.threadId, 'complete'])));
          for (const g of goals) await oneRecovery(g);
          for (const r of runners) assert.deepEqual(r.stderr, [], `runner ${pidOf(r)} wrote to stderr`);
        } finally {
          tap.hook = null;
          for (const r of runners) await r.kill();
          await tap.close();
        }
      });

      it('status while the only leader is SIGSTOPped: says the engine (runner, pid N) has not answered for N s, exits 1, does not hang; woken, the runner leads again', async (t) => {
        const r = runner('3');
        await r.waitFor((d) => d.type === 'role' && d.role === 'leader', T, 'leading');
        await r.connected();
        const stoppedAt = r.freeze();
        const started = Date.now();
        const st = await runCli(['status', '--socket', lab.socket, '--state', r.statePath], {}, 30_000);
        const took = Date.now() - started;
        t.diagnostic(`status took ${took} ms, exit ${st.status}: ${st.stderr.trim()}`);
        assert.equal(st.status, 1, `status exit ${st.status}\n${st.stdout}${st.stderr}`);
        assert.equal(st.stdout, '');
        assert.ok(took <= STATUS_MAX_MS, `status took ${took} ms`);
        const m = /the engine \(runner, pid (\d+)\) at (\S+) has not answered for (\d+) s/.exec(st.stderr);
        assert.ok(m, `status does not say the engine is not answering: ${st.stderr}`);
        assert.equal(Number(m[1]), pidOf(r));
        const silentS = Number(m[3]);
        assert.ok(
          silentS >= Math.floor((Date.now() - stoppedAt) / 1000) - 1 &&
            silentS <= Math.ceil((Date.now() - stoppedAt + RENEW_MS) / 1000),
          `has not answered for ${silentS} s, stopped ${Date.now() - stoppedAt} ms ago`,
        );
        // Woken past its lease: it acted no more and stepped down; alone, it leads again on its file.
        await sleep(Math.max(0, stoppedAt + LEASE_MS + RENEW_MS - Date.now()));
        const mark = r.decisions.length;
        r.thaw();
        await r.waitFor((d) => since(r, mark)(d) && d.type === 'role' && d.role === 'leader', T, 'leading again');
        assert.ok(
          r.decisions.some((d) => since(r, mark)(d) && d.type === 'debug' && STEP_DOWN.test(String(d.message))),
          `no step-down line\n${r.transcript()}`,
        );
        await r.waitFor((d) => since(r, mark)(d) && d.type === 'connection' && d.state === 'connected', T, 'connected');
        const again = await runCli(['status', '--socket', lab.socket, '--state', r.statePath, '--json'], {}, 30_000);
        assert.equal(again.status, 0, again.stderr);
        const report = JSON.parse(again.stdout) as { engine?: { pid?: number } } & Record<string, unknown>;
        assert.match(again.stdout, new RegExp(`"pid":${pidOf(r)}`), JSON.stringify(report));
        assert.equal(await r.stop(), 0);
        assert.deepEqual(r.stderr, []);
      });
    },
  );
