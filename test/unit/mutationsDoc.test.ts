// docs/testing.md's counts of the deliberate faults (`npm run mutations`) are the ones
// docs/mutations.json gives: its generated block (scripts/mutationsDoc.mjs) is what the last
// results and the list make, and its headline says as many caught, of as many faults, as the file.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(__dirname, '../../..');

interface MutationsDoc {
  mutationsDocBlock(root: string): string;
  currentMutationsDocBlock(root: string): string | null;
}

test('docs/testing.md shows the faults and counts docs/mutations.json gives', async () => {
  const doc = (await import(path.join(root, 'scripts/mutationsDoc.mjs'))) as MutationsDoc;
  const block = doc.currentMutationsDocBlock(root);
  assert.ok(block, 'docs/testing.md has the mutations block');
  assert.equal(block, doc.mutationsDocBlock(root), 'run `npm run mutations -- --doc` (it rewrites the block)');
  const saved = JSON.parse(fs.readFileSync(path.join(root, 'docs', 'mutations.json'), 'utf8')) as {
    results: { id: string; caught: boolean }[];
  };
  const list = (await import(path.join(root, 'scripts/mutations.list.mjs'))) as { MUTATIONS: { id: string }[] };
  const caught = list.MUTATIONS.filter((m) => saved.results.some((r) => r.id === m.id && r.caught)).length;
  assert.match(block, new RegExp(`\\*\\*${caught} of ${list.MUTATIONS.length} faults caught\\*\\*`));
  // No count written by hand beside it: "N of N caught" is the block's alone.
  const text = fs.readFileSync(path.join(root, 'docs', 'testing.md'), 'utf8').replace(block, '');
  assert.doesNotMatch(text, /\b\d+ of \d+ (faults )?caught\b/, 'a hand-written count of the faults');
});
