// docs/testing.md's counts of the deliberate faults (`npm run mutations`) are the ones
// docs/mutations.json gives: its generated block (scripts/mutationsDoc.mjs) is what the last
// results and the list make, its headline says as many caught, of as many faults, as the file, and
// it names every fault once, under the test file that guards it (the whole table, with invariants
// and results, is `npm run mutations -- --table`'s).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../support/wait';

const root = path.resolve(__dirname, '../../..');

interface MutationsDoc {
  mutationsDocBlock(root: string): string;
  currentMutationsDocBlock(root: string): string | null;
}

interface Mutation {
  id: string;
  invariant: string;
  guard: { file: string };
}

test('docs/testing.md shows the faults and counts docs/mutations.json gives', async () => {
  const doc = (await import(path.join(root, 'scripts/mutationsDoc.mjs'))) as MutationsDoc;
  const block = doc.currentMutationsDocBlock(root);
  assert.ok(block, 'docs/testing.md has the mutations block');
  assert.equal(block, doc.mutationsDocBlock(root), 'run `npm run mutations -- --doc` (it rewrites the block)');
  const saved = JSON.parse(fs.readFileSync(path.join(root, 'docs', 'mutations.json'), 'utf8')) as {
    results: { id: string; caught: boolean }[];
  };
  const list = (await import(path.join(root, 'scripts/mutations.list.mjs'))) as { MUTATIONS: Mutation[] };
  const caught = list.MUTATIONS.filter((m) => saved.results.some((r) => r.id === m.id && r.caught)).length;
  assert.match(block, new RegExp(`\\*\\*${caught} of ${list.MUTATIONS.length} faults caught\\*\\*`));
  // Every fault once, on the line of the file that guards it.
  const lines = block.split('\n').filter((l) => l.startsWith('- `'));
  for (const m of list.MUTATIONS) {
    const on = lines.filter((l) => l.includes(`\`${m.id}\``));
    assert.equal(on.length, 1, `${m.id} on one line of the block`);
    assert.ok(on[0].startsWith(`- \`${m.guard.file}\`: `), `${m.id} under ${m.guard.file}`);
  }
  // No count written by hand beside it: "N of N caught" is the block's alone.
  const text = fs.readFileSync(path.join(root, 'docs', 'testing.md'), 'utf8').replace(block, '');
  assert.doesNotMatch(text, /\b\d+ of \d+ (faults )?caught\b/, 'a hand-written count of the faults');
});

test('a fault the last results do not show caught is listed with its invariant', async () => {
  const doc = (await import(path.join(root, 'scripts/mutationsDoc.mjs'))) as {
    mutationsDocBlock(root: string): string;
  };
  const list = (await import(path.join(root, 'scripts/mutations.list.mjs'))) as { MUTATIONS: Mutation[] };
  const dir = tempDir('cgr-mutations-doc-');
  fs.mkdirSync(path.join(dir, 'docs'));
  const [missed, unrun, ...rest] = list.MUTATIONS;
  const results = [{ id: missed.id, caught: false }, ...rest.map((m) => ({ id: m.id, caught: true, message: 'red' }))];
  fs.writeFileSync(
    path.join(dir, 'docs', 'mutations.json'),
    JSON.stringify({ generatedAt: '2026-01-02T03:04:05.678Z', results }),
  );
  const block = doc.mutationsDocBlock(dir);
  assert.match(block, new RegExp(`\\*\\*${rest.length} of ${list.MUTATIONS.length} faults caught\\*\\*`));
  assert.match(block, /1 missed or not applied, 1 not run\./);
  const row = (m: Mutation) => block.split('\n').find((l) => l.startsWith(`| ${m.invariant} | \`${m.id}\``));
  assert.match(row(missed) ?? '', /\*\*green \(missed\)\*\* \|$/);
  assert.match(row(unrun) ?? '', /\| not run \|$/);
  assert.equal(row(rest[0]), undefined, 'a caught fault has no row');
});
