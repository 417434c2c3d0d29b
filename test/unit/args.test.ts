import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { parseCli, UsageError } from '../../src/runner/args';
import { engineOptions } from '../../src/runner/cli';

const env = { HOME: '/home/u' } as NodeJS.ProcessEnv;

describe('runner command line', () => {
  it('watch defaults to the daemon socket under ~/.codex', () => {
    const a = parseCli(['watch'], env);
    assert.equal(a.command, 'watch');
    if (a.command !== 'watch') return;
    assert.deepEqual(a.target, { kind: 'socket', path: '/home/u/.codex/app-server-control/app-server-control.sock' });
    assert.equal(a.statePath, '/home/u/.local/state/codex-goal-recovery/state.json');
    assert.equal(a.json, false);
  });

  it('honours CODEX_HOME and --codex-home', () => {
    const a = parseCli(['watch'], { ...env, CODEX_HOME: '/x/codex' });
    assert.equal(
      a.command === 'watch' && a.target.kind === 'socket' && a.target.path,
      '/x/codex/app-server-control/app-server-control.sock',
    );
    const b = parseCli(['watch', '--codex-home', '/y'], env);
    assert.equal(
      b.command === 'watch' && b.target.kind === 'socket' && b.target.path,
      '/y/app-server-control/app-server-control.sock',
    );
  });

  it('takes --socket, --url, --stdio, fractional delays and --json', () => {
    const a = parseCli(
      [
        'watch',
        '--socket',
        's.sock',
        '--state',
        'st.json',
        '--base-delay',
        '0.25',
        '--max-delay',
        '2',
        '--max-attempts',
        '3',
        '--json',
      ],
      env,
    );
    assert.ok(a.command === 'watch');
    if (a.command !== 'watch') return;
    assert.deepEqual(a.target, { kind: 'socket', path: path.resolve('s.sock') });
    assert.equal(a.statePath, path.resolve('st.json'));
    assert.deepEqual([a.baseDelayMs, a.maxDelayMs, a.maxAttempts, a.json], [250, 2000, 3, true]);
    const opts = engineOptions(a, {});
    assert.deepEqual([opts.baseDelayMs, opts.maxDelayMs, opts.maxAttempts], [250, 2000, 3]);
    const tuned = engineOptions(a, {
      CODEX_GOAL_RECOVERY_RESYNC_S: '1.5',
      CODEX_GOAL_RECOVERY_LIMITER_INTERVAL_S: '0.25',
    });
    assert.deepEqual([tuned.resyncMs, tuned.limiterIntervalMs], [1500, 250]);
    const untouched = engineOptions(a, {
      CODEX_GOAL_RECOVERY_RESYNC_S: 'x',
      CODEX_GOAL_RECOVERY_LIMITER_INTERVAL_S: '-1',
    });
    assert.deepEqual([untouched.resyncMs, untouched.limiterIntervalMs], [opts.resyncMs, opts.limiterIntervalMs]);
    const u = parseCli(['watch', '--url', 'ws://127.0.0.1:4500'], env);
    assert.deepEqual(u.command === 'watch' && u.target, { kind: 'url', url: 'ws://127.0.0.1:4500' });
    const s = parseCli(['watch', '--stdio', '--codex-home', '/h'], { ...env, CODEX_GOAL_RECOVERY_CODEX: '/bin/codex' });
    assert.ok(s.command === 'watch' && s.target.kind === 'stdio');
    if (s.command === 'watch' && s.target.kind === 'stdio') {
      assert.equal(s.target.command, '/bin/codex');
      assert.deepEqual(s.target.args, ['app-server']);
      assert.equal(s.target.env?.CODEX_HOME, '/h');
    }
  });

  it('no command is a usage error (exit 2, the usage on stderr); help and version in every spelling', () => {
    assert.throws(() => parseCli([], env), UsageError);
    for (const help of ['help', '--help', '-h']) assert.deepEqual(parseCli([help], env), { command: 'help' }, help);
    for (const version of ['version', '--version', '-V'])
      assert.deepEqual(parseCli([version], env), { command: 'version' }, version);
  });

  it('refuses conflicting or malformed flags with a usage error', () => {
    for (const argv of [
      ['watch', '--socket', 'a', '--url', 'ws://127.0.0.1:1'],
      ['watch', '--socket', 'a', '--codex-home', 'b'],
      ['watch', '--base-delay', '-1'],
      ['watch', '--base-delay', 'soon'],
      ['watch', '--max-attempts', '1.5'],
      ['watch', '--max-attempts', '0'],
      ['watch', '--url', 'ws://192.168.1.4:80'],
      ['watch', '--url', 'http://127.0.0.1:80'],
      ['watch', '--frobnicate'],
      ['status', '--socket', 'x', '--url', 'ws://127.0.0.1:1'],
      ['status', '--stdio'],
      ['status', 'THREAD'],
      ['status', '--max-attempts', '3'],
      ['destroy'],
    ]) {
      assert.throws(() => parseCli(argv, env), UsageError, argv.join(' '));
    }
  });

  it('status takes --state, --json and the target flags (default: the daemon socket under ~/.codex)', () => {
    assert.deepEqual(parseCli(['status', '--state', '/s.json'], env), {
      command: 'status',
      statePath: '/s.json',
      json: false,
      target: { kind: 'socket', path: '/home/u/.codex/app-server-control/app-server-control.sock' },
    });
    assert.deepEqual(parseCli(['status', '--json', '--socket', 'x'], env), {
      command: 'status',
      statePath: '/home/u/.local/state/codex-goal-recovery/state.json',
      json: true,
      target: { kind: 'socket', path: path.resolve('x') },
    });
  });

  it('watch takes --verbose; without it, no debug lines', () => {
    const a = parseCli(['watch', '--verbose', '--json'], env);
    assert.ok(a.command === 'watch' && a.verbose && a.json);
    const b = parseCli(['watch'], env);
    assert.ok(b.command === 'watch' && !b.verbose);
  });
  it('watch exports nothing unless asked: --otlp-endpoint URL, or --otlp-from-codex-config (the Codex home)', () => {
    const none = parseCli(['watch'], env);
    assert.ok(none.command === 'watch');
    assert.equal(none.otlp, null);
    const url = parseCli(['watch', '--otlp-endpoint', 'http://127.0.0.1:4318'], env);
    assert.ok(url.command === 'watch');
    assert.deepEqual(url.otlp, { kind: 'endpoint', url: 'http://127.0.0.1:4318' });
    // Codex's config.toml: --codex-home's, else $CODEX_HOME's, else ~/.codex's.
    const fromHome = parseCli(['watch', '--otlp-from-codex-config', '--codex-home', '/y'], env);
    assert.ok(fromHome.command === 'watch');
    assert.deepEqual(fromHome.otlp, { kind: 'codexConfig', codexHome: '/y' });
    const fromEnv = parseCli(['watch', '--otlp-from-codex-config'], { ...env, CODEX_HOME: '/x/codex' });
    assert.ok(fromEnv.command === 'watch');
    assert.deepEqual(fromEnv.otlp, { kind: 'codexConfig', codexHome: '/x/codex' });
    const fromDefault = parseCli(['watch', '--otlp-from-codex-config'], env);
    assert.ok(fromDefault.command === 'watch');
    assert.deepEqual(fromDefault.otlp, { kind: 'codexConfig', codexHome: '/home/u/.codex' });
  });

  it('--otlp-endpoint takes an http(s) base URL, and not with --otlp-from-codex-config', () => {
    for (const bad of ['127.0.0.1:4318', 'grpc://collector:4317', 'ftp://x', 'http://x:4318/?a=1', ''])
      assert.throws(() => parseCli(['watch', '--otlp-endpoint', bad], env), UsageError, bad);
    assert.throws(
      () => parseCli(['watch', '--otlp-endpoint', 'http://127.0.0.1:4318', '--otlp-from-codex-config'], env),
      /choose one/,
    );
    // Watch's own flags: status and the commands take none of them.
    assert.throws(() => parseCli(['status', '--otlp-endpoint', 'http://127.0.0.1:4318'], env), UsageError);
  });
});
