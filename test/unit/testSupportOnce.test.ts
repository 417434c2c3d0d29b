// Test support a maintainer can hold: waiting is declared once (test/support/wait.ts: `sleep`,
// `immediate`, `turns`, `poll`, `until`, `tempDir`), a store and a clock are faked once
// (test/support/memoryStore.ts, test/support/fakeClock.ts; the crash world's durable store and
// scoped clock model a process's disk and freeze, and wrap nothing else), and no support file is
// over 500 lines. The VS Code suites (test/vscode/) run inside the extension host and the browser,
// with helpers of their own.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/layers';

const TEST = path.join(ROOT, 'test');

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'vscode' && dir === TEST ? [] : files(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

const sources = files(TEST).map((f) => ({ file: path.relative(ROOT, f), text: fs.readFileSync(f, 'utf8') }));

test('waiting is declared once: a promise around a timer or a turn of the event loop only in wait.ts', () => {
  const inline = /new Promise(<void>)?\(\((\w+)\) => set(Immediate|Timeout)\(\2\b/;
  const declared = /(function (sleep|until|poll|tempDir|immediate|turns)\b)|(const (sleep|tempDir|immediate) =)/;
  const wrong = sources
    .filter(({ file }) => file !== path.join('test', 'support', 'wait.ts'))
    .flatMap(({ file, text }) =>
      text
        .split('\n')
        .flatMap((line, i) => (inline.test(line) || declared.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
  assert.deepEqual(wrong, []);
});

test('a store and a clock are faked once', () => {
  const fakes = (what: string) =>
    sources
      .filter(({ text }) => new RegExp(`implements ${what}\\b`).test(text))
      .map(({ file }) => file)
      .sort();
  assert.deepEqual(fakes('StateStore'), [
    path.join('test', 'support', 'crashProcess.ts'),
    path.join('test', 'support', 'engineHarness.ts'),
    path.join('test', 'support', 'memoryStore.ts'),
  ]);
  assert.deepEqual(fakes('Clock'), [
    path.join('test', 'support', 'crashProcess.ts'),
    path.join('test', 'support', 'fakeClock.ts'),
  ]);
});

test('no test support file is over 500 lines', () => {
  const long = sources
    .filter(({ file }) => file.startsWith(path.join('test', 'support') + path.sep))
    .map(({ file, text }) => ({ file, lines: text.split('\n').length }))
    .filter(({ lines }) => lines > 500);
  assert.deepEqual(long, []);
});
