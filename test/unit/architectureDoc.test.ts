// docs/architecture.md says what src/ is, and stays true: its layer table names the layers, the
// directories and the imports that test/support/layers.ts (the list layers.test.ts checks the
// imports against) gives, in an order where each layer imports only from the rows above it; its
// file tables name every file of src/ exactly once, and no file that does not exist; and its
// numbered list of one recovery names, at each step, a file of src/ and functions defined in it
// (a function renamed or moved turns this red), with the count of steps and files it states.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { FACES, LAYERS, layerOf, ROOT, sources, SRC } from '../support/layers';

const doc = fs.readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8').split('\n');

/** The cells of a Markdown table row (no pipes inside cells in this document). */
function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim());
}

/** Every `…` span of a cell. */
function quoted(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
}

/** The rows of the first table after the heading `heading` (its header and rule left out). */
function tableAfter(heading: string): string[][] {
  const at = doc.indexOf(heading);
  assert.ok(at >= 0, `docs/architecture.md has the heading "${heading}"`);
  const start = doc.findIndex((l, i) => i > at && l.startsWith('|'));
  const rows: string[][] = [];
  for (let i = start + 2; i < doc.length && doc[i].startsWith('|'); i++) rows.push(cells(doc[i]));
  return rows;
}

interface LayerRow {
  layer: string;
  paths: string[];
  mayImport: string[] | 'everything below';
}

function layerRows(): LayerRow[] {
  return tableAfter('## Layers (imports only point down)').map(([layer, dirs, , imports]) => ({
    layer,
    paths: quoted(dirs),
    mayImport:
      imports === 'everything below'
        ? 'everything below'
        : imports === 'nothing'
          ? []
          : imports.split(',').map((s) => s.trim()),
  }));
}

test("the layer table names the layers, directories and imports of layers.test.ts's list, lowest first", () => {
  const rows = layerRows();
  const wrong: string[] = [];
  const seen = new Set<string>();
  const faces = new Set<string>();
  for (const row of rows) {
    const named = row.paths.map((p) => layerOf(path.join(ROOT, p.replace(/\/$/, ''))));
    for (const p of row.paths) if (!fs.existsSync(path.join(ROOT, p))) wrong.push(`${row.layer}: ${p} does not exist`);
    if (row.mayImport === 'everything below') {
      for (const n of named) faces.add(n);
      continue;
    }
    if (named.length !== 1 || named[0] !== row.layer)
      wrong.push(`${row.layer}: its directory cell ${row.paths.join(', ')} is not the layer ${row.layer}`);
    const allowed = LAYERS[row.layer];
    if (!allowed) wrong.push(`${row.layer}: not a layer of test/support/layers.ts`);
    else if ([...row.mayImport].sort().join() !== [...allowed].sort().join())
      wrong.push(`${row.layer}: may import ${row.mayImport.join(', ')}; the layer list says ${allowed.join(', ')}`);
    for (const below of row.mayImport) if (!seen.has(below)) wrong.push(`${row.layer}: ${below} is not a row above it`);
    seen.add(row.layer);
  }
  for (const layer of Object.keys(LAYERS)) if (!seen.has(layer)) wrong.push(`the layer ${layer} has no row`);
  if ([...faces].sort().join() !== [...FACES].sort().join())
    wrong.push(`the faces row names ${[...faces].join(', ')}; the layer list's faces are ${[...FACES].join(', ')}`);
  assert.deepEqual(wrong, []);
});

/**
 * Every file named in a file table (a table whose first column is `file`), as a path from the
 * repository: a table belongs to the last heading above it, which names its directory (`src/…/`).
 */
function documentedFiles(): string[] {
  const files: string[] = [];
  let dir: string | null = null;
  for (let i = 0; i < doc.length; i++) {
    const line = doc[i];
    if (line.startsWith('#')) {
      dir = quoted(line).find((q) => q.startsWith('src/') && q.endsWith('/')) ?? null;
      continue;
    }
    if (!/^\|\s*file\s*\|/.test(line)) continue;
    assert.ok(dir, `docs/architecture.md:${i + 1}: a file table under a heading that names no src/ directory`);
    for (i += 2; i < doc.length && doc[i].startsWith('|'); i++)
      for (const name of quoted(cells(doc[i])[0])) files.push(path.posix.join(dir, name));
  }
  return files;
}

