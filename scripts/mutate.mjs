#!/usr/bin/env node
// npm run mutate: StrykerJS mutates the TypeScript sources of the modules that decide
// (stryker.config.json: the tap runner over the compiled unit tests, per-test-file coverage) and
// fails unless every mutant is killed, timed out, or disabled in place with a reason
// (docs/testing.md, "Mutation score").
//
//   npm run mutate               incremental, against the committed baseline
//                                (test/mutation/deciding.baseline.json): only the mutants whose
//                                code changed, that a changed test file killed, or that a new
//                                test now covers are run again. What .ci/run runs.
//   npm run mutate -- --full     every mutant of the deciding modules, from scratch.
//   npm run mutate -- --rest [area ...]
//                                the rest of core/, leader/, store/ and model/, by area
//                                (test/mutation/scopes.json: each area's globs, recorded score and
//                                the test files left out, with why): a full run of each area named
//                                (all of them by default) that fails below its recorded score (`break`),
//                                and records the new score when it is higher. `core` is three areas
//                                (core-schedule, core-look, core-act), each a run of about 50 minutes.
//   npm run mutate -- --dry      prints what would run, runs nothing.
//
// A passing run outside CI writes the baseline (and the counts in docs/testing.md) back: commit
// them with the change. Reports for people and tools: reports/mutation/<scope>.html and .json.
//
// What incremental mode cannot see: a change outside the mutated files and the unit test files
// themselves (test/support, a module the tests call) that turns a killed mutant into a survivor.
// The full run sees it; run it before a release and after such a change.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { summarize, updateTestingDoc } from './mutationReport.mjs';

const root = path.resolve(import.meta.dirname, '..');
const argv = process.argv.slice(2);
const scopesFile = path.join(root, 'test/mutation/scopes.json');
const scopes = JSON.parse(fs.readFileSync(scopesFile, 'utf8'));
const { rest } = scopes;
const AREAS = Object.keys(rest.areas);
const usage = `usage: npm run mutate [-- --full | --rest [${AREAS.join(' | ')} ...]] [--dry]`;
for (const a of argv)
  if (!['--full', '--rest', '--dry'].includes(a) && !(argv.includes('--rest') && AREAS.includes(a))) {
    console.error(`unknown argument ${a}; ${usage}`);
    process.exit(2);
  }
const args = new Set(argv);
const scope = args.has('--rest') ? 'rest' : 'deciding';
const areas =
  scope === 'rest' ? (argv.some((a) => AREAS.includes(a)) ? argv.filter((a) => AREAS.includes(a)) : AREAS) : [];
const full = args.has('--full') || scope === 'rest';
const inCi = process.env.CI === 'true';

const reports = path.join(root, 'reports/mutation');
const baselineFile = path.join(root, 'test/mutation/deciding.baseline.json');
const hashesFile = path.join(root, 'test/mutation/deciding.tests.json');
const incrementalFile = path.join(reports, 'deciding.incremental.json');

const base = JSON.parse(fs.readFileSync(path.join(root, 'stryker.config.json'), 'utf8'));
fs.mkdirSync(reports, { recursive: true });

/** Stryker's config for one run, written beside its reports: `name` is `deciding` or `rest-<area>`. */
function configFor(name, overrides) {
  const config = {
    ...base,
    ...overrides,
    jsonReporter: { fileName: path.relative(root, path.join(reports, `${name}.json`)) },
    htmlReporter: { fileName: path.relative(root, path.join(reports, `${name}.html`)) },
    incremental: !full,
    incrementalFile: path.relative(root, incrementalFile),
  };
  const file = path.join(reports, `stryker.${name}.json`);
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  return { name, config, file, jsonReport: path.join(reports, `${name}.json`) };
}

/** An area of the rest: its globs less the deciding modules, every unit test file but those left out. */
function restConfig(area) {
  const testFiles = fs
    .readdirSync(path.join(root, 'out/test/unit'))
    .filter((n) => n.endsWith('.test.js'))
    .sort()
    .map((n) => `out/test/unit/${n}`)
    .filter((f) => rest.skipTests[f] === undefined);
  const { break: threshold } = rest.areas[area];
  return configFor(`rest-${area}`, {
    mutate: [...rest.areas[area].mutate, ...base.mutate.map((f) => `!${f}`)],
    tap: { ...base.tap, testFiles },
    // An area not measured yet (break null) records its first score, whatever it is.
    thresholds: { ...base.thresholds, low: threshold ?? 0, break: threshold },
  });
}

/** The unit test files as compiled (Stryker's tests are whole files): name → sha256. */
function testHashes() {
  const hashes = {};
  const dir = path.join(root, 'out/test/unit');
  for (const f of fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.test.js'))
    .sort())
    hashes[`out/test/unit/${f}`] = createHash('sha256')
      .update(fs.readFileSync(path.join(dir, f)))
      .digest('hex');
  return hashes;
}

