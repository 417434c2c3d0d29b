// Bench: the look at the whole Codex home. 1,000 threads another Codex app holds (listed
// `notLoaded`, goals active, a few blocked by a failed turn) on the fake daemon, for five minutes
// of fake time with the shipped 60 s resync; in minute 3 five of them move (a turn, a goal change:
// their `updatedAt` moves). Counted: the RPCs each resync after the first sends, and how many of
// them read a goal. Baseline on its own copy of the same fleet and the same moves: the plain way,
// every page of `thread/list` and one `thread/goal/get` per thread not loaded, every resync.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Engine } from '../../src/core/engine';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import type { DaemonSession } from '../../src/protocol/daemon';
import { JsonFileStore } from '../../src/store/jsonFileStore';
import { FakeClock } from '../support/fakeClock';
import { FakeDaemon, testTurn } from '../support/fakeDaemon';
import { rng } from '../support/random';
import { IGNORE_EVENTS } from './baselines/ignoreEvents';
import { figure, type Bench, type BenchContext, type BenchSection } from './types';
import { immediate } from '../support/wait';

interface Params {
  threads: number;
  blocked: number;
  moved: number;
  minutes: number;
  resyncS: number;
}

interface Cost {
  /** RPCs per resync after the first, on average. */
  perResync: number;
  /** thread/goal/get per resync after the first, on average. */
  goalReadsPerResync: number;
  /** Goal reads in the resync after the moves (the product: exactly the threads that moved). */
  goalReadsAfterMove: number;
  resyncs: number;
  cpuMs: number;
  shown: number;
}

const flush = () => immediate();

function fleet(dir: string, p: Params, clock: FakeClock): { daemon: FakeDaemon; ids: string[] } {
  const daemon = new FakeDaemon(dir);
  const ids: string[] = [];
  const nowS = Math.floor(clock.now() / 1000);
  for (let i = 0; i < p.threads; i++) {
    const id = `elsewhere-${String(i).padStart(5, '0')}`;
    const blocked = i < p.blocked;
    const t = daemon.addThread(
      id,
      blocked ? 'blocked' : 'active',
      blocked ? testTurn('turn-1', 'failed') : testTurn('turn-1', 'inProgress'),
    );
    t.loaded = false;
    t.elsewhere = true;
    t.updatedAt = nowS - 3600 - i;
    ids.push(id);
  }
  return { daemon, ids };
}

/** Minute `atMinute`: `moved` threads change in the other app (a turn ends: their updatedAt moves). */
function move(daemon: FakeDaemon, ids: string[], p: Params, clock: FakeClock): void {
  for (const id of ids.slice(p.blocked, p.blocked + p.moved)) {
    const t = daemon.thread(id);
    t.turn = testTurn('turn-2', 'inProgress');
    t.updatedAt = Math.floor(clock.now() / 1000);
  }
}

async function measure(
  p: Params,
  daemon: FakeDaemon,
  ids: string[],
  clock: FakeClock,
  idle: () => Promise<void>,
  resyncAt: (second: number) => Promise<void>,
): Promise<Omit<Cost, 'shown'>> {
  const perResync: { rpcs: number; goals: number }[] = [];
  let afterMove: number | null = null;
  let moved = false;
  const cpu = process.cpuUsage();
  for (let s = 1; s <= p.minutes * 60; s++) {
    const from = daemon.requests.length;
    if (s === 150) {
      move(daemon, ids, p, clock);
      moved = true;
    }
    await clock.advance(1_000);
    await flush();
    await resyncAt(s);
    await idle();
    // A resync is the second whose requests hold the home's thread/list.
    const slice = daemon.requests.slice(from);
    if (!slice.some((m) => m.method === 'thread/list')) continue;
    const goals = slice.filter((m) => m.method === 'thread/goal/get').length;
    perResync.push({ rpcs: slice.length, goals });
    if (moved && afterMove === null) afterMove = goals;
  }
  const d = process.cpuUsage(cpu);
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  return {
    perResync: avg(perResync.map((x) => x.rpcs)),
    goalReadsPerResync: avg(perResync.map((x) => x.goals)),
    goalReadsAfterMove: afterMove ?? 0,
    resyncs: perResync.length,
    cpuMs: (d.user + d.system) / 1000,
  };
}

