// The docs a maintainer reads stay readable (issue 39). They had grown to 305 KB, most of it
// figures copied by hand from benchmark runs and a record of every run, which went stale as the
// code moved. So, in bytes on disk:
// - docs/performance.md at most 15 KiB: what each bench section measures, its targets and the
//   decisions behind them; the figures are bench/results.json's (written by `npm run bench`), never
//   copied into the doc;
// - docs/reliability.md and docs/testing.md together at most 25 KiB: which fault each suite
//   injects and what it holds, how the tests judge, and the generated mutation blocks (kept short
//   by their generators, scripts/mutationReport.mjs and scripts/mutationsDoc.mjs);
// - docs/architecture.md at most 15 KiB: an overview, one recovery step by step, the layers and a
//   line per file of src/ (what architectureDoc.test.ts checks against the code).
// A limit is met by simplifying, never by moving text to another doc.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(__dirname, '../../..');
const bytes = (doc: string): number => fs.statSync(path.join(root, 'docs', doc)).size;

const PERFORMANCE_MAX_BYTES = 15 * 1024;
const RELIABILITY_AND_TESTING_MAX_BYTES = 25 * 1024;
const ARCHITECTURE_MAX_BYTES = 15 * 1024;

test('docs/performance.md is at most 15 KiB: a summary, the figures in bench/results.json', () => {
  const size = bytes('performance.md');
  assert.ok(size <= PERFORMANCE_MAX_BYTES, `docs/performance.md is ${size} bytes, over ${PERFORMANCE_MAX_BYTES}`);
});

test('docs/reliability.md and docs/testing.md are at most 25 KiB together', () => {
  const sizes = { reliability: bytes('reliability.md'), testing: bytes('testing.md') };
  const total = sizes.reliability + sizes.testing;
  assert.ok(
    total <= RELIABILITY_AND_TESTING_MAX_BYTES,
    `docs/reliability.md (${sizes.reliability} bytes) and docs/testing.md (${sizes.testing} bytes) are ${total} bytes together, over ${RELIABILITY_AND_TESTING_MAX_BYTES}`,
  );
});

test('docs/architecture.md is at most 15 KiB: what a maintainer needs to hold the house', () => {
  const size = bytes('architecture.md');
  assert.ok(size <= ARCHITECTURE_MAX_BYTES, `docs/architecture.md is ${size} bytes, over ${ARCHITECTURE_MAX_BYTES}`);
});
