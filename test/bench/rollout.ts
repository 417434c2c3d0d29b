// Rollout intent lookup (issue item 3): how fast, and in how much memory, the product learns the
// user's intent from a Codex rollout of 1, 64 and 512 MiB, beside a baseline that reads and
// parses the whole file.
//
// One file per size, written by streaming appends and grown in stages so that each stage is
// one scenario (the file is never built in memory):
//   C. the user set the goal (marker + activation) near the start, nothing since: the worst
//      case for the product's cold lookup, which must then read back to near the start;
//   A. + an automatic re-activation (a recovery) and 2 MiB of work since: the last user
//      marker is near the start, the last activation near the end;
//   B. + the user paused the goal (marker + goal event) and 64 KiB of work since: the last
//      user marker is near the end.
// In each stage: the cold lookup (the engine's first look after arming, and `findLastMarker`)
// beside the baseline; in A and B, then, incremental lookups after small appends, beside the
// baseline re-reading the file. Memory is measured in child processes (rolloutMemory.ts); the
// timing and the memory probes are rolloutTiming.ts.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Marker } from '../../src/model/watch';
import { DEFAULT_CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES } from '../../src/rollout/rolloutFile';
import { goalEvent, noiseLine, realMarker, RolloutWriter, toolOutput } from '../support/rolloutLines';
import { rng } from '../support/random';
import {
  baseline,
  type BaselineAnswer,
  type Intent,
  productCold,
  productIncremental,
  productLastMarker,
} from './rolloutLookups';
import { ioFloor, median, probeMedian, spread, type Spread, timed, warmCache } from './rolloutTiming';
import { type Bench, type BenchContext, type BenchSection, figure, type Figure, percentile } from './types';

const KiB = 1024;
const MiB = 1024 * KiB;

const SIZES_MIB = [1, 64, 512];
const QUICK_SIZES_MIB = [1, 64];
const REPS = { cold: 5, baseline: 3, incremental: 31 };
/** One multi-MB tool output (1–5 MiB) every this many bytes of file. */
const HUGE_EVERY = 24 * MiB;
/** Work since the automatic re-activation in stage A (smaller in a file too small for it). */
const recentTail = (size: number) => Math.min(2 * MiB, Math.floor(size / 4));
/** Work since the user's pause in stage B. */
const endTail = (size: number) => Math.min(64 * KiB, Math.floor(size / 16));
/** How much more memory the product's cold lookup may take on the largest file than on the 1 MiB one (see notes). */
const MEMORY_SLACK = 2 * MiB;
const TARGET_COLD_RATIO = 100;
const TARGET_INCREMENTAL_MS = 2;

interface Stats {
  lines: number;
  hugeLines: number;
  longestLine: number;
}

/** Appends realistic work (reasoning, tool calls, outputs, token counts; some multi-MB outputs) up to `until` bytes. */
function work(
  w: RolloutWriter,
  rand: () => number,
  until: number,
  stats: Stats,
  state: { i: number; nextHuge: number },
): void {
  while (w.offset < until) {
    let line: string;
    if (w.offset >= state.nextHuge && until - w.offset > 8 * MiB) {
      line = toolOutput(rand, Math.floor((1 + 4 * rand()) * MiB));
      state.nextHuge += HUGE_EVERY;
      stats.hugeLines += 1;
    } else {
      line = noiseLine(rand, state.i++ % 17 === 5, { activations: false });
    }
    stats.longestLine = Math.max(stats.longestLine, Buffer.byteLength(line));
    stats.lines += 1;
    w.line(line);
  }
}

function same(what: string, a: unknown, b: unknown): void {
  if (JSON.stringify(a) !== JSON.stringify(b))
    throw new Error(`${what}: the product says ${JSON.stringify(a)}, the baseline ${JSON.stringify(b)}`);
}

const mib = (bytes: number) => bytes / MiB;

interface StageResult {
  size: number;
  cold: { product: number; baseline: number; bytesRead: number };
  lastMarker: { product: number; bytesRead: number };
  memory: {
    product: number;
    productRss: number;
    lastMarker: number | null;
    baseline: number | null;
    baselineRss: number | null;
  };
  incremental?: {
    product: number;
    baseline: number;
    bytesRead: number;
    appended: number;
    memory: number;
    spread: Spread;
    floor: Spread;
  };
}

