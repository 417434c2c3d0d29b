// Bench 1: timer precision at scale. 10,000 threads watched on the fake daemon, 1,000 of them
// fail one after the other; each recovery is due at its own jittered time. Lateness = when the daemon receives
// the recovery's thread/goal/set, minus the due time the engine announced. The baseline polls
// every thread once a second and recovers what is due, on its own copy of the same fleet. Each
// thread runs on a provider of its own (`ownProviders`): 1,000 goals failing on one provider are one
// outage, recovered through one probe (that cost is the outage-cost section's); here each goal's
// recovery is due at its own time.
import * as path from 'node:path';
import * as fs from 'node:fs';
import { Engine } from '../../src/core/engine';
import { systemClock } from '../../src/core/clock';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import { JsonFileStore } from '../../src/store/jsonFileStore';
import type { FakeDaemon } from '../support/fakeDaemon';
import { failByEvents, healthyFleet, ownProviders } from '../support/fleet';
import { rng } from '../support/random';
import { sleep } from '../support/wait';
import { PollingReconciler } from './baselines/pollingReconciler';
import { IGNORE_EVENTS } from './baselines/ignoreEvents';
import { figure, percentile, type Bench, type BenchContext, type BenchSection } from './types';

const now = () => performance.timeOrigin + performance.now();

interface Params {
  threads: number;
  /** The first `failing` threads fail, one every `spacingMs`; the others stay healthy, watched. */
  failing: number;
  spacingMs: number;
  baseDelayMs: number;
}

interface Run {
  lateness: number[];
  rpcs: number;
  recoveries: number;
  durationMs: number;
  doubleSets: number;
}

/** Records when each thread/goal/set arrives at the daemon. */
function watchSets(daemon: FakeDaemon): Map<string, number[]> {
  const sets = new Map<string, number[]>();
  daemon.before = (m) => {
    if (m.method !== 'thread/goal/set') return;
    const id = String(m.params?.threadId);
    sets.set(id, [...(sets.get(id) ?? []), now()]);
  };
  return sets;
}

/** Fails thread i at i·spacing, then waits until every recovery reached the daemon. */
async function failStaggered(
  daemon: FakeDaemon,
  ids: string[],
  p: Params,
  sets: Map<string, number[]>,
): Promise<number> {
  const t0 = now();
  for (let i = 0; i < ids.length; i++) {
    const wait = t0 + i * p.spacingMs - now();
    if (wait > 0) await sleep(wait);
    failByEvents(daemon, ids[i], 'turn-1');
  }
  const deadline = now() + p.baseDelayMs + 30_000;
  while (sets.size < ids.length && now() < deadline) await sleep(20);
  if (sets.size < ids.length) throw new Error(`only ${sets.size} of ${ids.length} recoveries reached the daemon`);
  return now() - t0;
}

async function product(dir: string, p: Params): Promise<Run> {
  const { daemon, ids } = healthyFleet(dir, p.threads);
  ownProviders(daemon, ids);
  const options: EngineOptions = {
    ...DEFAULT_OPTIONS,
    baseDelayMs: p.baseDelayMs,
    maxDelayMs: p.baseDelayMs,
    // The global limiter is a deliberate policy (DEFAULT_OPTIONS: 3, then one per 5 s); it is opened here so
    // the figure is the scheduler's own precision.
    limiterBurst: p.threads,
    limiterIntervalMs: 1,
  };
  const due = new Map<string, number>();
  const engine = new Engine(options, {
    connect: daemon.connector({ requestTimeoutMs: 60_000 }),
    store: new JsonFileStore(path.join(dir, 'state.json')),
    clock: systemClock,
    random: rng(1),
    onDecision: (d) => {
      if (d.type === 'backoff') due.set(d.threadId, d.dueAt);
    },
  });
  await engine.start();
  // Every thread armed and subscribed before the first failure: a new watch shows `running`
  // from its first read, before its arming (a resume, a read of its turn and rollout) is done.
  while (engine.watches().filter((w) => w.state.kind === 'running').length < p.threads) await sleep(20);
  while (daemon.count('thread/resume') < p.threads) await sleep(20);
  await engine.idle();
  const sets = watchSets(daemon);
  const before = daemon.requests.length;
  const failing = ids.slice(0, p.failing);
  const durationMs = await failStaggered(daemon, failing, p, sets);
  await engine.idle();
  const rpcs = daemon.requests.length - before;
  await engine.stop();
  return collect(failing, due, sets, rpcs, durationMs);
}

