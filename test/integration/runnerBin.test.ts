// The runner's bin as users run it: dist/cli.js executed directly (package.json `bin`, or the
// README's `install -D -m 0755 dist/cli.js ~/.local/bin/codex-goal-recovery`), so its shebang
// starts Node. The shebang carries the runtime flags that keep the runner's memory flat over a
// long run (docs/performance.md, "Soak"; scripts/build.mjs RUNNER_SHEBANG); docs/service/* start
// Node with the same flags (test/unit/serviceFiles.test.ts). These fail if the flags go missing
// from the built file, or if the bin stops running when executed as a user executes it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CLI, RunnerProcess, testRuntimeDir } from '../support/runnerProcess';

/** What the runner's Node must be started with (docs/performance.md, "Soak"). */
const NODE_FLAGS = ['--single-threaded', '--optimize-for-size'];
const root = path.resolve(__dirname, '..', '..', '..');

describe('the runner bin (dist/cli.js executed directly)', () => {
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-bin-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('is executable, and its shebang starts node with the runtime flags through env -S', () => {
    const first = fs.readFileSync(CLI, 'utf8').split('\n', 1)[0];
    assert.equal(first, `#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`);
    assert.equal(fs.statSync(CLI).mode & 0o111, 0o111, 'dist/cli.js is not executable by all');
  });

  it('--version and -V: print the package version and exit 0', async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const run = await runBin([flag]);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout.trim(), `codex-goal-recovery ${version}`, flag);
    }
  });

  it('no arguments: a usage error (exit 2), the usage on stderr, nothing on stdout', async () => {
    const run = await runBin([]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr, /^codex-goal-recovery: no command given\n\nUsage:/);
    assert.equal(run.stdout, '');
  });

  it('watch: runs in a node started with the flags (its /proc cmdline), and stops cleanly on SIGTERM', async () => {
    // No daemon here: the runner is elected, says it cannot connect, and keeps trying.
    const runner = new RunnerProcess(
      ['--codex-home', dir, '--state', path.join(dir, 'state.json')],
      {},
      { asBin: true },
    );
    try {
      await runner.waitFor((d) => d.type === 'connection', 15_000, 'a connection line');
      const argv = fs.readFileSync(`/proc/${runner.child.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      assert.equal(path.basename(argv[0]), 'node', argv.join(' '));
      assert.deepEqual(argv.slice(1, 1 + NODE_FLAGS.length), NODE_FLAGS, argv.join(' '));
      assert.equal(argv[1 + NODE_FLAGS.length], CLI, argv.join(' '));
      assert.deepEqual(argv.slice(2 + NODE_FLAGS.length), [
        'watch',
        '--codex-home',
        dir,
        '--state',
        path.join(dir, 'state.json'),
        '--json',
      ]);
      assert.equal(await runner.stopWith('SIGTERM'), 0, runner.transcript());
    } finally {
      if (runner.running) await runner.kill();
    }
  });
});

/** The bin run to its end with `args`: its exit code and what it wrote. */
function runBin(args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(CLI, args, { env: { ...process.env, XDG_RUNTIME_DIR: testRuntimeDir() } });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: string) => (stdout += d));
    child.stderr!.on('data', (d: string) => (stderr += d));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
