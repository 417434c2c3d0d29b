// The deliberate faults of `npm run mutations` (scripts/mutations.list.mjs) stay applicable: each
// anchor occurs exactly once in its file and names a guard test file that exists. Without this a
// refactor (a file split, a reformat) silently turns a mutation into one the script refuses.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

interface Mutation {
  id: string;
  file: string;
  find: string;
  replace: string;
  guard: { file: string };
}

const root = path.resolve(__dirname, '../../..');

test('every mutation anchor occurs exactly once in its file, and its guard test exists', async () => {
  const list = (await import(path.join(root, 'scripts/mutations.list.mjs'))) as { MUTATIONS: Mutation[] };
  assert.ok(list.MUTATIONS.length >= 20, 'the mutation list is there');
  const wrong: string[] = [];
  for (const m of list.MUTATIONS) {
    const file = path.join(root, m.file);
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    const n = text.split(m.find).length - 1;
    if (n !== 1) wrong.push(`${m.id}: anchor found ${n} times in ${m.file}: ${m.find}`);
    if (m.find === m.replace) wrong.push(`${m.id}: the fault changes nothing`);
    if (!fs.existsSync(path.join(root, m.guard.file))) wrong.push(`${m.id}: no guard file ${m.guard.file}`);
  }
  assert.deepEqual(wrong, []);
});
