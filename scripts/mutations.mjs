// Shows that the suite bites: puts one deliberate one-line fault at a time into a copy of the
// product, runs the test that guards the invariant it breaks, and records whether that test
// turned red (it must). The working tree is never touched: each run copies the tracked files
// into a private temporary directory (node_modules linked), builds there, and removes it.
//
//   node scripts/mutations.mjs            every mutation
//   node scripts/mutations.mjs ID...      only those
//   node scripts/mutations.mjs --list     the mutations and their guards
//   node scripts/mutations.mjs --table    every fault's invariant, guard and last result, as a Markdown table
//   node scripts/mutations.mjs --doc      docs/testing.md's block (counts, faults by guard), from the last results
//
// Results go to docs/mutations.json (one entry per mutation: caught or not, the failing test and
// its first assertion line, the time), and then into docs/testing.md's generated block (the counts,
// the faults by the test that guards them, any not caught: scripts/mutationsDoc.mjs). A mutation
// whose anchor text is no longer found exactly once fails the script: the list follows the code.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MUTATIONS } from './mutations.list.mjs';
import { mutationsTable, updateMutationsDoc } from './mutationsDoc.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const args = process.argv.slice(2);
if (args.includes('--list')) {
  for (const m of MUTATIONS) console.log(`${m.id}\n  fault:  ${m.fault}\n  guard:  ${m.guard.file} — ${title(m)}`);
  process.exit(0);
}
if (args.includes('--table')) {
  // Every fault's invariant, guard and last result, as a Markdown table.
  console.log(mutationsTable(JSON.parse(fs.readFileSync(path.join(root, 'docs', 'mutations.json'), 'utf8'))));
  process.exit(0);
}
if (args.includes('--doc')) {
  // docs/testing.md's block (the counts, the faults by guard), from the last results, without a run.
  updateMutationsDoc(root);
  console.log('docs/testing.md: the mutations block written from docs/mutations.json');
  process.exit(0);
}
const chosen = args.length ? MUTATIONS.filter((m) => args.includes(m.id)) : MUTATIONS;
if (args.length && chosen.length !== args.length) {
  console.error(`unknown mutation: ${args.filter((a) => !MUTATIONS.some((m) => m.id === a)).join(', ')}`);
  process.exit(2);
}

function run(cmd, argv, cwd, timeoutMs = 30 * 60_000) {
  const r = spawnSync(cmd, argv, {
    cwd,
    encoding: 'utf8',
    timeout: timeoutMs,
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, CI: process.env.CI ?? '', FAULTS_NO_SHRINK: '1' },
  });
  return { status: r.status, signal: r.signal, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** A private copy of the tracked tree, with node_modules linked. */
function copyTree() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-mutant-'));
  fs.chmodSync(dir, 0o700);
  const files = run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], root)
    .out.split('\0')
    .filter(Boolean);
  for (const f of files) {
    const from = path.join(root, f);
    if (!fs.existsSync(from)) continue;
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.copyFileSync(from, path.join(dir, f));
  }
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

function build(dir) {
  // A mutant may leave a name unused (a deleted line was its only reader): not an error here.
  for (const [cmd, argv] of [
    ['npx', ['tsc', '-p', '.', '--noUnusedLocals', 'false', '--noUnusedParameters', 'false']],
    ['node', ['scripts/build.mjs']],
  ]) {
    const r = run(cmd, argv, dir);
    if (r.status !== 0) return r.out;
  }
  return null;
}

