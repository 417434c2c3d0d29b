// docs/architecture.md says what src/ is, and stays true: its layer table names the layers, the
// directories and the imports that test/support/layers.ts (the list layers.test.ts checks the
// imports against) gives, in an order where each layer imports only from the rows above it; its
// file tables name every file of src/ exactly once, and no file that does not exist.
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

test('the hop list of one recovery names functions that are in the files it names, in order', () => {
  const rows = tableAfter('## A recovery, step by step');
  assert.ok(rows.length >= 10, 'a hop list of one recovery');
  const wrong: string[] = [];
  for (const [n, where] of rows.map((r) => [r[0], r[1]])) {
    const [file, ...names] = quoted(where);
    const source = path.join(SRC, file);
    if (!fs.existsSync(source)) {
      wrong.push(`hop ${n}: ${file} is not in src/`);
      continue;
    }
    const text = fs.readFileSync(source, 'utf8');
    for (const name of names) {
      // A function, a method or an arrow property of that name defined in the file.
      const defined = new RegExp(`(function ${name}\\b|^\\s*(private |async |readonly )*${name}(\\(|: \\())`, 'm');
      if (!defined.test(text)) wrong.push(`hop ${n}: ${name} is not defined in src/${file}`);
    }
  }
  assert.deepEqual(wrong, []);
  assert.deepEqual(
    rows.map((r) => Number(r[0])),
    rows.map((_, i) => i + 1),
    'the hops are numbered 1, 2, 3, …',
  );
});
