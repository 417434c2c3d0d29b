// Bench 2: idle cost. 1,000 loaded, healthy threads (goal active, turn running) for five
// minutes of fake time: RPCs sent and CPU spent, against the polling baseline on its own copy
// of the same fleet. Fake time moves in one-second steps, so RPCs can be told apart by when
// they were sent: during a resync (it starts with thread/loaded/list) or between resyncs.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Engine } from '../../src/core/engine';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { JsonFileStore } from '../../src/store/jsonFileStore';
import { FakeClock } from '../support/fakeClock';
import type { FakeDaemon } from '../support/fakeDaemon';
import { healthyFleet } from '../support/fleet';
import { rng } from '../support/random';
import { PollingReconciler } from './baselines/pollingReconciler';
import { IGNORE_EVENTS } from './baselines/ignoreEvents';
import { figure, type Bench, type BenchContext, type BenchSection } from './types';
import { immediate } from '../support/wait';

interface Params {
  threads: number;
  minutes: number;
  resyncS: number;
}

interface Idle {
  rpcs: number;
  /** RPCs in one-second steps that held no resync. */
  betweenResyncs: number;
  resyncs: number;
  /** The most RPCs one thread got during one resync (thread/loaded/list not counted). */
  maxPerThreadPerResync: number;
  cpuMs: number;
}

const flush = () => immediate();

function cpuMs(since: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
}

/** Per-step accounting of the requests the daemon received. */
function account(
  requests: { method?: string; params?: Record<string, unknown> }[],
  steps: [number, number][],
): Omit<Idle, 'cpuMs' | 'rpcs'> {
  let betweenResyncs = 0;
  let resyncs = 0;
  let maxPerThread = 0;
  for (const [from, to] of steps) {
    const slice = requests.slice(from, to);
    if (slice.length === 0) continue;
    if (!slice.some((m) => m.method === 'thread/loaded/list')) {
      betweenResyncs += slice.length;
      continue;
    }
    resyncs += 1;
    const perThread = new Map<string, number>();
    for (const m of slice) {
      const id = m.params?.threadId;
      if (typeof id === 'string') perThread.set(id, (perThread.get(id) ?? 0) + 1);
    }
    maxPerThread = Math.max(maxPerThread, ...perThread.values());
  }
  return { betweenResyncs, resyncs, maxPerThreadPerResync: maxPerThread };
}

/** Fake time in one-second steps for `minutes`, waiting for the reconciler after each; what it cost. */
async function idleFor(
  minutes: number,
  daemon: FakeDaemon,
  clock: FakeClock,
  idle: () => Promise<void>,
): Promise<Idle> {
  const start = daemon.requests.length;
  const steps: [number, number][] = [];
  const cpu = process.cpuUsage();
  for (let s = 0; s < minutes * 60; s++) {
    const from = daemon.requests.length;
    await clock.advance(1_000);
    await flush();
    await idle();
    steps.push([from, daemon.requests.length]);
  }
  const spent = cpuMs(cpu);
  return { rpcs: daemon.requests.length - start, cpuMs: spent, ...account(daemon.requests, steps) };
}

async function product(dir: string, p: Params): Promise<Idle> {
  const { daemon } = healthyFleet(dir, p.threads);
  const clock = new FakeClock();
  const engine = new Engine(
    { ...DEFAULT_OPTIONS, resyncMs: p.resyncS * 1000 },
    {
      connect: daemon.connector(),
      store: new JsonFileStore(path.join(dir, 'state.json')),
      clock,
      random: rng(2),
      onDecision: () => undefined,
    },
  );
  await engine.start();
  for (let i = 0; i < 100 && engine.watches().filter((w) => w.state.kind === 'running').length < p.threads; i++) {
    await flush();
    await engine.idle();
  }
  if (engine.watches().length !== p.threads)
    throw new Error(`only ${engine.watches().length} of ${p.threads} threads armed`);
  const idle = await idleFor(p.minutes, daemon, clock, () => engine.idle());
  await engine.stop();
  return idle;
}

async function baseline(dir: string, p: Params): Promise<Idle> {
  const { daemon } = healthyFleet(dir, p.threads);
  const clock = new FakeClock();
  const session = await daemon.connector()(IGNORE_EVENTS);
  const poller = new PollingReconciler(
    session,
    clock,
    { pollMs: 1_000, baseDelayMs: DEFAULT_OPTIONS.baseDelayMs, maxDelayMs: DEFAULT_OPTIONS.maxDelayMs },
    rng(2),
  );
  await poller.start();
  const idle = await idleFor(p.minutes, daemon, clock, () => poller.idle());
  poller.stop();
  await session.close();
  return idle; // the baseline has no resync: every step is between resyncs
}

export const idleCost: Bench = {
  id: 'idle-cost',
  title: 'Idle cost: loaded, healthy threads over minutes of fake time',
  async run(ctx: BenchContext): Promise<BenchSection> {
    const p: Params = ctx.quick
      ? { threads: 200, minutes: 2, resyncS: 60 }
      : { threads: 1_000, minutes: 5, resyncS: 60 };
    ctx.log(`product: ${p.threads} threads, ${p.minutes} min of fake time`);
    const ours = await product(fs.mkdtempSync(path.join(ctx.tmpDir, 'product-')), p);
    ctx.log('baseline: polling every thread once a second');
    const base = await baseline(fs.mkdtempSync(path.join(ctx.tmpDir, 'baseline-')), p);
    const expectedResyncs = Math.floor((p.minutes * 60) / p.resyncS);
    return {
      id: 'idle-cost',
      title: this.title,
      params: { ...p, clock: 'fake, advanced in 1 s steps', store: "JsonFileStore (the runner's)", pollMs: 1_000 },
      figures: [
        figure('RPCs in total', 'RPCs', ours.rpcs, base.rpcs),
        figure('RPCs between resyncs', 'RPCs', ours.betweenResyncs, base.betweenResyncs, {
          text: '0',
          met: ours.betweenResyncs === 0,
        }),
        figure('most RPCs for one thread in one resync', 'RPCs', ours.maxPerThreadPerResync, null, {
          text: '≤ 1',
          met: ours.maxPerThreadPerResync <= 1,
        }),
        figure(
          'RPCs per thread per minute',
          'RPCs',
          ours.rpcs / p.threads / p.minutes,
          base.rpcs / p.threads / p.minutes,
        ),
        figure('CPU', 'ms', ours.cpuMs, base.cpuMs),
      ],
      notes: [
        `The engine resynced ${ours.resyncs} times (every ${p.resyncS} s: expected ${expectedResyncs}); each resync is one thread/loaded/list, one thread/goal/get per thread and one thread/list of the home (goals of other Codex apps: none here).`,
        'Baseline: thread/goal/get for every thread once a second, no events; it has no resync, so all its RPCs fall between resyncs.',
        'CPU is the whole process (engine or baseline, the in-process fake daemon, the JSON-RPC client on both ends); the same for both, so the ratio is what counts.',
        'Healthy threads here are quiet; a real running turn also streams events, which the engine reads without any RPC.',
      ],
    };
  },
};
