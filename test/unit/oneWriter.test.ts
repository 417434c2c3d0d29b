// One writer of a watch (docs/architecture.md, "The engine's files"). The compiler holds it:
// outside src/core/watchWrites.ts a watch is a `Watch`, read-only all the way down, and the
// engine's state hands out nothing else; the lines marked `@ts-expect-error` below fail `tsc`
// (an unused directive is an error) the day a write through a watch compiles again. What this
// file checks at run time: nothing turns a watch writable but that module, and the state and the
// due time are still chosen in one place (transitions.ts, the table's hands), the state written
// by engineCore's `setState` alone.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import type { EngineCore } from '../../src/core/engineCore';
import type { Watch } from '../../src/model/watch';

const root = path.resolve(__dirname, '../../..');
const src = path.join(root, 'src');

/** Compiled, never called: each line is a write `tsc` must refuse. */
export function writesThatDoNotCompile(w: Watch, core: EngineCore): void {
  // @ts-expect-error: the state is written through engineCore's setState
  w.state = { kind: 'running' };
  // @ts-expect-error: the failure's due time, nested
  if (w.lastFailure) w.lastFailure.dueAt = 0;
  // @ts-expect-error: a list, changed in place
  w.recovered.push('turn-1');
  // @ts-expect-error: the write-ahead intent
  w.pending = null;
  const held = core.state.watches['t'];
  // @ts-expect-error: the engine's state hands out read-only watches
  if (held) held.failures = 0;
}

function sources(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
    );
}

/** Lines of src (comments left out) matching `pattern`, as `file:line: code`, but in `allowed` files. */
function linesMatching(pattern: RegExp, allowed: Record<string, RegExp | true>): string[] {
  const found: string[] = [];
  for (const file of sources(src)) {
    const rel = path.relative(root, file).split(path.sep).join('/');
    fs.readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const code = line.replace(/\/\/.*$/, '').trim();
        if (code.startsWith('*') || code.startsWith('/*') || !pattern.test(code)) return;
        const allow = allowed[rel];
        if (allow === true || allow?.test(code)) return;
        found.push(`${rel}:${i + 1}: ${code}`);
      });
  }
  return found;
}

test("only watchWrites.ts turns a watch writable (a deep copy is its holder's own)", () => {
  assert.deepEqual(
    linesMatching(/\bas (unknown as )?WatchedThread\b/, {
      'src/core/watchWrites.ts': true,
      // The views' snapshot, deep-copied by the structuredClone around it.
      'src/core/engine.ts': /^watches: this\.watches\(\) as WatchedThread\[\],$/,
    }),
    [],
  );
});

test("a watch's state is written by setState alone, and only transitions.ts and engineCore call it", () => {
  assert.deepEqual(
    linesMatching(/\bwriteState\(/, {
      'src/core/watchWrites.ts': /^export function writeState/,
      'src/core/engineCore.ts': /^writeState\(w, state, this\.now\(\)\);$/,
    }),
    [],
  );
  assert.deepEqual(
    linesMatching(/\bsetState\(/, {
      'src/core/transitions.ts': true,
      'src/core/engineCore.ts': /^setState\(w: Watch, state: WatchState, quiet = false\): void \{$/,
    }),
    [],
  );
});

test("a failure and its due time are chosen in transitions.ts (and moved with the clock by the clock's guard)", () => {
  assert.deepEqual(
    linesMatching(/\b(dueAtIs|failureIs|failuresAre)\(/, {
      'src/core/watchWrites.ts': /^export function/,
      'src/core/transitions.ts': true,
      // A wall-clock jump back: a relative due time keeps the time it had left.
      'src/core/clockGuard.ts': /^dueAtIs\(w, dueAt - ms\);$/,
      // A turn that ends a run of failures (completed, or a person's interrupt): counted from 0.
      'src/core/events.ts': /^if \(w && endsFailureRun\(turn\.status\)\) failuresAre\(w, 0\);$/,
    }),
    [],
  );
});

test('the checks see what they stand for', () => {
  const writer = fs.readFileSync(path.join(src, 'core/watchWrites.ts'), 'utf8');
  assert.match(writer, /^function writable\(w: Watch\): WatchedThread \{\n {2}return w as WatchedThread;/m);
  assert.match(fs.readFileSync(path.join(src, 'core/transitions.ts'), 'utf8'), /core\.setState\(/);
  assert.match(fs.readFileSync(path.join(root, 'docs/architecture.md'), 'utf8'), /`watchWrites\.ts`/);
});
