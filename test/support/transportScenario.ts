// One transport-fault schedule, run end to end: a FakeDaemon with a few scripted threads, the
// real engine (the shipped DEFAULT_OPTIONS: 30 s backoff base, 6 attempts, limiter burst 3 then
// one per 5 s, 200 ms prepare lead, 60 s resync) and JSON-RPC client, the fault proxy between
// them, and a FakeClock. The schedule's faults fire while its steps play; then the faults stop,
// time runs until everything has settled, and every invariant is checked. Returns what was
// broken (nothing, when the engine is right), what happened, and which of the cases the
// property names were reached — counted from what the daemon received and what reached the
// engine's socket, not from what the schedule asked for — for the property test in test/faults/.
//
// The oracle classifies every automatic set itself, from the daemon's side (`daemon.before`
// sees each one arrive with the daemon's state at that moment). It forgives exactly one case:
// a set that left the engine before the engine was told of a person's pause, and so arrived
// on a paused goal (the unavoidable race: `thread/goal/set` cannot be made conditional). The
// strict FakeDaemon refuses every other forbidden set at once; its `judge` lets this one case
// through, and the oracle counts it (`races`) and fails a set sent after the engine was told.
//
// The schedule's plan is transportPlan.ts; the drive (the daemon's threads and hooks, the fault
// proxy, the engine, the steps and the scripted events) transportWire.ts, transportDrive.ts,
// transportStory.ts and transportApprovals.ts, keeping their record in transportRun.ts; the
// oracle (every invariant) transportOracle.ts.
import * as fs from 'node:fs';
import { checkArrivals, checkLimiter, checkLogLines, checkThreads, checkWire } from './transportOracle';
import { drive, newEngine, stopEngine } from './transportDrive';
import type { Outcome, Schedule } from './transportPlan';
import { TransportRun } from './transportRun';
import { addThreads, newProxy, watchSets } from './transportWire';

export {
  APPROVALS,
  type ApprovalStory,
  HOLD_MIN_MS,
  type Kind,
  KINDS,
  OPTIONS,
  type Outcome,
  type Reached,
  type Schedule,
  type ThreadPlan,
  TRANSIENT_INFOS,
} from './transportPlan';

export async function runSchedule(schedule: Schedule, dir: string, crashes: () => number): Promise<Outcome> {
  fs.mkdirSync(dir, { recursive: true });
  const crashesBefore = crashes();
  const run = new TransportRun(schedule, dir);
  addThreads(run);
  watchSets(run);
  run.proxy = newProxy(run, schedule);
  run.engine = newEngine(run, schedule.seed);
  const settledAfter = await drive(run, schedule);

  checkWire(run);
  const { perTurn, races } = checkArrivals(run);
  checkLimiter(run);
  const { recovered, notSeen } = checkThreads(run, perTurn);
  checkLogLines(run);

  await stopEngine(run);
  const { broken, proxy } = run;
  // Invariant: no crash: no unhandled rejection, no uncaught exception.
  if (crashes() !== crashesBefore)
    broken.push(`${crashes() - crashesBefore} unhandled rejection(s) or uncaught exception(s)`);
  fs.rmSync(dir, { recursive: true, force: true });

  return {
    broken,
    stats: {
      sets: run.arrivals.length,
      recovered,
      fired: proxy.fired.length,
      drops: proxy.fired.filter((f) => f.broke).length,
      delays: proxy.fired.filter((f) => f.fault.on !== 'connect' && f.fault.phase.startsWith('delay')).length,
      errors: proxy.fired.filter(
        (f) => f.fault.on === 'request' && (f.fault.phase === 'errorReply' || f.fault.phase === 'rejectRequest'),
      ).length,
      timeouts: proxy.timeouts,
      races,
      notSeen,
      decisions: run.decisions.length,
      fakeMinutes: Math.round((schedule.steps.reduce((a, b) => a + b, 0) + settledAfter) / 60_000),
    },
    reached: run.reached,
    log: run.log,
  };
}