/**
 * The baseline as Stryker's incremental file, less every mutant that a test file changed since
 * killed: Stryker reuses a killed mutant while its killing test keeps its name, and a tap test's
 * name is its file's, so a weakened test file would go unseen. Those mutants run again.
 */
function prepareIncremental(now) {
  if (!fs.existsSync(baselineFile)) return 'no baseline yet: every mutant runs';
  const baseline = JSON.parse(fs.readFileSync(baselineFile, 'utf8'));
  const then = fs.existsSync(hashesFile) ? JSON.parse(fs.readFileSync(hashesFile, 'utf8')) : {};
  const changedFiles = Object.keys(baseline.testFiles ?? {}).filter((f) => then[f] === undefined || then[f] !== now[f]);
  const changedIds = new Set(changedFiles.flatMap((f) => baseline.testFiles[f].tests.map((t) => t.id)));
  let dropped = 0;
  for (const file of Object.values(baseline.files)) {
    const kept = file.mutants.filter((m) => !(m.killedBy ?? []).some((id) => changedIds.has(id)));
    dropped += file.mutants.length - kept.length;
    file.mutants = kept;
  }
  fs.writeFileSync(incrementalFile, JSON.stringify(baseline));
  const names = changedFiles.map((f) => path.basename(f)).join(', ') || 'none';
  return `${changedFiles.length} test file(s) changed since the baseline (${names}): ${dropped} mutant(s) they killed run again`;
}

const build = spawnSync('npx', ['tsc', '-p', '.'], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const hashes = testHashes();
if (full) fs.rmSync(incrementalFile, { force: true });
const runs = scope === 'rest' ? areas.map(restConfig) : [configFor('deciding', {})];
console.log(`== mutate ${scope}${full ? ' (full run)' : ` (incremental: ${prepareIncremental(hashes)})`}`);
for (const r of runs) console.log(`   ${r.name}: ${r.config.mutate.join(' ')}`);
if (args.has('--dry')) process.exit(0);

/** Runs Stryker for one config; whether it passed, and its summary (null: no report). */
function runStryker(r) {
  const started = Date.now();
  fs.rmSync(r.jsonReport, { force: true });
  const run = spawnSync('npx', ['stryker', 'run', path.relative(root, r.file)], { cwd: root, stdio: 'inherit' });
  const minutes = Number(((Date.now() - started) / 60_000).toFixed(1));
  if (!fs.existsSync(r.jsonReport)) {
    console.error(`mutate: Stryker wrote no report for ${r.name} (exit ${run.status}); see its output above`);
    return { ok: false, report: null };
  }
  const report = JSON.parse(fs.readFileSync(r.jsonReport, 'utf8'));
  const s = summarize(report);
  console.log(`\n== ${r.name}: ${s.line} (${minutes} min)`);
  for (const m of s.disabled) console.log(`   disabled: ${m}`);
  const measured = { ...s.counts, score: s.score, minutes, at: new Date().toISOString().slice(0, 10) };
  return { ok: run.status === 0, report, s, measured };
}

let ok = true;
for (const r of runs) {
  const { ok: ran, report, s, measured } = runStryker(r);
  if (!report) {
    ok = false;
    continue;
  }
  let passed;
  if (scope === 'deciding') {
    for (const m of s.undetected) console.log(`   NOT KILLED: ${m}`);
    passed = ran && s.undetected.length === 0;
    if (!passed)
      console.log('A mutant of a deciding module lives: kill it with a test that states a rule (docs/testing.md).');
  } else {
    const area = r.name.slice('rest-'.length);
    const recorded = rest.areas[area].break;
    passed = ran && s.score >= (recorded ?? 0);
    console.log(`   score ${s.score} % against the recorded ${recorded ?? 'none yet'} %`);
    if (passed && !inCi)
      rest.areas[area] = {
        ...rest.areas[area],
        break: Math.max(recorded ?? 0, Math.floor(s.score * 100) / 100),
        measured,
      };
  }
  if (passed && !inCi && scope === 'deciding') {
    // The report is Stryker's incremental format too; less the machine's path and the run's settings.
    const { projectRoot: _root, config: _config, ...baseline } = report;
    fs.writeFileSync(baselineFile, JSON.stringify(baseline));
    fs.writeFileSync(hashesFile, `${JSON.stringify(hashes, null, 2)}\n`);
    if (full) scopes.deciding = { ...scopes.deciding, fullRun: measured };
  }
  if (passed && !inCi) {
    fs.writeFileSync(scopesFile, `${JSON.stringify(scopes, null, 2)}\n`);
    updateTestingDoc(root);
  }
  ok &&= passed;
}
process.exit(ok ? 0 : 1);