async function baseline(dir: string, p: Params): Promise<Run> {
  const { daemon, ids } = healthyFleet(dir, p.threads);
  const session = await daemon.connector({ requestTimeoutMs: 60_000 })(IGNORE_EVENTS);
  const due = new Map<string, number>();
  const poller = new PollingReconciler(
    session,
    systemClock,
    { pollMs: 1_000, baseDelayMs: p.baseDelayMs, maxDelayMs: p.baseDelayMs },
    rng(1),
    {
      onScheduled: (id, _turn, dueAt) => due.set(id, dueAt),
    },
  );
  await poller.start();
  const sets = watchSets(daemon);
  const before = daemon.requests.length;
  const failing = ids.slice(0, p.failing);
  const durationMs = await failStaggered(daemon, failing, p, sets);
  await poller.idle();
  poller.stop();
  const rpcs = daemon.requests.length - before;
  await session.close();
  return collect(failing, due, sets, rpcs, durationMs);
}

function collect(
  ids: string[],
  due: Map<string, number>,
  sets: Map<string, number[]>,
  rpcs: number,
  durationMs: number,
): Run {
  if (sets.size !== ids.length) throw new Error(`${sets.size - ids.length} healthy threads were set`);
  const lateness: number[] = [];
  let doubleSets = 0;
  for (const id of ids) {
    const d = due.get(id);
    const s = sets.get(id);
    if (d === undefined || !s) throw new Error(`${id}: no due time or no set`);
    if (s.length > 1) doubleSets += 1;
    lateness.push(s[0] - d);
  }
  return { lateness, rpcs, recoveries: ids.length, durationMs, doubleSets };
}

export const timerPrecision: Bench = {
  id: 'timer-precision',
  title: 'Timer precision at scale: lateness of each recovery after its due time',
  async run(ctx: BenchContext): Promise<BenchSection> {
    const p: Params = ctx.quick
      ? { threads: 2_000, failing: 200, spacingMs: 10, baseDelayMs: 2_000 }
      : { threads: 10_000, failing: 1_000, spacingMs: 10, baseDelayMs: 4_000 };
    ctx.log(`product: ${p.threads} threads, ${p.failing} of them fail, one every ${p.spacingMs} ms`);
    const ours = await product(fs.mkdtempSync(path.join(ctx.tmpDir, 'product-')), p);
    ctx.log(`baseline: polling every thread once a second`);
    const base = await baseline(fs.mkdtempSync(path.join(ctx.tmpDir, 'baseline-')), p);
    const stat = (r: Run, q: number | 'max') => (q === 'max' ? Math.max(...r.lateness) : percentile(r.lateness, q));
    const p99 = stat(ours, 99);
    return {
      id: 'timer-precision',
      title: this.title,
      params: {
        ...p,
        dueSpreadMs: [p.baseDelayMs / 2, p.baseDelayMs],
        store: "JsonFileStore (the runner's), write-ahead before every set",
        clock: 'real (systemClock)',
        pollMs: 1_000,
      },
      figures: [
        figure('lateness p50', 'ms', stat(ours, 50), stat(base, 50)),
        figure('lateness p99', 'ms', p99, stat(base, 99), { text: '< 10 ms', met: p99 < 10 }),
        figure('lateness max', 'ms', stat(ours, 'max'), stat(base, 'max')),
        figure('RPCs during the run', 'RPCs', ours.rpcs, base.rpcs),
        figure('RPCs per recovery', 'RPCs', ours.rpcs / ours.recoveries, base.rpcs / base.recoveries),
        figure('threads recovered twice', 'threads', ours.doubleSets, base.doubleSets, {
          text: '0',
          met: ours.doubleSets === 0,
        }),
      ],
      notes: [
        `${p.threads} threads watched (armed and subscribed before the first failure), ${p.failing} of them failed; every failure was recovered by both, no healthy thread was set; the run lasted ${(ours.durationMs / 1000).toFixed(1)} s (product) and ${(base.durationMs / 1000).toFixed(1)} s (baseline).`,
        'Lateness is measured at the daemon: the arrival of thread/goal/set minus the announced due time. It includes the re-reads before the set (goal, thread, turns, rollout) and the write-ahead save (one journal record); a recovery is prepared ahead of its due time, so neither delays the set unless it takes longer than the lead.',
        'Baseline: polls thread/goal/get for every thread once a second (plus thread/turns/list for blocked goals) and sets what is due; its lateness is bounded by the poll period, its RPCs grow with threads × seconds.',
        `The global limiter is opened for this run (it deliberately spaces recoveries: ${DEFAULT_OPTIONS.limiterBurst} at once, then 1 per ${DEFAULT_OPTIONS.limiterIntervalMs / 1000} s by default).`,
        'The fake daemon runs in the same process as the engine: both the product and the baseline share the event loop with it.',
      ],
    };
  },
};