export const rolloutBench: Bench = {
  id: 'rollout',
  title: 'Rollout intent lookup',
  async run(ctx: BenchContext): Promise<BenchSection> {
    const sizes = ctx.quick ? QUICK_SIZES_MIB : SIZES_MIB;
    const loadBefore = os.loadavg()[0];
    // A small rollout for the memory probe's warm-up run.
    const warmup = path.join(ctx.tmpDir, 'warmup.jsonl');
    {
      const w = new RolloutWriter(warmup);
      const rand = rng(99);
      w.line(realMarker('active', { objective: 'warm up' }));
      w.line(goalEvent('active'));
      for (let i = 0; i < 100; i++) w.line(noiseLine(rand, i % 17 === 5, { activations: false }));
      w.line(realMarker('paused'));
      w.close();
    }

    const figures: Figure[] = [];
    const perSize: Record<string, unknown> = {};
    const results = new Map<string, StageResult>(); // `${sizeMiB}/${stage}`
    for (const sizeMiB of sizes) {
      const target = sizeMiB * MiB;
      const file = path.join(ctx.tmpDir, `rollout-${sizeMiB}MiB.jsonl`);
      const rand = rng(1000 + sizeMiB);
      const stats: Stats = { lines: 0, hugeLines: 0, longestLine: 0 };
      const state = { i: 0, nextHuge: HUGE_EVERY };
      const w = new RolloutWriter(file);
      const t0 = performance.now();

      // Stage C: the user set the goal near the start; work since, up to the size minus the tails to come.
      w.line(
        JSON.stringify({
          type: 'session_meta',
          payload: { id: `thread-${sizeMiB}`, cwd: '/repo', originator: 'codex_cli_rs' },
        }),
      );
      work(w, rand, 16 * KiB, stats, state);
      const goalSet: Marker = {
        status: 'active',
        offset: w.line(realMarker('active', { objective: 'Keep the build green' })),
      };
      const firstActivation = w.line(goalEvent('active'));
      work(w, rand, target - recentTail(target) - endTail(target), stats, state);
      w.flush();
      ctx.log(
        `${sizeMiB} MiB: wrote ${mib(w.offset).toFixed(1)} MiB (${stats.lines} lines) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );

      const stage = async (
        name: 'C' | 'A' | 'B',
        expect: { armOffset: number; lastMarker: Marker | null; lastMarkerAnywhere: Marker },
      ): Promise<StageResult> => {
        w.flush();
        const size = fs.statSync(file).size;
        warmCache(file);
        const checkCold = (r: Intent) =>
          same(
            `${sizeMiB} MiB ${name} cold`,
            { armOffset: r.armOffset, lastMarker: r.lastMarker },
            { armOffset: expect.armOffset, lastMarker: expect.lastMarker },
          );
        let coldBytes = 0;
        const cold = await median(
          REPS.cold,
          () => productCold(file),
          (r) => {
            checkCold(r);
            coldBytes = r.bytesRead;
          },
        );
        // findLastMarker is shown for A and B (in C, the last marker is where it is in A).
        let lastBytes = 0;
        const last =
          name === 'C'
            ? NaN
            : await median(
                REPS.cold,
                () => productLastMarker(file),
                (r) => {
                  same(`${sizeMiB} MiB ${name} findLastMarker`, r.marker, expect.lastMarkerAnywhere);
                  lastBytes = r.bytesRead;
                },
              );
        const base = await median(
          REPS.baseline,
          () => baseline(file),
          (r: BaselineAnswer) => {
            same(
              `${sizeMiB} MiB ${name} baseline`,
              { armOffset: r.armOffset, lastMarker: r.lastMarker, lastMarkerAnywhere: r.lastMarkerAnywhere },
              expect,
            );
            if (r.bytesRead !== size) throw new Error(`the baseline read ${r.bytesRead} of ${size} bytes`);
          },
        );
        // Memory: the median of 3 probes where a probe is cheap, 1 where it reads the whole file.
        const memCold = await probeMedian(name === 'C' ? 1 : 3, 'cold', warmup, file);
        for (const r of memCold.results) checkCold(r as Intent);
        const memLast = name === 'C' ? null : await probeMedian(1, 'lastMarker', warmup, file);
        const memBase = name === 'C' ? null : await probeMedian(1, 'baseline', warmup, file);
        ctx.log(
          `${sizeMiB} MiB ${name}: cold ${cold.toFixed(2)} ms (${mib(coldBytes).toFixed(2)} MiB read, ${mib(memCold.bytes).toFixed(2)} MiB), findLastMarker ${last.toFixed(2)} ms, baseline ${base.toFixed(0)} ms (${memBase ? mib(memBase.bytes).toFixed(2) : '–'} MiB)`,
        );
        return {
          size,
          cold: { product: cold, baseline: base, bytesRead: coldBytes },
          lastMarker: { product: last, bytesRead: lastBytes },
          memory: {
            product: memCold.bytes,
            productRss: memCold.rss,
            lastMarker: memLast?.bytes ?? null,
            baseline: memBase?.bytes ?? null,
            baselineRss: memBase?.rss ?? null,
          },
        };
      };

      /** Appends a few realistic lines with a user marker, `reps` times, timing the scan from the stored offset. */
      const incremental = async (name: string, r: StageResult, from: number): Promise<void> => {
        const times: number[] = [];
        const floors: number[] = [];
        let bytesRead = 0;
        let appended = 0;
        let stored = from;
        let lastAppended: Marker | null = null;
        for (let i = 0; i < REPS.incremental; i++) {
          const start = w.offset;
          w.line(noiseLine(rand, false, { activations: false }));
          lastAppended = { status: 'paused', offset: w.line(realMarker('paused')) };
          w.line(goalEvent('paused'));
          w.line(noiseLine(rand, false, { activations: false }));
          w.flush();
          appended += w.offset - start;
          // The floor goes first in every other round: whichever runs first pays for waking the thread pool.
          if (i % 2 === 0) floors.push((await timed(() => ioFloor(file, stored)))[0]);
          const [ms, res] = await timed(() => productIncremental(file, stored));
          if (i % 2 === 1) floors.push((await timed(() => ioFloor(file, stored)))[0]);
          same(`${sizeMiB} MiB ${name} incremental`, res.last, lastAppended);
          if (res.nextOffset !== w.offset)
            throw new Error(`incremental scan stopped at ${res.nextOffset}, file ends at ${w.offset}`);
          bytesRead += res.bytesRead;
          stored = res.nextOffset;
          times.push(ms);
        }
        // The baseline has no stored offset: it reads the whole file again.
        const base = await median(
          REPS.baseline,
          () => baseline(file),
          (b) => same(`${sizeMiB} MiB ${name} baseline after appends`, b.lastMarkerAnywhere, lastAppended),
        );
        // Memory of one more incremental lookup, after one more append.
        const before = w.offset;
        w.line(realMarker('paused'));
        w.flush();
        const mem = await probeMedian(3, 'incremental', warmup, file, before);
        r.incremental = {
          product: percentile(times, 50),
          baseline: base,
          bytesRead: bytesRead / REPS.incremental,
          appended: appended / REPS.incremental,
          memory: mem.bytes,
          spread: spread(times),
          floor: spread(floors),
        };
        ctx.log(
          `${sizeMiB} MiB ${name}: incremental ${r.incremental.product.toFixed(3)} ms (p90 ${r.incremental.spread.p90} ms; I/O floor ${r.incremental.floor.p50} ms; ${r.incremental.bytesRead.toFixed(0)} bytes read), baseline ${base.toFixed(0)} ms`,
        );
      };

      const c = await stage('C', { armOffset: firstActivation, lastMarker: null, lastMarkerAnywhere: goalSet });
      results.set(`${sizeMiB}/C`, c);

      // Stage A: an automatic re-activation (a recovery), then work.
      const recovery = w.line(goalEvent('active'));
      work(w, rand, w.offset + recentTail(target), stats, state);
      const a = await stage('A', { armOffset: recovery, lastMarker: null, lastMarkerAnywhere: goalSet });
      results.set(`${sizeMiB}/A`, a);
      await incremental('A', a, w.offset);

      // Stage B: the user paused the goal near the end, then a little more work.
      const pause: Marker = { status: 'paused', offset: w.line(realMarker('paused')) };
      w.line(goalEvent('paused'));
      work(w, rand, w.offset + endTail(target), stats, state);
      const b = await stage('B', { armOffset: recovery, lastMarker: pause, lastMarkerAnywhere: pause });
      results.set(`${sizeMiB}/B`, b);
      await incremental('B', b, w.offset);

      w.close();
      fs.rmSync(file, { force: true });
      perSize[`${sizeMiB} MiB`] = {
        bytes: { C: c.size, A: a.size, B: b.size },
        lines: stats.lines,
        multiMBLines: stats.hugeLines,
        longestLineBytes: stats.longestLine,
        coldBytesRead: { C: c.cold.bytesRead, A: a.cold.bytesRead, B: b.cold.bytesRead },
        findLastMarkerBytesRead: { A: a.lastMarker.bytesRead, B: b.lastMarker.bytesRead },
        findLastMarkerExtraBytes: { A: a.memory.lastMarker, B: b.memory.lastMarker },
        incrementalMs: { A: a.incremental!.spread, B: b.incremental!.spread },
        ioFloorMs: { A: a.incremental!.floor, B: b.incremental!.floor },
        incrementalBytesRead: { A: a.incremental!.bytesRead, B: b.incremental!.bytesRead },
        extraRssBytes: {
          productCold: { C: c.memory.productRss, A: a.memory.productRss, B: b.memory.productRss },
          baseline: { A: a.memory.baselineRss, B: b.memory.baselineRss },
        },
      };
    }

    const largest = sizes[sizes.length - 1];
    const full = largest === 512;
    for (const [stageName, label] of [
      ['B', 'marker near end'],
      ['A', 'marker near start'],
    ] as const) {
      for (const sizeMiB of sizes) {
        const r = results.get(`${sizeMiB}/${stageName}`)!;
        const at = `${sizeMiB} MiB, ${label}`;
        const coldTarget =
          sizeMiB === 512
            ? {
                text: `≥ ${TARGET_COLD_RATIO}× faster than the baseline`,
                met: r.cold.baseline / r.cold.product >= TARGET_COLD_RATIO,
              }
            : undefined;
        figures.push(figure(`${at}: cold lookup time`, 'ms', r.cold.product, r.cold.baseline, coldTarget));
        figures.push(figure(`${at}: cold lookup bytes read`, 'MiB', mib(r.cold.bytesRead), mib(r.size)));
        figures.push(figure(`${at}: findLastMarker time`, 'ms', r.lastMarker.product, r.cold.baseline));
        const inc = r.incremental!;
        figures.push(
          figure(`${at}: incremental lookup time`, 'ms', inc.product, inc.baseline, {
            text: `< ${TARGET_INCREMENTAL_MS} ms`,
            met: inc.product < TARGET_INCREMENTAL_MS,
          }),
        );
        const small = results.get(`${sizes[0]}/${stageName}`)!;
        const memTarget =
          sizeMiB === largest && sizeMiB !== sizes[0]
            ? {
                text: `bounded: ≤ the ${sizes[0]} MiB figure + ${mib(MEMORY_SLACK)} MiB`,
                met: r.memory.product <= small.memory.product + MEMORY_SLACK,
              }
            : undefined;
        figures.push(
          figure(
            `${at}: cold lookup extra memory`,
            'MiB',
            mib(r.memory.product),
            r.memory.baseline === null ? null : mib(r.memory.baseline),
            memTarget,
          ),
        );
      }
    }
    for (const sizeMiB of sizes) {
      const r = results.get(`${sizeMiB}/C`)!;
      const at = `${sizeMiB} MiB, activation near start (worst case)`;
      figures.push(figure(`${at}: cold lookup time`, 'ms', r.cold.product, r.cold.baseline));
      figures.push(figure(`${at}: cold lookup bytes read`, 'MiB', mib(r.cold.bytesRead), mib(r.size)));
      figures.push(figure(`${at}: cold lookup extra memory`, 'MiB', mib(r.memory.product), null));
    }
    for (const sizeMiB of sizes) {
      const r = results.get(`${sizeMiB}/B`)!;
      figures.push(figure(`${sizeMiB} MiB: incremental lookup extra memory`, 'MiB', mib(r.incremental!.memory), null));
    }

    return {
      id: 'rollout',
      title: 'Rollout intent lookup',
      params: {
        sizesMiB: sizes,
        quick: ctx.quick ? 'quick run: 1 MiB and 64 MiB only (no 512 MiB file, so no 100× target)' : false,
        repetitions: {
          productCold: REPS.cold,
          findLastMarker: REPS.cold,
          baseline: REPS.baseline,
          incrementalAppends: REPS.incremental,
          memoryProbes: 'product cold A/B and incremental: median of 3; product cold C, findLastMarker, baseline: 1',
        },
        statistic: 'median',
        lineMix:
          'realistic Codex rollout lines (test/support/rolloutLines.ts): reasoning with encrypted content, shell function calls, outputs quoting a marker line (not markers), token counts, typed messages mentioning user.goal (not markers), assistant messages, every 17th line a tool output of 75–450 KB, and one tool output of 1–5 MiB per 24 MiB',
        stages: {
          C: 'the user set the goal (marker + thread_goal_updated active) 16 KiB into the file; nothing since',
          A: `C + an automatic re-activation and min(2 MiB, size/4) of work since`,
          B: `A + a user pause (marker + goal event) and min(64 KiB, size/16) of work since`,
        },
        incremental: `${REPS.incremental} times: append 4 lines (work, a user pause marker, its goal event, work), then scan from the stored offset; perSize.incrementalBytesRead is the mean read per scan`,
        chunkBytes: DEFAULT_CHUNK_BYTES,
        maxLineBytes: DEFAULT_MAX_LINE_BYTES,
        memoryProbe:
          'child process per lookup: node --expose-gc --max-semi-space-size=1; warm-up run on a small file, gc, then peak of heapUsed + arrayBuffers (sampled at every read / every baseline line) minus before',
        perSize,
        loadAverageAtStart: Number(loadBefore.toFixed(2)),
        loadAverageAtEnd: Number(os.loadavg()[0].toFixed(2)),
      },
      figures,
      notes: [
        "Baseline: reads the whole file line by line (a 64 KiB read stream and readline) and JSON.parses every line, applying the product's own marker and goal-line tests to each parsed line; it answers the last activation, the last marker since it, and the last marker anywhere. It streams because 512 MiB is beyond V8's maximum string length: a readFile + split baseline cannot work at that size.",
        "Cold lookup = what the engine does the first time it looks at a rollout after arming: back from the end to the goal's last activation (findLastActivation), then forward from it (scanForMarkers). Its cost follows the bytes since the last activation, not the file size. findLastMarker (the last marker anywhere, backwards) is shown beside it; the engine does not call it. Every answer was checked against the baseline's.",
        'Stage C (activation near start) is the worst case for the cold lookup: the goal was last set active near the start, so it reads the file twice (backwards, then forwards), in bounded memory. It only happens the first time a thread is armed (later looks are incremental, from the stored offset).',
        'Incremental lookup = the scan from the stored offset after a few appended lines, what the engine does on every later look; the baseline has no stored offset and re-reads the whole file. Its cost is 4 async file operations (open, stat, read, close) on ~8 KB whatever the file size; params.perSize gives its p10/p50/p90 and the same 4 operations alone on the same file, timed just before or just after each lookup in turn (ioFloorMs): when the machine is loaded, thread-pool scheduling latency dominates both.',
        'Page cache: the file was read once before each stage, so product and baseline both read from the page cache; these are not cold-disk figures.',
        `Memory: extra heapUsed + arrayBuffers of one lookup in a fresh child process (after a warm-up run and gc), with a 1 MiB young generation so garbage not yet collected counts for at most about that much; the figure is a peak of samples (every read / every baseline line) and can be off by a few hundred KB between runs. The product holds at most chunk + max line = ${(DEFAULT_CHUNK_BYTES + DEFAULT_MAX_LINE_BYTES) / KiB} KiB of buffers by construction; the "bounded" target allows the largest file ${mib(MEMORY_SLACK)} MiB above the smallest for that garbage. Extra RSS per lookup is in params.perSize.`,
        `The machine is shared (load average ${loadBefore.toFixed(1)} at the start): times are medians but can move by tens of percent between runs; bytes read are exact.`,
        ...(full ? [] : ['Quick run: no 512 MiB file, so the 100× target is not evaluated.']),
      ],
    };
  },
};
