// The runner's control commands and its one status shape, without a daemon: how the command line
// is read (src/runner/args.ts), the report `status` prints (src/runner/statusReport.ts) and the
// client that reaches the leading engine over the election channel (src/runner/control.ts), here
// against a real in-process LeaderElection in a private temporary directory (the shipped election
// timings). The same commands against the real daemon: test/integration/runnerControl.test.ts.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { CONTROL_COMMANDS, parseCli, UsageError, type SharedTarget } from '../../src/runner/args';
import { EXIT, leaderSnapshot, reachLeader } from '../../src/runner/control';
import {
  reportFromSnapshot,
  reportFromStateFile,
  statusExitCode,
  statusText,
  type StatusReport,
} from '../../src/runner/statusReport';
import { COMMANDS } from '../../src/core/commandTable';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { LeaderElection } from '../../src/leader/election';
import { electionFor } from '../../src/leader/naming';
import { leaderSocketPath } from '../../src/leader/privateDir';
import type { EngineSnapshot } from '../../src/model/snapshot';
import { needsPerson } from '../../src/model/queries';
import { emptyState, newWatch, type WatchedThread, type WatchState } from '../../src/model/watch';

const env = { HOME: '/home/u' } as NodeJS.ProcessEnv;
const SOCKET = '/home/u/.codex/app-server-control/app-server-control.sock';

/** The daemon as `status` finds it when it runs. */
const UP = { kind: 'running' as const, detail: 'accepts connections' };

describe('control commands on the command line', () => {
  it('each verb names its command on the election channel, and those are engine commands', () => {
    assert.deepEqual(CONTROL_COMMANDS, {
      pause: 'pauseAll',
      resume: 'resumeAll',
      arm: 'arm',
      disarm: 'disarm',
      rearm: 'rearm',
      retry: 'retryNow',
    });
    // `arm` joins COMMANDS with the engine's arm (branch arm); every other one is there already.
    for (const [verb, name] of Object.entries(CONTROL_COMMANDS))
      if (verb !== 'arm') assert.ok((COMMANDS as readonly string[]).includes(name), name);
  });

  it('pause and resume take no thread; the others exactly one; the target as for watch', () => {
    assert.deepEqual(parseCli(['pause'], env), {
      command: 'control',
      verb: 'pause',
      threadId: null,
      json: false,
      target: { kind: 'socket', path: SOCKET },
    });
    // The Codex home must be a directory: this test's own is one.
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-home-'));
    after(() => fs.rmSync(home, { recursive: true, force: true }));
    assert.deepEqual(parseCli(['retry', 'th-1', '--json', '--codex-home', home], env), {
      command: 'control',
      verb: 'retry',
      threadId: 'th-1',
      json: true,
      target: { kind: 'socket', path: path.join(home, 'app-server-control', 'app-server-control.sock') },
    });
    for (const verb of ['arm', 'disarm', 'rearm'] as const) {
      const a = parseCli([verb, '--url', 'ws://127.0.0.1:4500', 'T'], env);
      assert.deepEqual(a.command === 'control' && [a.verb, a.threadId, a.target], [
        verb,
        'T',
        { kind: 'url', url: 'ws://127.0.0.1:4500' },
      ]);
    }
    for (const argv of [
      ['pause', 'T'],
      ['resume', '--state', 'f'],
      ['retry'],
      ['disarm', 'a', 'b'],
      ['rearm', ''],
      ['arm', 'T', '--socket', 'a', '--codex-home', 'b'],
      ['retry', 'T', '--url', 'ws://10.0.0.1:1'],
      ['disarm', 'T', '--max-attempts', '3'],
    ])
      assert.throws(() => parseCli(argv, env), UsageError, argv.join(' '));
  });

  it('--stdio is refused, saying a private daemon has no election', () => {
    for (const argv of [
      ['pause', '--stdio'],
      ['retry', 'T', '--stdio'],
      ['status', '--stdio'],
    ])
      assert.throws(() => parseCli(argv, env), /--stdio has no election/, argv.join(' '));
  });
});

const NOW = Date.UTC(2026, 0, 1, 12);
const POLICY = { ...DEFAULT_OPTIONS, maxAttempts: 3 };

