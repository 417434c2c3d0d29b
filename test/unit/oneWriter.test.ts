// One writer of a watch's state and of its recovery's due time (docs/architecture.md, "The
// engine's files"): src/core/transitions.ts carries every change out, as the decision table
// (policy.ts) or the part that saw it happen asks; engineCore.ts holds the one state write it calls
// (`setState`: saved next time, `updatedAt` never back, the timer told). This lists, from the
// source, every place that writes either, so a write anywhere else turns it red.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(__dirname, '../../..');
const src = path.join(root, 'src');

/** What writes a watch's state or its due time (the failure's record holds the due time). */
const WRITES: [string, RegExp][] = [
  ['the state', /\bsetState\(/],
  ['the state', /\.state\s*=[^=]/],
  ['the failure and its due time', /\blastFailure\s*=[^=]/],
  ['the due time', /\.(dueAt|stepDueAt)\s*=[^=]/],
];

/** Where each may be written: the writer, and the one state write it calls. */
const ALLOWED: Record<string, (line: string) => boolean> = {
  'src/core/transitions.ts': () => true,
  // `setState` itself, and the engine's whole state (a load, a reset), which is not a watch's.
  'src/core/engineCore.ts': (line) =>
    /setState\(w: WatchedThread|w\.state = sharedState\(|this\.current = state/.test(line),
  'src/core/engine.ts': (line) => /core\.state = loaded\.state/.test(line),
  'src/core/userActions.ts': (line) => /core\.state = emptyState\(\)/.test(line),
};

function sources(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
    );
}

/** Every line of the engine (src/core, and the leader that runs it) that writes what WRITES lists. */
function writers(): string[] {
  const found: string[] = [];
  for (const file of [...sources(path.join(src, 'core')), ...sources(path.join(src, 'leader'))]) {
    const rel = path.relative(root, file).split(path.sep).join('/');
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const code = line.replace(/\/\/.*$/, '').trim();
      if (code.startsWith('*') || code.startsWith('/*')) return; // a comment
      for (const [what, write] of WRITES)
        if (write.test(code) && !(ALLOWED[rel]?.(code) ?? false)) found.push(`${rel}:${i + 1} writes ${what}: ${code}`);
    });
  }
  return found;
}

test("only transitions.ts writes a watch's state and its recovery's due time", () => {
  assert.deepEqual(writers(), []);
});

test('the check sees a write: every pattern matches what it stands for', () => {
  const samples = [
    'core.setState(w, { kind: "running" });',
    'w.state = { kind: "running" };',
    'w.lastFailure = null;',
    'w.lastFailure.dueAt = now;',
    'f.stepDueAt = due;',
  ];
  for (const sample of samples)
    assert.ok(
      WRITES.some(([, write]) => write.test(sample)),
      sample,
    );
  for (const read of ['if (w.state === scheduled) return;', 'const due = w.lastFailure?.dueAt;', 'a.dueAt == b'])
    assert.ok(!WRITES.some(([, write]) => write.test(read)), read);
});

test('the writer is where the docs say it is, and writes both', () => {
  const writer = fs.readFileSync(path.join(src, 'core/transitions.ts'), 'utf8');
  assert.match(writer, /core\.setState\(/);
  assert.match(writer, /\.dueAt = /);
  assert.match(fs.readFileSync(path.join(root, 'docs/architecture.md'), 'utf8'), /`transitions\.ts`/);
});
