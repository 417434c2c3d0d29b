// How the rollout bench (test/bench/rollout.ts) times a lookup and measures its memory: medians
// of timed runs, the memory probes in child processes (rolloutMemory.ts), the spread of a
// series, and the floor any lookup that opens the file pays.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { percentile } from './types';

const execFileAsync = promisify(execFile);
const MiB = 1024 * 1024;

/** Reads the whole file once, so that the page cache holds it before the product and the baseline are timed. */
export function warmCache(file: string): void {
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.allocUnsafe(MiB);
  try {
    while (fs.readSync(fd, buf, 0, buf.length, null) > 0);
  } finally {
    fs.closeSync(fd);
  }
}

export async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const r = await fn();
  return [performance.now() - t0, r];
}

export async function median<T>(reps: number, fn: () => Promise<T>, check: (r: T) => void): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const [ms, r] = await timed(fn);
    check(r);
    times.push(ms);
  }
  return percentile(times, 50);
}

interface Probe {
  extraBytes: number;
  extraRssBytes: number;
  result: unknown;
}

async function probe(kind: string, warmup: string, file: string, offset = 0): Promise<Probe> {
  const script = path.join(__dirname, 'rolloutMemory.js');
  const { stdout } = await execFileAsync(
    process.execPath,
    ['--expose-gc', '--max-semi-space-size=1', script, kind, warmup, file, String(offset)],
    { maxBuffer: MiB },
  );
  return JSON.parse(stdout) as Probe;
}

/** The median of `n` probes of a product lookup (cheap); a baseline probe is run once. */
export async function probeMedian(
  n: number,
  kind: string,
  warmup: string,
  file: string,
  offset = 0,
): Promise<{ bytes: number; rss: number; results: unknown[] }> {
  const runs: Probe[] = [];
  for (let i = 0; i < n; i++) runs.push(await probe(kind, warmup, file, offset));
  return {
    bytes: percentile(
      runs.map((r) => r.extraBytes),
      50,
    ),
    rss: percentile(
      runs.map((r) => r.extraRssBytes),
      50,
    ),
    results: runs.map((r) => r.result),
  };
}

export interface Spread {
  p10: number;
  p50: number;
  p90: number;
}
export function spread(ms: number[]): Spread {
  const r = (p: number) => Number(percentile(ms, p).toFixed(3));
  return { p10: r(10), p50: r(50), p90: r(90) };
}

/**
 * The least any lookup that opens the file pays: open, stat, a 1-byte read, close (4 round trips
 * through libuv's thread pool). Timed beside each incremental lookup, to tell the lookup's own
 * cost from the machine's scheduling latency.
 */
export async function ioFloor(file: string, at: number): Promise<void> {
  const fh = await fs.promises.open(file, 'r');
  try {
    await fh.stat();
    await fh.read(Buffer.alloc(1), 0, 1, Math.max(0, at - 1));
  } finally {
    await fh.close();
  }
}
