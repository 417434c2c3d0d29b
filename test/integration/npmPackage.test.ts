// The runner as npm users get it: `npm pack` of a clean copy of the tree (its `prepack` makes the
// release build, so a fresh clone packs a working bin), the tarball installed with
// `npm install --global --prefix <home>/.local` into a temporary home, and the installed bin run:
// `--version` and `-V`, `status`, and `watch` against the real Codex daemon (the pinned
// @openai/codex and the mock model on 127.0.0.1) through an outage until one recovery, judged
// from the daemon's own record. `watch` is started with the systemd unit's own ExecStart
// (docs/service/codex-goal-recovery.service, `%h` the temporary home), so the unit names the
// path an install makes. The package has no runtime dependency: cli.js bundles them.
// Only the pinned Codex: what is tested here is the package and its install; the runner against
// both Codex builds is test/integration/runner.test.ts. Flags: --base-delay 0.5 --max-delay 2
// (public options) so that the outage fits in a test, as in runner.test.ts.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pinnedCodex } from '../../src/demo/codexBinary';
import { makeCodexHome, type CodexHome } from '../../src/demo/codexHome';
import { killAllTracked, trackedAlive } from '../../src/demo/codexProcesses';
import { startThreadWithGoal, waitGoalStatus, waitTurnCompleted } from '../../src/demo/goalThreads';
import { controlSocketPath, startDaemon, stopDaemon } from '../../src/demo/managedDaemon';
import { startMockModel } from '../../src/demo/mockModel';
import type { MockModel } from '../../src/demo/mockModes';
import { UserClient } from '../../src/demo/userClient';
import { assertOneRecoveryPerFailedTurn, daemonRecord } from '../support/daemonJudge';
import type { Json } from '../support/json';
import { cleanCopy, REPO } from '../support/packaging';
import { RunnerProcess, settleAndStop, testRuntimeDir } from '../support/runnerProcess';

const T = 60_000;
const NAME = 'codex-goal-recovery';

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  bin?: Record<string, string>;
  dependencies?: Record<string, string>;
  files?: string[];
}

interface PackResult {
  filename: string;
  files: { path: string }[];
}