function watch(threadId: string, state: WatchState): WatchedThread {
  const w = newWatch(threadId, NOW - 60_000);
  w.title = `goal ${threadId}`;
  w.state = state;
  if (state.kind === 'backoff') {
    w.failures = 1;
    w.lastFailure = {
      turnId: state.failedTurnId,
      message: 'boom',
      code: 'internalServerError',
      httpStatus: 500,
      at: NOW - 1000,
      dueAt: NOW + 20_000,
    };
  }
  return w;
}

function snapshot(watches: WatchedThread[], pausedAt: number | null = null): EngineSnapshot {
  return {
    at: NOW,
    connection: { kind: 'connected', detail: 'ok', codexVersion: '0.1.0' },
    target: SOCKET,
    pausedAt,
    maxAttempts: POLICY.maxAttempts,
    policy: {
      baseDelayMs: POLICY.baseDelayMs,
      maxDelayMs: POLICY.maxDelayMs,
      maxAttempts: POLICY.maxAttempts,
      autoArm: POLICY.autoArm,
      recoverUsageLimited: POLICY.recoverUsageLimited,
      resyncMs: POLICY.resyncMs,
    },
    nextDueAt: NOW + 20_000,
    watches,
  };
}

describe('the one status shape', () => {
  const KEYS = [
    'source',
    'leader',
    'target',
    'stateFile',
    'note',
    'policy',
    'maxAttempts',
    'recoveryBudget',
    'paused',
    'pausedAt',
    'connection',
    'daemon',
    'nextDueAt',
    'attention',
    'watches',
  ];
  const backoff = watch('a', { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' });

  it('from the engine: who leads, its policy, its watches; attempts out of ITS maxAttempts', () => {
    const r = reportFromSnapshot(snapshot([backoff]), { who: 'runner', pid: 42 }, UP);
    assert.deepEqual(Object.keys(r), KEYS);
    assert.equal(r.source, 'engine');
    assert.deepEqual(r.leader, { who: 'runner', pid: 42 });
    assert.equal(r.policy?.maxAttempts, 3);
    assert.equal(r.paused, false);
    assert.deepEqual(
      r.watches.map((w) => w.threadId),
      ['a'],
    );
    const text = statusText(r, NOW);
    assert.match(text, /^engine: runner, pid 42, watching .* · connected \(codex 0\.1\.0\)$/m);
    assert.match(text, /gives up after 3 failed recoveries/);
    assert.match(text, /^a {2}retry in 0:20 · attempt 1\/3 · 1 consecutive failure {2}"goal a"$/m);
    assert.doesNotMatch(text, /\/6/);
    assert.equal(statusExitCode(r), 0);
  });

  it('from the state file: the same keys, said so, and no denominator it cannot know', () => {
    const state = emptyState();
    state.watches.a = backoff;
    state.pausedAt = NOW - 5000;
    const r = reportFromStateFile(state, '/s.json', SOCKET, 'no engine runs for x', UP);
    assert.deepEqual(Object.keys(r), KEYS);
    assert.deepEqual([r.source, r.leader, r.policy, r.stateFile, r.paused], ['stateFile', null, null, '/s.json', true]);
    const text = statusText(r, NOW);
    assert.match(text, /^no engine runs for x: showing the state file \/s\.json as last saved$/m);
    assert.match(text, /^auto-recovery paused since /m);
    assert.match(text, /^a {2}retry in 0:20 · attempt 1 · 1 consecutive failure/m);
    // No file at all: still the same shape, nothing watched (today's `{"watches":[]}`, a superset).
    const none = reportFromStateFile(null, '/s.json', SOCKET, 'no engine runs', UP);
    assert.deepEqual([none.paused, none.watches, none.attention], [false, [], []]);
  });

  it("shows the recovery budget used in 24 h per goal: 'budget 3/12 used' (of the leader's budget), and only then", () => {
    const used = { ...backoff, recoveries: [NOW - 3_000, NOW - 2_000, NOW - 1_000] };
    const old = { ...watch('c', { kind: 'running' }), recoveries: [NOW - 25 * 3600_000] };
    const snap = snapshot([used, old]);
    snap.policy = { ...snap.policy!, recoveryBudget: 12 };
    const r = reportFromSnapshot(snap, { who: 'runner', pid: 42 }, UP);
    assert.equal(r.recoveryBudget, 12);
    const text = statusText(r, NOW);
    assert.match(text, /^a {2}retry in 0:20 · attempt 1\/3 · 1 consecutive failure · budget 3\/12 used {2}"goal a"$/m);
    assert.match(text, /^c {2}running {2}"goal c"$/m, 'a recovery older than 24 h counted');
    assert.match(text, /at most 12 automatic recoveries per goal in 24 h/);
    // From the state file the budget is not known: the count alone.
    const state = emptyState();
    state.watches.a = used;
    assert.match(
      statusText(reportFromStateFile(state, '/s.json', SOCKET, 'x', UP), NOW),
      / · 3 automatic recoveries in 24 h/,
    );
  });

  // The goals the view's badge counts (model/queries.ts `needsPerson`), no more, no fewer.
  it('exits 1 when a goal waits for a person, as the badge counts it, from either source', () => {
    const elsewhere = (goal: 'active' | 'blocked'): WatchState => ({
      kind: 'elsewhere',
      since: NOW - 1000,
      goal,
      seenActive: true,
      retryable: goal === 'blocked',
    });
    const cases: [WatchState, 0 | 1][] = [
      [{ kind: 'gaveUp', attempts: 3 }, 1],
      [{ kind: 'budgetSpent', used: 12, limit: 12, until: NOW + 60_000 }, 1],
      [{ kind: 'needsAttention', code: 'contextWindowExceeded', message: 'full' }, 1],
      [{ kind: 'failedBeforeArming', code: 'internalServerError', message: 'boom' }, 1],
      [{ kind: 'unloaded' }, 1],
      [elsewhere('blocked'), 1],
      [elsewhere('active'), 0],
      [{ kind: 'disarmed', at: NOW }, 0],
      [{ kind: 'complete' }, 0],
    ];
    for (const [state, code] of cases) {
      const w = watch('b', state);
      if (state.kind === 'unloaded') {
        // A failed goal on a thread the daemon has not loaded (Retry now loads it).
        w.goal = { status: 'blocked', objective: 'b', tokensUsed: 0, tokenBudget: null, updatedAt: NOW - 2000 };
        w.lastFailure = { ...backoff.lastFailure!, turnId: 'tb' };
      }
      assert.equal(needsPerson(w), code === 1, state.kind);
      const fromEngine: StatusReport = reportFromSnapshot(snapshot([backoff, w]), { who: null, pid: 1 }, UP);
      assert.equal(statusExitCode(fromEngine), code, state.kind);
      assert.deepEqual(fromEngine.attention, code ? ['b'] : []);
      const file = emptyState();
      file.watches.b = w;
      assert.equal(statusExitCode(reportFromStateFile(file, '/s', SOCKET, 'none', UP)), code, state.kind);
    }
    assert.equal(EXIT.attention, 1);
  });

  it('exits 4 when the daemon is not running, from either source, whatever waits for a person; says it in words', () => {
    const down = { kind: 'stopped' as const, detail: 'nothing listens at /s.sock' };
    const gaveUp = watch('g', { kind: 'gaveUp', attempts: 3 });
    const engine = reportFromSnapshot(snapshot([gaveUp]), { who: 'runner', pid: 1 }, down);
    assert.equal(statusExitCode(engine), 4);
    assert.equal(EXIT.daemonStopped, 4);
    assert.deepEqual(engine.attention, ['g'], 'still listed');
    assert.match(statusText(engine, NOW), /^daemon: not running \(nothing listens at \/s\.sock\)$/m);
    const file = reportFromStateFile(null, '/s.json', SOCKET, 'no engine runs', down);
    assert.equal(statusExitCode(file), 4);
    // Not known (an unsafe socket, no answer in time): said, and the exit code is the goals' own.
    const unknown = reportFromSnapshot(snapshot([gaveUp]), { who: 'runner', pid: 1 }, { kind: 'unknown', detail: 'x' });
    assert.equal(statusExitCode(unknown), 1);
    assert.match(statusText(unknown, NOW), /^daemon: cannot tell \(x\)$/m);
    assert.doesNotMatch(statusText(reportFromSnapshot(snapshot([]), { who: 'runner', pid: 1 }, UP), NOW), /daemon:/);
  });
});

describe('reaching the engine that leads', () => {
  const dirs: string[] = [];
  const elections: LeaderElection[] = [];
  after(async () => {
    for (const e of elections) await e.stop();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });
  function runtime(): { env: NodeJS.ProcessEnv; dir: string } {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-ctl-'));
    dirs.push(base);
    return { env: { XDG_RUNTIME_DIR: base }, dir: path.join(base, 'codex-goal-recovery') };
  }
  const target: SharedTarget = { kind: 'socket', path: '/tmp/cgr-ctl-daemon.sock' };
  const name = electionFor(target)!.name;

  it('no directory, no socket, or a dead leader socket: no engine runs', async () => {
    const rt = runtime();
    const missing = await reachLeader(target, rt.env);
    assert.deepEqual([missing.kind, missing.kind === 'none' && missing.unsafe], ['none', false]);
    assert.match(missing.kind === 'none' ? missing.reason : '', /^no engine runs for \/tmp\/cgr-ctl-daemon\.sock/);
    fs.mkdirSync(rt.dir, { mode: 0o700 });
    const empty = await reachLeader(target, rt.env);
    assert.match(empty.kind === 'none' ? empty.reason : '', /nobody listens on/);
    // A socket file nobody listens on (a leader that was SIGKILLed leaves one).
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(leaderSocketPath(rt.dir, name), resolve));
    const sock = leaderSocketPath(rt.dir, name);
    await new Promise<void>((resolve) => {
      // Closing a listening Unix server unlinks its path; a hard link keeps the file, as a crash would.
      fs.linkSync(sock, `${sock}.keep`);
      server.close(() => resolve());
    });
    fs.renameSync(`${sock}.keep`, sock);
    assert.ok(fs.existsSync(sock));
    const dead = await reachLeader(target, rt.env);
    assert.match(dead.kind === 'none' ? dead.reason : '', /nobody listens on/);
  });

  it('refuses a directory others can write to, and says so (nothing is sent there)', async () => {
    const rt = runtime();
    fs.mkdirSync(rt.dir);
    fs.chmodSync(rt.dir, 0o777);
    const r = await reachLeader(target, rt.env);
    assert.equal(r.kind, 'none');
    if (r.kind !== 'none') return;
    assert.equal(r.unsafe, true);
    assert.match(r.reason, /no engine can be reached .* writable by group or others/);
  });

  it('a leader: its welcome (who, pid), its snapshot, and a command with its result or its refusal', async () => {
    const rt = runtime();
    const e = new LeaderElection({ dir: rt.dir, name, who: 'VS Code window' });
    elections.push(e);
    const got: [string, unknown[]][] = [];
    e.onLeader((server) => {
      server.broadcast(snapshot([watch('a', { kind: 'idle' })]));
      server.onCommand((cmd, args) => {
        got.push([cmd, args]);
        if (cmd === 'retryNow') throw new Error('no such thread');
        return undefined;
      });
    });
    await e.start();
    assert.equal(e.role, 'leader');
    const r = await reachLeader(target, rt.env);
    assert.equal(r.kind, 'engine');
    if (r.kind !== 'engine') return;
    assert.deepEqual(r.leader, { who: 'VS Code window', pid: process.pid });
    const s = await leaderSnapshot(r.conn, 5000);
    assert.deepEqual(
      s?.watches.map((w) => w.threadId),
      ['a'],
    );
    await r.conn.command('pauseAll', []);
    await assert.rejects(r.conn.command('retryNow', ['x']), /failed on the leader: no such thread/);
    assert.deepEqual(got, [
      ['pauseAll', []],
      ['retryNow', ['x']],
    ]);
    r.conn.close();
    // The client never joined the election: the leader still leads.
    assert.equal(e.role, 'leader');
  });
});
