// The drive of one transport-fault run (test/support/transportScenario.ts): the real engine on
// the fault proxy and the fake clock, the schedule's steps played and fake time run timer by
// timer, then, the faults stopped, time run until everything settled.
import { Engine } from '../../src/core/engine';
import { MemoryStore } from './memoryStore';
import { approvalStory } from './transportApprovals';
import { OPTIONS, type Schedule, TRANSIENT_INFOS } from './transportPlan';
import type { TransportRun } from './transportRun';
import { endWith, fail, humanPause, retryThenFail } from './transportStory';
import { modelGoalCallLine } from './fakeDaemon';
import { immediate, sleep } from './wait';
import * as fs from 'node:fs';

/** After the faults stop, time runs in steps of this until nothing is due and nothing moves. */
const SETTLE_STEP_MS = OPTIONS.resyncMs + 1_000;
/** …but never longer than this (six backoffs up to 16 min, a 30 min usage wait, the limiter). */
const SETTLE_MAX_MS = 6 * 60 * 60_000;
/** The requests every resync makes, whatever happened: not a sign that something is still moving. */
const RESYNC_READS = new Set(['thread/loaded/list', 'thread/goal/get', 'thread/list']);

function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1_664_525) + 1_013_904_223) >>> 0;
    return x / 2 ** 32;
  };
}

/** The engine with the shipped options, on the fault proxy; it places each planned pause in the backoff. */
export function newEngine(run: TransportRun, seed: number): Engine {
  const { clock } = run;
  return new Engine(OPTIONS, {
    connect: run.proxy.connector(),
    target: 'fault proxy',
    store: new MemoryStore(),
    clock,
    random: lcg(seed),
    onDecision: (d) => {
      run.decisions.push(d);
      run.log.push(`${clock.now()}: ${JSON.stringify(d)}`);
      // A pause placed inside the backoff, or inside the prepared send, of the thread's first failure.
      if (d.type === 'backoff') {
        const p = run.plans.find((x) => x.id === d.threadId);
        if (p?.kind === 'humanPause' && p.pause !== 'step' && !run.pauseAt.has(p.id) && !run.pausedByHuman.has(p.id)) {
          run.pauseAt.set(p.id, p.pause);
          const left = d.dueAt - clock.now();
          const ms =
            p.pause === 'backoff'
              ? Math.floor(left * (0.05 + 0.9 * p.pauseFrac))
              : left - 1 - Math.floor(p.pauseFrac * (OPTIONS.prepareMs - 20));
          run.later(() => humanPause(run, p, d.failedTurnId), Math.max(0, ms));
        }
      }
    },
    onChange: () => {
      run.changes += 1;
    },
  });
}

/** How much has moved: the proxy's frames, the engine's decisions and changes, the daemon's requests. */
function motion(run: TransportRun): number {
  return run.proxy.moved + run.decisions.length + run.changes + run.daemon.requests.length;
}

/** Until the engine is idle, or waits only for frames the proxy holds back (which only fake time releases). */
async function flush(run: TransportRun): Promise<void> {
  let quiet = 0;
  for (let round = 0; round < 5_000; round++) {
    const before = motion(run);
    let idle = false;
    void run.engine.idle().then(() => {
      idle = true;
    });
    await immediate();
    await immediate();
    const moved = motion(run) !== before;
    if (moved) {
      quiet = 0;
      continue;
    }
    if (idle) {
      if (++quiet >= 2) return;
      continue;
    }
    // Not idle and nothing moved: waiting for held frames, or for a file read to finish.
    await sleep(1);
    if (motion(run) === before && run.proxy.holding() && ++quiet >= 3) return;
  }
  throw new Error('the engine never settled (busy for 5000 rounds)');
}