/** npm, as the one running this test (npm test sets npm_execpath), else from PATH. */
function npm(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const cli = process.env.npm_execpath;
  const [file, argv] = cli?.endsWith('.js') ? [process.execPath, [cli, ...args]] : ['npm', args];
  const r = spawnSync(file, argv, {
    cwd,
    encoding: 'utf8',
    timeout: 300_000,
    env: { ...process.env, npm_config_update_notifier: 'false', ...env },
  });
  if (r.status !== 0)
    throw new Error(`npm ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

describe('the npm package: packed, installed into a prefix, and run', { timeout: 10 * T }, () => {
  let dir: string;
  let home: string;
  let packed: PackResult;
  let installed: string;
  let bin: string;

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-npm-'));
    const src = cleanCopy(dir);
    packed = (JSON.parse(npm(['pack', '--json', '--pack-destination', dir], src)) as PackResult[])[0];
    home = path.join(dir, 'home');
    fs.mkdirSync(home);
    const prefix = path.join(home, '.local');
    npm(
      [
        'install',
        '--global',
        '--prefix',
        prefix,
        '--offline',
        '--no-audit',
        '--no-fund',
        path.join(dir, packed.filename),
      ],
      dir,
    );
    installed = path.join(prefix, 'lib', 'node_modules', NAME);
    bin = path.join(prefix, 'bin', NAME);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('packs the bin, the service files and the docs a user reads, and no runtime dependency', () => {
    const source = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as Manifest;
    assert.deepEqual(packed.files.map((f) => f.path).sort(), [
      'CHANGELOG.md',
      'LICENSE',
      'README.md',
      'dist/cli.js',
      'docs/service/codex-goal-recovery.service',
      'docs/service/com.codex-goal-recovery.plist',
      'package.json',
    ]);
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as Manifest;
    assert.equal(manifest.private, undefined, 'a private package cannot be published');
    assert.deepEqual(manifest.dependencies ?? {}, {}, 'cli.js bundles what it needs: nothing to install with it');
    assert.deepEqual(manifest.bin, { [NAME]: 'dist/cli.js' });
    assert.equal(manifest.version, source.version);
    assert.ok(!fs.existsSync(path.join(installed, 'node_modules')), 'the install fetched dependencies');
  });

  it('installs the release build: the shebang with the runtime flags, no source map', () => {
    const cli = fs.readFileSync(path.join(installed, 'dist', 'cli.js'), 'utf8');
    assert.equal(cli.split('\n', 1)[0], '#!/usr/bin/env -S node --single-threaded --optimize-for-size');
    assert.doesNotMatch(cli, /sourceMappingURL/);
    assert.equal(fs.realpathSync(bin), path.join(installed, 'dist', 'cli.js'), 'the bin links to dist/cli.js');
  });

  it('the installed bin: --version and -V print the version; status reads an empty state, says no daemon runs, exits 4', async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as Manifest;
    for (const flag of ['--version', '-V']) {
      const run = await runInstalled(bin, [flag], home);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, `${NAME} ${version}\n`);
    }
    const state = path.join(dir, 'empty-state.json');
    const codexHome = path.join(dir, 'no-codex'); // a Codex home with no daemon
    fs.mkdirSync(codexHome, { recursive: true });
    const status = await runInstalled(bin, ['status', '--codex-home', codexHome, '--state', state], home);
    assert.equal(status.code, 4, status.stderr);
    assert.match(status.stdout, /no engine/i);
    assert.match(status.stdout, /^daemon: not running/m);
  });

  it("watch, started with the systemd unit's ExecStart: recovers one outage, once, by the daemon's record", async () => {
    const unit = fs.readFileSync(path.join(installed, 'docs', 'service', `${NAME}.service`), 'utf8');
    const exec = /^ExecStart=(.*)$/m.exec(unit)![1].replace(/%h/g, home).split(/\s+/);
    const at = exec.indexOf('watch');
    assert.ok(at > 0, `ExecStart runs no watch: ${exec.join(' ')}`);
    assert.ok(fs.existsSync(exec[at - 1]), `the unit runs ${exec[at - 1]}, which the install did not make`);

    let mock: MockModel | undefined;
    let codexHome: CodexHome | undefined;
    let user: UserClient<Json> | undefined;
    let runner: RunnerProcess | undefined;
    try {
      mock = await startMockModel();
      codexHome = await makeCodexHome(mock.url, '', { codex: pinnedCodex() });
      await startDaemon(codexHome.dir);
      user = await UserClient.overSocket<Json>(controlSocketPath(codexHome.dir), { name: 'test-user' });
      const state = path.join(dir, 'state.json');
      runner = new RunnerProcess(
        ['--codex-home', codexHome.dir, '--state', state, '--base-delay', '0.5', '--max-delay', '2'],
        { HOME: home },
        { command: exec.slice(0, at) },
      );
      await runner.connected();
      mock.setMode('http500');
      const t = await startThreadWithGoal(user, 'an outage, then the work done', { timeoutMs: T });
      try {
        const backoff = await runner.waitFor((d) => d.type === 'backoff' && d.threadId === t.threadId, T, 'a backoff');
        mock.setMode('goalComplete');
        const complete = await waitGoalStatus(user, t.threadId, 'complete', T, t.goalSetSeq);
        await waitTurnCompleted(user, t.threadId, 'completed', T, complete.seq);
        await settleAndStop(runner, state, { [t.threadId]: 'complete' });
        const record = await daemonRecord(user, t.threadId, String(t.thread.path));
        assert.ok(record.failed.length >= 1, 'no turn failed');
        assert.ok(record.failed.includes(String(backoff.failedTurnId)), 'the backoff names a turn the daemon failed');
        assertOneRecoveryPerFailedTurn(record);
        assert.equal(record.goalStatus, 'complete');
        assert.equal(runner.of('recovered', t.threadId).length, record.failed.length);
        const status = await runInstalled(bin, ['status', '--codex-home', codexHome.dir, '--state', state], home);
        assert.equal(status.code, 0, status.stderr);
        assert.match(status.stdout, new RegExp(`${t.threadId}\\s+complete`));
      } finally {
        await t.cleanup();
      }
    } finally {
      if (runner?.running) await runner.kill();
      await user?.close().catch(() => undefined);
      if (codexHome) {
        await stopDaemon(codexHome.dir, { force: true });
        await codexHome.cleanup();
      }
      await mock?.close();
      await killAllTracked();
    }
    assert.deepEqual(trackedAlive(), [], 'a process was left behind');
  });
});

/** The installed bin executed itself (its shebang starts node), with HOME the temporary home. */
function runInstalled(bin: string, args: string[], home: string) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(bin, args, {
      env: { ...process.env, HOME: home, XDG_RUNTIME_DIR: testRuntimeDir() },
      timeout: 30_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: string) => (stdout += d));
    child.stderr!.on('data', (d: string) => (stderr += d));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
