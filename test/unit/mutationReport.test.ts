// The mutation score as the repository records it (docs/testing.md, "Mutation score"): the
// committed baseline of `npm run mutate` covers exactly the deciding modules of
// stryker.config.json and holds no mutant left alive; every mutant disabled in place says why;
// the counts in docs/testing.md are the ones the baseline and test/mutation/scopes.json give;
// and the summary reads Stryker's statuses as the docs say (a timeout is a kill, a disabled or
// uncompilable mutant is not judged, a mutant reached by no test is not killed).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(__dirname, '../../..');

interface Mutant {
  mutatorName: string;
  replacement?: string;
  status: string;
  statusReason?: string;
  location: { start: { line: number; column: number } };
}
interface Report {
  files: Record<string, { mutants: Mutant[] }>;
}
interface Summary {
  counts: Record<string, number>;
  score: number;
  undetected: string[];
  disabled: string[];
}
interface ReportModule {
  summarize: (r: Report) => Summary;
  testingDocBlock: (root: string) => string;
  currentTestingDocBlock: (root: string) => string | null;
}

const load = () => import(path.join(root, 'scripts/mutationReport.mjs')) as Promise<ReportModule>;

function mutant(status: string, line: number, statusReason?: string): Mutant {
  return {
    mutatorName: 'EqualityOperator',
    replacement: 'a >= b',
    status,
    location: { start: { line, column: 3 } },
    statusReason,
  };
}

test('a timeout counts as killed; disabled and uncompilable mutants are not judged; no coverage is not killed', async () => {
  const { summarize } = await load();
  const s = summarize({
    files: {
      'src/b.ts': { mutants: [mutant('Killed', 1), mutant('Timeout', 2), mutant('NoCoverage', 3)] },
      'src/a.ts': { mutants: [mutant('Survived', 4), mutant('Ignored', 5, 'a cache size'), mutant('CompileError', 6)] },
    },
  });
  assert.deepEqual(s.counts, { mutants: 6, killed: 1, timeout: 1, survived: 1, noCoverage: 1, disabled: 1, errors: 1 });
  assert.equal(s.score, 50);
  assert.deepEqual(s.undetected, [
    'src/a.ts:4:3 EqualityOperator → a >= b (Survived)',
    'src/b.ts:3:3 EqualityOperator → a >= b (NoCoverage)',
  ]);
  assert.deepEqual(s.disabled, ['src/a.ts:5:3 EqualityOperator: a cache size']);
});

test('the committed baseline covers exactly the deciding modules, and every mutant in it is killed or explained', async () => {
  const { summarize } = await load();
  const config = JSON.parse(fs.readFileSync(path.join(root, 'stryker.config.json'), 'utf8')) as { mutate: string[] };
  const file = path.join(root, 'test/mutation/deciding.baseline.json');
  assert.ok(fs.existsSync(file), 'no baseline: run `npm run mutate -- --full` and commit test/mutation/');
  const baseline = JSON.parse(fs.readFileSync(file, 'utf8')) as Report;
  assert.deepEqual(Object.keys(baseline.files).sort(), [...config.mutate].sort());
  const s = summarize(baseline);
  assert.deepEqual(s.undetected, []);
  // `file:line:column Mutator: reason`: the reason is the disable comment's text after its colon.
  const unexplained = s.disabled.filter((d) => {
    const reason = d.split(': ').slice(1).join(': ').trim();
    return reason.length < 10 || reason === 'Ignored using a comment'; // Stryker's text when none is given
  });
  assert.deepEqual(unexplained, [], 'a disabled mutant without a reason');
  // A mutant that does not compile is not judged: the baseline has none. One that stops its module
  // from loading (code run at load, such as watchRecord's generated check) crashes every test file
  // that imports it: Stryker calls that a runtime error; the crash is the test file's, nothing else.
  const invalid = Object.entries(baseline.files).flatMap(([file, f]) =>
    f.mutants
      .filter((m) => m.status === 'CompileError' || m.status === 'RuntimeError')
      .filter(
        (m) =>
          m.status === 'CompileError' ||
          !/^Error running file "out\/test\/unit\/\w+\.test\.js"\. Tap process exited with code [1-9]/.test(
            m.statusReason ?? '',
          ),
      )
      .map((m) => `${file}:${m.location.start.line} ${m.status}`),
  );
  assert.deepEqual(invalid, [], 'a mutant that does not compile, or errs other than by crashing a test file');
});

/** Every `.ts` file under `dir`. */
function sources(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.join(e.parentPath, e.name));
}

test('a mutant is disabled only on its own line, by name, with a reason: never a whole block, never "all"', () => {
  const wrong: string[] = [];
  for (const file of sources(path.join(root, 'src')))
    fs.readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (!/Stryker\s+(disable|restore)/i.test(line)) return;
        const m = /\/\/ Stryker disable next-line ([A-Za-z]+(?:,[A-Za-z]+)*): (.{10,})$/.exec(line.trim());
        if (!m || m[1].split(',').includes('all')) wrong.push(`${path.relative(root, file)}:${i + 1}: ${line.trim()}`);
      });
  assert.deepEqual(wrong, []);
});

test('docs/testing.md shows the counts the baseline and the recorded scores give', async () => {
  const { testingDocBlock, currentTestingDocBlock } = await load();
  const block = currentTestingDocBlock(root);
  assert.equal(block, testingDocBlock(root), 'run `npm run mutate` (it rewrites the block)');
  // Each deciding module is named once, with its mutants (and any not killed or disabled).
  const baseline = JSON.parse(
    fs.readFileSync(path.join(root, 'test/mutation/deciding.baseline.json'), 'utf8'),
  ) as Report;
  for (const [file, f] of Object.entries(baseline.files)) {
    const at = new RegExp(`\`${file.replace(/\./g, '\\.')}\` ${f.mutants.length}\\b`, 'g');
    assert.equal(block?.match(at)?.length, 1, `${file} with its ${f.mutants.length} mutants`);
  }
});