test('the file tables name every file of src/ exactly once, and none that does not exist', () => {
  const named = documentedFiles();
  const actual = sources(SRC).map((f) => path.relative(ROOT, f).split(path.sep).join('/'));
  const count = new Map<string, number>();
  for (const f of named) count.set(f, (count.get(f) ?? 0) + 1);
  assert.deepEqual(
    named.filter((f) => !actual.includes(f)),
    [],
    'named in docs/architecture.md, not in src/',
  );
  assert.deepEqual(
    actual.filter((f) => count.get(f) !== 1).map((f) => `${f}: ${count.get(f) ?? 0} times`),
    [],
    'each file of src/ once in the file tables of docs/architecture.md',
  );
});

/** One step of the numbered recovery list: `N. `src/…` `fn`, `fn`: what happens`. */
interface Step {
  n: number;
  file: string;
  names: string[];
  text: string;
}

const RECOVERY = '## A recovery, step by step';

/** The section under `heading`, up to the next `## ` heading. */
function section(heading: string): string[] {
  const at = doc.indexOf(heading);
  assert.ok(at >= 0, `docs/architecture.md has the heading "${heading}"`);
  const end = doc.findIndex((l, i) => i > at && l.startsWith('## '));
  return doc.slice(at + 1, end < 0 ? doc.length : end);
}

/** The numbered steps of the recovery list, each with its continuation lines. */
function recoverySteps(): Step[] {
  const steps: Step[] = [];
  for (const line of section(RECOVERY)) {
    const start = /^(\d+)\. (.*)$/.exec(line);
    if (start) {
      const head = /^`(src\/[^`]+)` ((?:`[^`]+`(?:, )?)+):/.exec(start[2]);
      assert.ok(head, `a step of "${RECOVERY}" names its file and functions first: ${line}`);
      steps.push({ n: Number(start[1]), file: head[1], names: quoted(head[2]), text: start[2] });
    } else if (steps.length > 0 && /^\s+\S/.test(line)) steps[steps.length - 1].text += ` ${line.trim()}`;
  }
  return steps;
}

/** The source without its comments, so that a name in a comment does not count as defined. */
function code(file: string): string {
  return fs
    .readFileSync(path.join(ROOT, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
}

/** Whether `name` is defined in `source`: a function, a const, a method or an arrow property. */
function defines(source: string, name: string): boolean {
  const modifiers = '(?:(?:export|public|private|protected|static|async|readonly|override|get) )*';
  return [
    new RegExp(`\\bfunction\\*? ${name}\\b`),
    new RegExp(`\\b(?:const|let) ${name}\\b\\s*[:=]`),
    new RegExp(`^\\s*${modifiers}${name}\\s*(?:<[^>]*>)?\\(`, 'm'),
    new RegExp(`^\\s*${modifiers}${name}\\s*[:=]\\s*(?:async )?(?:\\(|function\\b)`, 'm'),
  ].some((r) => r.test(source));
}

test('the recovery list names, at each step, functions defined in the src/ file it names', () => {
  const steps = recoverySteps();
  assert.ok(steps.length > 0, `"${RECOVERY}" has a numbered list`);
  assert.deepEqual(
    steps.map((s) => s.n),
    steps.map((_, i) => i + 1),
    'the steps are numbered 1, 2, 3, …',
  );
  const wrong: string[] = [];
  for (const step of steps) {
    if (!fs.existsSync(path.join(ROOT, step.file))) {
      wrong.push(`step ${step.n}: ${step.file} does not exist`);
      continue;
    }
    if (step.names.length === 0) wrong.push(`step ${step.n}: names no function`);
    const source = code(step.file);
    for (const name of step.names)
      if (!defines(source, name)) wrong.push(`step ${step.n}: ${name} is not defined in ${step.file}`);
  }
  assert.deepEqual(wrong, []);
});

test('the recovery list runs from the failed turn/completed to thread/goal/set, and counts itself', () => {
  const steps = recoverySteps();
  assert.match(steps[0].text, /`turn\/completed`/, 'the first step is the turn/completed notification');
  assert.ok(
    steps.some((s) => s.text.includes('`thread/goal/set`')),
    'a step sends thread/goal/set',
  );
  const said = /(\d+) steps over (\d+) files/.exec(section(RECOVERY).join(' '));
  assert.ok(said, `"${RECOVERY}" says how many steps over how many files`);
  assert.deepEqual(
    { steps: Number(said[1]), files: Number(said[2]) },
    { steps: steps.length, files: new Set(steps.map((s) => s.file)).size },
    'the count the section states is the count of the list',
  );
});
