// Memory probe for the rollout benchmark: a child process that runs one lookup and prints how
// much memory it took beyond what the process held before it, as one JSON line.
//
//   node --expose-gc --max-semi-space-size=1 out/test/bench/rolloutMemory.js <kind> <warmup file> <file> [offset]
//
// kind: cold | lastMarker | incremental | baseline. The lookup runs once on the small warm-up
// file first (so compiling the code is not counted), then the heap is collected and the
// lookup runs on <file>, sampling heapUsed + arrayBuffers (and RSS) at every read (product)
// or every line (baseline). A 1 MiB young generation keeps garbage from hiding in the figure:
// what is counted is what is live, plus at most about that much garbage not yet collected.
import { baseline, productCold, productIncremental, productLastMarker, type Sampler } from './rolloutLookups';

const KINDS = ['cold', 'lastMarker', 'incremental', 'baseline'] as const;
type Kind = (typeof KINDS)[number];

async function run(kind: Kind, path: string, offset: number, sample?: Sampler): Promise<unknown> {
  switch (kind) {
    case 'cold':
      return productCold(path, sample);
    case 'lastMarker':
      return productLastMarker(path, sample);
    case 'incremental':
      return productIncremental(path, offset, sample);
    case 'baseline':
      return baseline(path, sample);
  }
}

async function main(): Promise<void> {
  const [kind, warmup, path, offsetArg] = process.argv.slice(2);
  if (!KINDS.includes(kind as Kind) || !warmup || !path)
    throw new Error(`usage: rolloutMemory <${KINDS.join('|')}> <warmup file> <file> [offset]`);
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  const offset = Number(offsetArg ?? 0);
  await run(kind as Kind, warmup, 0);
  gc();
  gc();
  const m0 = process.memoryUsage();
  const before = m0.heapUsed + m0.arrayBuffers;
  let peak = before;
  let peakRss = m0.rss;
  const sample = () => {
    const m = process.memoryUsage();
    peak = Math.max(peak, m.heapUsed + m.arrayBuffers);
    peakRss = Math.max(peakRss, m.rss);
  };
  const result = await run(kind as Kind, path, offset, sample);
  sample();
  process.stdout.write(`${JSON.stringify({ extraBytes: peak - before, extraRssBytes: peakRss - m0.rss, result })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
