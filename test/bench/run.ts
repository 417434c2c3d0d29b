// `npm run bench`: runs every benchmark beside its naive baseline, prints a table and writes
// bench/results.json (and .md). Flags: --quick (smaller sizes), --only id[,id] (some of them;
// the other sections of an existing results file are kept), --out file (another results file).
// A section this machine cannot run (activation without the headless VS Code of
// .ci/install-vscode.sh) is reported as skipped, with the reason, and the others still run.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BENCHES } from './registry';
import type { Bench, BenchSection, Figure } from './types';
import { MissingToolError } from '../vscode/paths';

interface Flags {
  quick: boolean;
  only: string[] | null;
  out: string;
}

function parseFlags(argv: string[]): Flags {
  const flags: Flags = { quick: false, only: null, out: path.join(repoRoot(), 'bench', 'results.json') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--quick') flags.quick = true;
    else if (a === '--only') flags.only = (argv[++i] ?? '').split(',').filter(Boolean);
    else if (a === '--out') flags.out = path.resolve(argv[++i] ?? '');
    else throw new Error(`unknown flag ${a}; flags: --quick, --only id[,id], --out file`);
  }
  return flags;
}

function repoRoot(): string {
  // out/test/bench/run.js → the repository
  return path.resolve(__dirname, '..', '..', '..');
}

function fmt(n: number | null): string {
  if (n === null) return '—';
  if (!Number.isFinite(n)) return String(n);
  return n.toLocaleString('en-US', { maximumFractionDigits: Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 1 ? 2 : 4 });
}