/** The guard test, alone: `node --test --test-name-pattern`. */
function guard(dir, m) {
  const file = m.guard.file.replace(/^test\//, 'out/test/').replace(/\.ts$/, '.js');
  const started = Date.now();
  const r = run(
    'node',
    [
      '--test',
      '--test-concurrency=1',
      '--test-reporter=tap',
      `--test-name-pattern=${m.guard.pattern ?? escape(m.guard.name)}`,
      file,
    ],
    dir,
  );
  const ms = Date.now() - started;
  const tests = Number(/^# pass (\d+)/m.exec(r.out)?.[1] ?? 0) + Number(/^# fail (\d+)/m.exec(r.out)?.[1] ?? 0);
  const failing = [...r.out.matchAll(/^\s*not ok \d+ - (.*)$/gm)].map((x) => x[1].trim());
  const message =
    /^\s*error: [|>]?-?\s*\n?\s*(.*)$/m.exec(r.out)?.[1]?.trim() ?? /^\s*error: '(.*)'$/m.exec(r.out)?.[1] ?? '';
  return { status: r.status, tests, failing, message, ms, out: r.out };
}

function title(m) {
  return m.guard.name ?? `/${m.guard.pattern}/`;
}

function escape(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function apply(dir, m) {
  const file = path.join(dir, m.file);
  const text = fs.readFileSync(file, 'utf8');
  const n = text.split(m.find).length - 1;
  if (n !== 1) throw new Error(`${m.id}: the anchor is found ${n} times in ${m.file} (expected once): ${m.find}`);
  fs.writeFileSync(file, text.replace(m.find, m.replace));
  return text;
}

const results = [];
const dir = copyTree();
try {
  console.log(`copy: ${dir}`);
  const broken = build(dir);
  if (broken) throw new Error(`the unmutated copy does not build:\n${broken}`);
  // Every guard must be green on the product as it is, and run at least one test: all checked on
  // the clean build first (each mutant's build then rewrites every output of the copy).
  const clean = new Map(chosen.map((m) => [m.id, guard(dir, m)]));
  for (const m of chosen) {
    const c = clean.get(m.id);
    if (c.status !== 0 || c.tests === 0) {
      results.push({
        id: m.id,
        fault: m.fault,
        guard: m.guard,
        caught: false,
        error:
          c.tests === 0
            ? 'the guard matched no test'
            : `the guard is red without the mutation: ${c.failing.join('; ')}: ${c.message}`,
        ms: c.ms,
      });
      console.log(`✗ ${m.id}: ${results.at(-1).error}`);
      continue;
    }
    let original;
    try {
      original = apply(dir, m);
    } catch (error) {
      results.push({ id: m.id, fault: m.fault, guard: m.guard, caught: false, error: error.message });
      console.log(`✗ ${error.message}`);
      continue;
    }
    try {
      const failedBuild = build(dir);
      if (failedBuild) {
        results.push({
          id: m.id,
          fault: m.fault,
          guard: m.guard,
          caught: false,
          error: `the mutant does not build: ${failedBuild.split('\n')[0]}`,
        });
        console.log(`✗ ${m.id}: ${results.at(-1).error}`);
        continue;
      }
      const r = guard(dir, m);
      const caught = r.status !== 0 && r.failing.length > 0;
      results.push({
        id: m.id,
        fault: m.fault,
        file: m.file,
        guard: m.guard,
        caught,
        failing: r.failing.filter((f) => f !== m.guard.file),
        message: r.message,
        ms: r.ms,
      });
      console.log(
        `${caught ? '✓ caught' : '✗ MISSED'} ${m.id} by ${m.guard.file} — ${title(m)}${caught ? `: ${r.message}` : ''} (${(r.ms / 1000).toFixed(1)} s)`,
      );
      if (!caught && process.env.CGR_MUTATION_VERBOSE) console.log(r.out);
    } finally {
      fs.writeFileSync(path.join(dir, m.file), original);
    }
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}

const out = path.join(root, 'docs', 'mutations.json');
const previous = fs.existsSync(out) ? JSON.parse(fs.readFileSync(out, 'utf8')) : { results: [] };
const merged = [
  ...previous.results.filter((p) => !results.some((r) => r.id === p.id) && MUTATIONS.some((m) => m.id === p.id)),
  ...results,
];
merged.sort((a, b) => MUTATIONS.findIndex((m) => m.id === a.id) - MUTATIONS.findIndex((m) => m.id === b.id));
fs.writeFileSync(out, `${JSON.stringify({ generatedAt: new Date().toISOString(), results: merged }, null, 2)}\n`);
updateMutationsDoc(root);
const missed = results.filter((r) => !r.caught);
console.log(
  `${results.length - missed.length} of ${results.length} mutations caught; written to docs/mutations.json and docs/testing.md`,
);
process.exit(missed.length ? 1 : 0);