async function product(dir: string, p: Params): Promise<Cost> {
  const clock = new FakeClock();
  const { daemon, ids } = fleet(dir, p, clock);
  const engine = new Engine(DEFAULT_OPTIONS, {
    connect: daemon.connector(),
    store: new JsonFileStore(path.join(dir, 'state.json')),
    clock,
    random: rng(3),
    onDecision: () => undefined,
  });
  await engine.start();
  for (let i = 0; i < 200 && engine.watches().length < p.threads; i++) {
    await flush();
    await engine.idle();
  }
  if (engine.watches().length !== p.threads)
    throw new Error(`the first look showed ${engine.watches().length} of ${p.threads} goals of other apps`);
  // The resync timer is the engine's own (the shipped 60 s).
  const cost = await measure(
    p,
    daemon,
    ids,
    clock,
    () => engine.idle(),
    () => Promise.resolve(),
  );
  const shown = engine.watches().filter((w) => w.state.kind === 'elsewhere').length;
  await engine.stop();
  return { ...cost, shown };
}

/** The plain way: every page, and every goal of a thread not loaded, at every resync. */
async function plainLook(session: DaemonSession): Promise<void> {
  let cursor: string | null = null;
  do {
    const page = await session.listThreads(cursor, 100);
    for (const t of page.threads) if (t.status.type === 'notLoaded') await session.getGoal(t.id);
    cursor = page.nextCursor;
  } while (cursor);
}

async function baseline(dir: string, p: Params): Promise<Cost> {
  const clock = new FakeClock();
  const { daemon, ids } = fleet(dir, p, clock);
  const session = await daemon.connector()(IGNORE_EVENTS);
  await plainLook(session);
  const cost = await measure(
    p,
    daemon,
    ids,
    clock,
    () => Promise.resolve(),
    (second) => (second % p.resyncS === 0 ? plainLook(session) : Promise.resolve()),
  );
  await session.close();
  return { ...cost, shown: p.threads };
}

export const homeScanBench: Bench = {
  id: 'home-scan',
  title: 'The look at the Codex home: goals other Codex apps hold, over minutes of fake time',
  async run(ctx: BenchContext): Promise<BenchSection> {
    const p: Params = ctx.quick
      ? { threads: 200, blocked: 5, moved: 5, minutes: 5, resyncS: 60 }
      : { threads: 1_000, blocked: 10, moved: 5, minutes: 5, resyncS: 60 };
    ctx.log(`product: ${p.threads} threads in another app, ${p.minutes} min of fake time`);
    const ours = await product(fs.mkdtempSync(path.join(ctx.tmpDir, 'product-')), p);
    ctx.log('baseline: every page and every goal at every resync');
    const base = await baseline(fs.mkdtempSync(path.join(ctx.tmpDir, 'baseline-')), p);
    return {
      id: 'home-scan',
      title: this.title,
      params: { ...p, clock: 'fake, advanced in 1 s steps', daemon: 'the fake daemon (thread/list paged by limit)' },
      figures: [
        figure('RPCs per resync after the first', 'RPCs', ours.perResync, base.perResync),
        figure('goal reads per resync after the first', 'RPCs', ours.goalReadsPerResync, base.goalReadsPerResync),
        figure('goal reads in the resync after the moves', 'RPCs', ours.goalReadsAfterMove, base.goalReadsAfterMove, {
          text: `= ${p.moved} (the threads that moved)`,
          met: ours.goalReadsAfterMove === p.moved,
        }),
        figure('CPU over the run', 'ms', ours.cpuMs, base.cpuMs),
      ],
      notes: [
        `The engine resynced ${ours.resyncs} times after its first look (every ${p.resyncS} s) and showed ${ours.shown} of ${p.threads} goals as in another Codex app.`,
        'The product lists newest first from the state DB down to its last mark (pages of 25 after the first look) and reads goals only of threads whose updatedAt moved; the blocked ones were read once, at the first look, with their newest turn.',
        'Baseline: every page of 100, then thread/goal/get for every thread not loaded, at every resync (no marks).',
        'Real costs per call are in docs/daemon-behaviour.md (k): all 200 threads listed from the state DB in about 26 ms, a goal read about 2.6 ms (0.169.0).',
      ],
    };
  },
};