function table(section: BenchSection): string {
  if (section.skipped !== undefined) return `## ${section.title} (${section.id})\n  skipped: ${section.skipped}`;
  const rows = section.figures.map((f: Figure) => [
    f.metric,
    `${fmt(f.value)} ${f.unit}`,
    f.baseline === null ? '—' : `${fmt(f.baseline)} ${f.unit}`,
    f.ratio === null ? '—' : `${fmt(f.ratio)}×`,
    f.target === undefined ? '' : `${f.target} ${f.met ? 'met' : 'MISSED'}`,
  ]);
  const head = ['metric', 'product', 'baseline', 'baseline ÷ product', 'target'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [
    `## ${section.title} (${section.id})`,
    line(head),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...rows.map(line),
    ...section.notes.map((n) => `  · ${n}`),
  ].join('\n');
}

/** The same tables as Markdown, for bench/results.md. */
function markdown(section: BenchSection): string {
  if (section.skipped !== undefined) return [`### ${section.title}`, '', `Skipped: ${section.skipped}`, ''].join('\n');
  const cell = (f: Figure) => [
    f.metric,
    `${fmt(f.value)} ${f.unit}`,
    f.baseline === null ? '—' : `${fmt(f.baseline)} ${f.unit}`,
    f.ratio === null ? '—' : `${fmt(f.ratio)}×`,
    f.target === undefined ? '' : `${f.target}: ${f.met ? 'met' : '**missed**'}`,
  ];
  return [
    `### ${section.title}`,
    '',
    '| metric | product | baseline | baseline ÷ product | target |',
    '|---|---|---|---|---|',
    ...section.figures.map((f) => `| ${cell(f).join(' | ')} |`),
    '',
    ...section.notes.map((n) => `- ${n}`),
    '',
  ].join('\n');
}

async function main(): Promise<number> {
  const flags = parseFlags(process.argv.slice(2));
  const chosen = flags.only ? BENCHES.filter((b) => flags.only!.includes(b.id)) : BENCHES;
  if (flags.only) {
    const unknown = flags.only.filter((id) => !BENCHES.some((b) => b.id === id));
    if (unknown.length > 0)
      throw new Error(`no benchmark ${unknown.join(', ')}; there are: ${BENCHES.map((b) => b.id).join(', ')}`);
  }
  const started = new Date();
  const sections: BenchSection[] = [];
  const failed: { id: string; error: string }[] = [];
  const skipped: { id: string; reason: string }[] = [];
  const skip = (bench: Bench, reason: string) => {
    skipped.push({ id: bench.id, reason });
    const section = { id: bench.id, title: bench.title, params: {}, figures: [], notes: [], skipped: reason };
    sections.push({ ...section, measuredAt: new Date().toISOString() });
    process.stdout.write(`${table(section)}\n`);
  };
  for (const bench of chosen) {
    const unavailable = bench.unavailable?.() ?? null;
    if (unavailable !== null) {
      process.stdout.write(`\n… ${bench.title}\n`);
      skip(bench, unavailable);
      continue;
    }
    const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), `cgr-bench-${bench.id}-`));
    const t0 = performance.now();
    process.stdout.write(`\n… ${bench.title}\n`);
    try {
      const section = await bench.run({ quick: flags.quick, tmpDir, log: (l) => process.stdout.write(`    ${l}\n`) });
      section.measuredAt = new Date().toISOString();
      sections.push(section);
      process.stdout.write(`${table(section)}\n  (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
    } catch (error) {
      if (error instanceof MissingToolError) {
        skip(bench, error.message);
        continue;
      }
      const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
      failed.push({ id: bench.id, error: text });
      process.stdout.write(`!! ${bench.id} failed: ${text}\n`);
    } finally {
      fs.rmSync(tmpDir, { recursive: true, force: true });
    }
  }
  if (flags.only && fs.existsSync(flags.out)) {
    // Some of them: the others keep their figures from the last run (in registry order), and so
    // does a section skipped here (the top-level `skipped` says why it was not measured again).
    try {
      const previous = JSON.parse(fs.readFileSync(flags.out, 'utf8')) as { sections?: BenchSection[] };
      const fresh = new Map(sections.map((s) => [s.id, s]));
      const last = (id: string) => previous.sections?.find((s) => s.id === id && s.skipped === undefined);
      const merged = BENCHES.map((b) => {
        const now = fresh.get(b.id);
        return now === undefined || now.skipped !== undefined ? (last(b.id) ?? now) : now;
      }).filter((s): s is BenchSection => s !== undefined);
      sections.splice(0, sections.length, ...merged);
    } catch (error) {
      process.stdout.write(
        `(could not read ${flags.out} to keep its other sections: ${error instanceof Error ? error.message : String(error)})\n`,
      );
    }
  }
  const missed = sections.flatMap((s) =>
    s.figures.filter((f) => f.met === false).map((f) => `${s.id}: ${f.metric} (${f.target})`),
  );
  const results = {
    generatedAt: started.toISOString(),
    durationS: Math.round((Date.now() - started.getTime()) / 100) / 10,
    quick: flags.quick,
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
    },
    ratio: 'baseline ÷ product: how many times better the product is (every metric here is lower-is-better)',
    sections,
    targetsMissed: missed,
    skipped,
    failed,
  };
  fs.mkdirSync(path.dirname(flags.out), { recursive: true });
  fs.writeFileSync(flags.out, `${JSON.stringify(results, null, 2)}\n`);
  const md = flags.out.replace(/\.json$/, '') + '.md';
  const header = `Generated by \`npm run bench\` on ${results.generatedAt} (${results.machine.cpus} × ${results.machine.cpuModel}, ${results.machine.memoryGiB} GiB, Node ${results.machine.node})${flags.quick ? ', --quick' : ''}.\n\n`;
  fs.writeFileSync(md, header + sections.map(markdown).join('\n'));
  process.stdout.write(`\nwrote ${flags.out} and ${md}\n`);
  if (missed.length > 0) process.stdout.write(`targets missed:\n${missed.map((m) => `  - ${m}`).join('\n')}\n`);
  if (skipped.length > 0)
    process.stdout.write(`skipped (not measured on this machine): ${skipped.map((s) => s.id).join(', ')}\n`);
  if (failed.length > 0) process.stdout.write(`failed: ${failed.map((f) => f.id).join(', ')}\n`);
  return failed.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
