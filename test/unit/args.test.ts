import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { commandHelp, parseCli as parseWith, USAGE, UsageError } from '../../src/runner/args';
import { engineOptions } from '../../src/runner/cli';
import { POLICY_LIMITS } from '../../src/core/options';

const env = { HOME: '/home/u' } as NodeJS.ProcessEnv;
/** Every --codex-home of these tests is a directory, but for the one named `/not-a-dir`. */
const parseCli = (argv: string[], e: NodeJS.ProcessEnv) => parseWith(argv, e, (p) => !p.startsWith('/not-a-dir'));
/** The default state file of the daemon of ~/.codex (a hash of its socket's path). */
const DEFAULT_STATE = /^\/home\/u\/\.local\/state\/codex-goal-recovery\/state-[0-9a-f]{12}\.json$/;

describe('runner command line', () => {
  it('watch defaults to the daemon socket under ~/.codex', () => {
    const a = parseCli(['watch'], env);
    assert.equal(a.command, 'watch');
    if (a.command !== 'watch') return;
    assert.deepEqual(a.target, { kind: 'socket', path: '/home/u/.codex/app-server-control/app-server-control.sock' });
    assert.match(a.statePath, DEFAULT_STATE);
    assert.equal(a.defaultState, true);
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
    assert.equal(a.defaultState, false);
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
    for (const help of ['help', '--help', '-h'])
      assert.deepEqual(parseCli([help], env), { command: 'help', topic: null }, help);
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
      defaultState: false,
      json: false,
      target: { kind: 'socket', path: '/home/u/.codex/app-server-control/app-server-control.sock' },
    });
    const x = parseCli(['status', '--json', '--socket', 'x'], env);
    assert.ok(x.command === 'status' && x.json && x.defaultState);
    assert.deepEqual(x.target, { kind: 'socket', path: path.resolve('x') });
  });

  it('each daemon has its own default state file, the same for watch and status, whichever way it is named', () => {
    const file = (argv: string[], e = env) => {
      const a = parseCli(argv, e);
      assert.ok(a.command === 'watch' || a.command === 'status');
      return a.statePath;
    };
    const home = file(['watch']);
    assert.match(home, DEFAULT_STATE);
    assert.equal(file(['status']), home, 'status reads the file watch writes');
    assert.equal(file(['watch', '--codex-home', '/home/u/.codex']), home);
    assert.equal(file(['watch', '--socket', '/home/u/.codex/app-server-control/app-server-control.sock']), home);
    assert.equal(file(['watch'], { ...env, CODEX_HOME: '/home/u/.codex' }), home);
    const work = file(['watch', '--codex-home', '/home/u/work']);
    assert.notEqual(work, home, 'another Codex home, another file');
    assert.equal(file(['status', '--codex-home', '/home/u/work']), work);
    const url = file(['watch', '--url', 'ws://127.0.0.1:4500']);
    assert.notEqual(url, home);
    assert.equal(file(['status', '--url', 'ws://127.0.0.1:4500/']), url, 'the URL as the election names it');
    const stdio = file(['watch', '--stdio']);
    assert.ok(![home, work, url].includes(stdio), 'a private daemon has its own file too');
    assert.match(
      file(['watch'], { ...env, XDG_STATE_HOME: '/st' }),
      /^\/st\/codex-goal-recovery\/state-[0-9a-f]{12}\.json$/,
    );
    assert.throws(() => parseCli(['watch', '--state', ' '], env), /--state takes a file name/);
  });

  it('a --codex-home that is not a directory is a usage error naming it, for every command', () => {
    for (const argv of [['watch'], ['status'], ['pause'], ['retry', 't'], ['watch', '--stdio']])
      assert.throws(
        () => parseCli([...argv, '--codex-home', '/not-a-dir/x'], env),
        (e: unknown) => e instanceof UsageError && /^--codex-home \/not-a-dir\/x: not a directory/.test(e.message),
        argv.join(' '),
      );
    // The real file system's answer by default: a file is not a directory, nor is a missing path.
    assert.throws(() => parseWith(['watch', '--codex-home', __filename], env), /not a directory/);
    assert.throws(() => parseWith(['watch', '--codex-home', `${__dirname}/none`], env), /not a directory/);
    assert.equal(parseWith(['watch', '--codex-home', __dirname], env).command, 'watch');
  });

  it("every policy flag takes the range the extension's setting takes, and says it", () => {
    const bounds: [string, keyof typeof POLICY_LIMITS][] = [
      ['--base-delay', 'baseDelaySeconds'],
      ['--max-delay', 'maxDelaySeconds'],
      ['--max-attempts', 'maxAttempts'],
      ['--recovery-budget', 'recoveryBudget'],
    ];
    for (const [flag, key] of bounds) {
      const { min, max } = POLICY_LIMITS[key];
      // The other end of the backoff out of the way: the cap never below the base.
      const extra =
        flag === '--base-delay'
          ? ['--max-delay', String(POLICY_LIMITS.maxDelaySeconds.max)]
          : flag === '--max-delay'
            ? ['--base-delay', String(POLICY_LIMITS.baseDelaySeconds.min)]
            : [];
      for (const ok of [min, max]) assert.equal(parseCli(['watch', flag, String(ok), ...extra], env).command, 'watch');
      const below = flag.startsWith('--max-a') || flag.startsWith('--rec') ? min - 1 : min / 2;
      for (const bad of [String(below), String(max + 1), '-1', '-0.5', 'soon', ''])
        assert.throws(
          () => parseCli(['watch', flag, bad, ...extra], env),
          (e: unknown) =>
            e instanceof UsageError &&
            e.message ===
              `${flag} takes a ${key.endsWith('Seconds') ? 'number of seconds' : 'whole number'} from ${min} to ${max} (got "${bad}")`,
          `${flag} ${bad}`,
        );
    }
    assert.throws(() => parseCli(['watch', '--max-attempts', '2.5'], env), /whole number/);
  });

  it('a backoff cap below its base is refused, whichever of the two is left at its default', () => {
    const refused = (argv: string[], message: RegExp) =>
      assert.throws(
        () => parseCli(argv, env),
        (e: unknown) => e instanceof UsageError && message.test(e.message),
      );
    refused(
      ['watch', '--max-delay', '1', '--base-delay', '10'],
      /^--max-delay 1 is below --base-delay 10: the cap must be at least the base$/,
    );
    refused(['watch', '--max-delay', '10'], /^--max-delay 10 is below --base-delay 30:/);
    refused(
      ['watch', '--base-delay', '3600'],
      /^--base-delay 3600 is above the backoff cap \(1800 s\): give --max-delay too/,
    );
    const same = parseCli(['watch', '--max-delay', '5', '--base-delay', '5'], env);
    assert.ok(same.command === 'watch' && same.maxDelayMs === 5000 && same.baseDelayMs === 5000);
  });

  it("each command's --help (and help COMMAND) prints that command's help; help alone, all of it", () => {
    const topic = (argv: string[]) => {
      const a = parseCli(argv, env);
      return a.command === 'help' ? a.topic : `not help: ${a.command}`;
    };
    assert.equal(topic(['watch', '--help']), 'watch');
    assert.equal(topic(['watch', '-h', '--base-delay', '1']), 'watch');
    assert.equal(topic(['status', '--help']), 'status');
    for (const verb of ['pause', 'resume', 'arm', 'disarm', 'rearm', 'retry'])
      assert.equal(topic([verb, '--help']), 'control');
    assert.equal(topic(['help', 'watch']), 'watch');
    assert.equal(topic(['help', 'retry']), 'control');
    assert.throws(() => parseCli(['help', 'destroy'], env), /help takes one command's name/);
    assert.throws(() => parseCli(['help', 'watch', 'status'], env), /help takes one command's name/);
    const watch = commandHelp('watch');
    assert.match(watch, /^Usage:\n {2}codex-goal-recovery watch /);
    assert.match(watch, /--max-delay S/);
    assert.match(watch, /Exit codes:/);
    assert.doesNotMatch(watch, /codex-goal-recovery status|^retry /m, 'only its own');
    assert.match(commandHelp('status'), /^status {2}Shows/m);
    assert.match(commandHelp('control'), /^retry {3}Makes/m);
    for (const t of ['watch', 'status', 'control'] as const) {
      const body = commandHelp(t).split('\n\n')[1];
      assert.ok(USAGE.includes(body), `${t}: the whole help holds the same text`);
    }
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