/** Fake time, timer by timer, letting the engine work after each one. */
async function advance(run: TransportRun, ms: number): Promise<void> {
  const { clock } = run;
  let left = ms;
  for (let fired = 0; ; fired++) {
    if (fired > 20_000) throw new Error(`more than 20000 timers fired within ${ms} ms of fake time (a busy loop)`);
    const next = clock.nextIn();
    if (next === null || next > left) {
      await clock.advance(left);
      await flush(run);
      return;
    }
    await clock.advance(next);
    left -= next;
    await flush(run);
  }
}

/** The events of one step, thread by thread, as the plans say. */
function play(run: TransportRun, steps: number, step: number): void {
  for (const p of run.plans) {
    const info = TRANSIENT_INFOS[p.errorInfo];
    switch (p.kind) {
      case 'transient':
      case 'humanPause':
        if (p.failAt.includes(step) && run.running(p.id) && !run.pausedByHuman.has(p.id)) fail(run, p, info);
        if (p.kind === 'humanPause' && p.pause === 'step' && p.eventAt === step) humanPause(run, p, null);
        break;
      case 'retrying':
        if (p.failAt.includes(step) && run.running(p.id)) retryThenFail(run, p, info);
        break;
      case 'usage':
        if (p.failAt.includes(step) && run.running(p.id)) fail(run, p, 'usageLimitExceeded');
        break;
      case 'modelBlock':
        if (p.eventAt === step && run.running(p.id)) {
          fs.appendFileSync(run.daemon.thread(p.id).path, modelGoalCallLine('blocked'));
          endWith(run, p, 'blocked');
          run.applied.add(p.id);
        }
        break;
      case 'terminal':
        if (p.eventAt === step && run.running(p.id)) {
          endWith(run, p, p.terminal);
          run.applied.add(p.id);
        }
        break;
      case 'approval':
        // On a step the schedule has (each approval story is meant to play).
        if (p.eventAt % steps === step && run.running(p.id) && !run.applied.has(p.id)) approvalStory(run, p);
        break;
      default:
        break;
    }
  }
}

/**
 * Starts the engine, plays the steps with their faults, stops the faults and runs time until everything settled.
 * Returns the fake time (ms) the settling took.
 */
export async function drive(run: TransportRun, schedule: Schedule): Promise<number> {
  const { engine, daemon, decisions, arrivals } = run;
  let settledAfter = 0;
  try {
    await engine.start();
    await flush(run);
    for (let step = 0; step < schedule.steps.length; step++) {
      play(run, schedule.steps.length, step);
      await flush(run);
      await advance(run, schedule.steps[step]);
    }
    run.log.push(`${run.clock.now()}: faults stop`);
    run.proxy.calm();
    await flush(run);
    // Settle: until nothing is due, nothing of the scenario is still to come, and two resyncs passed with nothing new.
    let quiet = 0;
    // What moved, less the reads every resync makes (the loaded list, each goal, the home's list).
    const moved = () =>
      `${decisions.length}/${arrivals.length}/${daemon.requests.filter((r) => !RESYNC_READS.has(r.method ?? '')).length}`;
    for (let t = 0; t < SETTLE_MAX_MS && quiet < 2; t += SETTLE_STEP_MS) {
      const before = moved();
      await advance(run, SETTLE_STEP_MS);
      settledAfter = t + SETTLE_STEP_MS;
      const after = moved();
      const pending = engine.watches().some((w) => w.pending !== null);
      quiet = before === after && engine.nextDueAt() === null && run.ownTimers === 0 && !pending ? quiet + 1 : 0;
    }
    if (quiet < 2)
      run.broken.push(`nothing settled within ${SETTLE_MAX_MS / 60_000} min of fake time after the faults stopped`);
  } catch (error) {
    run.broken.push(`the run itself failed: ${error instanceof Error ? error.stack : String(error)}`);
  }
  return settledAfter;
}

/** Stops the engine (it must return within 5 s of real time). */
export async function stopEngine(run: TransportRun): Promise<void> {
  try {
    await Promise.race([
      run.engine.stop(),
      sleep(5_000).then(() => {
        throw new Error('engine.stop() did not return');
      }),
    ]);
  } catch (error) {
    run.broken.push(String(error));
  }
  await immediate();
}
