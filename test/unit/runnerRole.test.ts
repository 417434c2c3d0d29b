// The runner in the leader election: naming (a runner and a window on one daemon meet), the
// handover of the old leader's state, the runner's roles with real elections over a fake daemon,
// and the command line's role lines (text and JSON) with real processes. One runner test holds its
// store's load (a slow disk: MemoryStore's `loadGate`).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { testStateHome } from '../support/runnerProcess';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { systemClock } from '../../src/core/clock';
import { Engine } from '../../src/core/engine';
import { FollowerConnection, LeaderCommandError } from '../../src/leader/followerConnection';
import { HandoverStore, mergeLeaderSnapshot, parseSnapshot } from '../../src/leader/handover';
import { electionDir, electionFor, electionKey, electionName } from '../../src/leader/naming';
import type { Decision } from '../../src/model/decision';
import { emptySnapshot, type EngineSnapshot } from '../../src/model/snapshot';
import { emptyState, newWatch, RECOVERED_LIMIT, type PersistedState, type WatchedThread } from '../../src/model/watch';
import { RunnerRole, roleObject, roleLine, type RoleEvent } from '../../src/runner/role';
import { FakeDaemon } from '../support/fakeDaemon';
import { TEST_OPTIONS } from '../support/engineHarness';
import { MemoryStore } from '../support/memoryStore';
import { sleep, tempDir, until } from '../support/wait';
import { JsonFileStore } from '../../src/store/jsonFileStore';

const CLI = path.resolve(__dirname, '..', '..', 'src', 'runner', 'cli.js');
/** The runners end themselves if this test process dies without its `after` (test/support/orphanGuard.ts). */
const GUARDED = ['--require', path.resolve(__dirname, '..', 'support', 'orphanGuard.js'), CLI];
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

describe('election naming', () => {
  it('a runner watching socket P and a window whose settings resolve to P join the same election', () => {
    const p = '/home/u/.codex/app-server-control/app-server-control.sock';
    const fromWindow = electionFor({ kind: 'socket', path: p })!; // what WindowRole computes from its settings
    const cwd = process.cwd();
    const relative = path.relative(cwd, p);
    const fromRunner = electionFor({ kind: 'socket', path: path.join(relative, '..', 'app-server-control.sock') })!;
    assert.equal(fromRunner.name, fromWindow.name);
    // The name windows used before the runner joined: a hash of the settings' (absolute) path.
    assert.equal(fromWindow.name, electionName(p));
    assert.match(fromWindow.name, /^leader-[0-9a-f]{12}$/);
    assert.notEqual(electionFor({ kind: 'socket', path: '/other/app-server-control.sock' })!.name, fromWindow.name);
  });

  it('a ws:// URL is keyed by the URL; a private stdio child has no election', () => {
    assert.equal(electionKey({ kind: 'url', url: 'ws://127.0.0.1:4500' }), 'ws://127.0.0.1:4500/');
    assert.equal(
      electionFor({ kind: 'url', url: 'ws://127.0.0.1:4500' })!.name,
      electionFor({ kind: 'url', url: 'ws://127.0.0.1:4500/' })!.name,
    );
    assert.notEqual(
      electionFor({ kind: 'url', url: 'ws://127.0.0.1:4501' })!.name,
      electionFor({ kind: 'url', url: 'ws://127.0.0.1:4500' })!.name,
    );
    assert.equal(electionFor({ kind: 'stdio', command: 'codex', args: ['app-server'] }), null);
  });

  it('the directory is under XDG_RUNTIME_DIR, else a per-user one in the temp dir', () => {
    assert.equal(electionDir({ XDG_RUNTIME_DIR: '/run/user/7' }), '/run/user/7/codex-goal-recovery');
    assert.equal(electionDir({}), path.join(os.tmpdir(), `codex-goal-recovery-${process.getuid?.() ?? 'user'}`));
  });
});

function watch(threadId: string, updatedAt: number, extra: Partial<WatchedThread> = {}): WatchedThread {
  return { ...newWatch(threadId, updatedAt), updatedAt, ...extra };
}

function snapshotOf(watches: WatchedThread[], pausedAt: number | null = null): EngineSnapshot {
  return { ...emptySnapshot('/s.sock', 5_000), pausedAt, watches };
}

describe("handover of the old leader's state", () => {
  it('takes the threads the store does not know or knows older, keeps its own newer or equal copies', () => {
    const stored: PersistedState = emptyState();
    stored.watches.same = watch('same', 100, {
      state: { kind: 'recovering', attempt: 1, failedTurnId: 'f1', sentAt: 100 },
      pending: { failedTurnId: 'f1', attempt: 1, sentAt: 100 },
    });
    stored.watches.older = watch('older', 50);
    stored.watches.mineNewer = watch('mineNewer', 300, { state: { kind: 'complete' } });
    const snap = snapshotOf([
      watch('same', 100, { state: { kind: 'backoff', attempt: 1, failedTurnId: 'f1' } }),
      watch('older', 60, { state: { kind: 'backoff', attempt: 2, failedTurnId: 'f2' } }),
      watch('mineNewer', 200, { state: { kind: 'running' } }),
      watch('unknown', 10, { state: { kind: 'backoff', attempt: 1, failedTurnId: 'f9' } }),
    ]);
    const { state, taken } = mergeLeaderSnapshot(stored, snap);
    assert.deepEqual(taken.sort(), ['older', 'unknown']);
    assert.equal(state.watches.same.state.kind, 'recovering', "a tie must keep the store's write-ahead copy");
    assert.deepEqual(state.watches.same.pending, { failedTurnId: 'f1', attempt: 1, sentAt: 100 });
    assert.equal(state.watches.older.state.kind, 'backoff');
    assert.equal(state.watches.mineNewer.state.kind, 'complete');
    assert.equal(state.watches.unknown.state.kind, 'backoff');
    assert.equal(stored.watches.unknown, undefined, 'the stored state was modified');
  });

  it("joins the failed turns recovered on either side, bounded, and follows the leader's pause and disarms", () => {
    const stored: PersistedState = emptyState();
    stored.pausedAt = 7;
    stored.watches.a = watch('a', 500, { recovered: ['t1', 't2'] });
    stored.watches.b = watch('b', 1, { recovered: Array.from({ length: RECOVERED_LIMIT }, (_, i) => `old${i}`) });
    stored.watches.c = watch('c', 1);
    stored.disarmed.c = 1;
    const snap = snapshotOf(
      [
        watch('a', 400, { recovered: ['t2', 't3'] }),
        watch('b', 2, { recovered: ['new'] }),
        watch('c', 2, { state: { kind: 'running' } }),
        watch('d', 2, { state: { kind: 'disarmed', at: 42 } }),
      ],
      null,
    );
    const { state } = mergeLeaderSnapshot(stored, snap);
    assert.deepEqual(state.watches.a.recovered, ['t1', 't2', 't3']);
    assert.equal(state.watches.b.recovered.length, RECOVERED_LIMIT);
    assert.equal(state.watches.b.recovered.at(-1), 'new');
    assert.equal(state.pausedAt, null, 'the leader had resumed auto-recovery');
    assert.equal(state.disarmed.c, undefined, 're-armed on the leader, still disarmed here');
    assert.equal(state.disarmed.d, 42);
    assert.equal(mergeLeaderSnapshot(emptyState(), snapshotOf([], 99)).state.pausedAt, 99);
  });

  it('the store merges once, reports what it took, and saves to the inner store, with the hint of what changed', async () => {
    const inner = new MemoryStore();
    const taken: string[][] = [];
    const store = new HandoverStore(inner, snapshotOf([watch('x', 3)]), (t) => taken.push(t));
    assert.deepEqual(Object.keys((await store.load()).state.watches), ['x']);
    assert.deepEqual(taken, [['x']]);
    assert.deepEqual(Object.keys((await store.load()).state.watches), [], 'merged twice');
    await store.save({ ...emptyState(), pausedAt: 1 });
    assert.equal(inner.saved.pausedAt, 1);
    assert.equal(inner.lastChanged, undefined);
    await store.save({ ...emptyState(), pausedAt: 2 }, new Set(['x']));
    assert.equal(inner.saved.pausedAt, 2);
    assert.deepEqual(
      inner.lastChanged,
      new Set(['x']),
      'the hint did not reach the inner store: it re-serializes every watch',
    );
    assert.equal(parseSnapshot({ nope: true }), null);
    assert.ok(parseSnapshot(JSON.parse(JSON.stringify(snapshotOf([watch('x', 3)])))));
  });
});

describe("a new leader's first save", () => {
  it("writes what it took from the old leader's snapshot, even if nothing changes it: a crash right after keeps it", async () => {
    // No daemon to reach: nothing the engine does touches the watch, and its only saves are the
    // ones its connection attempts bring.
    const file = path.join(tempDir('cgr-role-'), 'state.json');
    const engine = new Engine(TEST_OPTIONS, {
      connect: () => Promise.reject(new Error('no daemon here')),
      target: 'fake',
      store: new HandoverStore(new JsonFileStore(file), snapshotOf([watch('x', 3)])),
      clock: systemClock,
      random: () => 1,
      onDecision: () => undefined,
    });
    cleanups.push(() => engine.stop());
    await engine.start();
    await until('a save', () => fs.existsSync(`${file}.journal`) || fs.existsSync(file));
    await engine.idle();
    // A crash now (the engine dropped without stop()): what the disk holds.
    const { state, problem } = await new JsonFileStore(file).load();
    assert.equal(problem, null);
    assert.deepEqual(Object.keys(state.watches), ['x'], 'the watch taken from the snapshot was lost');
  });
});

interface Runner {
  role: RunnerRole;
  events: RoleEvent[];
  decisions: Decision[];
  warnings: string[];
  store: MemoryStore;
}

function runner(daemon: FakeDaemon, dir: string | null, name = 'leader-unit', store = new MemoryStore()): Runner {
  const events: RoleEvent[] = [];
  const decisions: Decision[] = [];
  const warnings: string[] = [];
  const role = new RunnerRole({
    election: dir === null ? null : { dir, name },
    // The shipped options but a 300 ms backoff (base and cap; shipped 30 s / 30 min): this runs on
    // the real clock, and a recovery must fall due within the test.
    makeEngine: (seed, onChange, onDecision) =>
      new Engine(
        { ...TEST_OPTIONS, baseDelayMs: 300, maxDelayMs: 300, resyncMs: 60_000 },
        {
          connect: daemon.connector(),
          target: 'fake',
          store: new HandoverStore(store, seed),
          clock: systemClock,
          random: () => 1,
          onDecision: (d) => {
            onDecision(d);
            onChange();
          },
          onChange,
        },
      ),
    onDecision: (d) => decisions.push(d),
    onRole: (e) => events.push(e),
    onWarning: (m) => warnings.push(m),
    broadcastMs: 20,
  });
  cleanups.push(() => role.stop());
  return { role, events, decisions, warnings, store };
}

function failThread(d: FakeDaemon, id: string, turnId: string): void {
  d.fail(id, turnId);
  const t = d.thread(id);
  d.notify('thread/goal/updated', { threadId: id, turnId, goal: t.goal });
  d.notify('thread/status/changed', { threadId: id, status: t.status });
  d.notify('turn/completed', { threadId: id, turn: t.turn });
}

describe("the runner's role", () => {
  it("one runner leads, the other stands by naming it; the leader serves its state and the commands; the follower takes over with the leader's state and recovers once", async () => {
    const dir = tempDir('cgr-role-');
    const daemon = new FakeDaemon(dir);
    daemon.addThread('t1');
    const a = runner(daemon, path.join(dir, 'election'));
    await a.role.start();
    assert.deepEqual(a.events, [{ role: 'leader', elected: true }]);
    await until('a arms t1', () => a.decisions.some((d) => d.type === 'armed'));
    const b = runner(daemon, path.join(dir, 'election'));
    await b.role.start();
    await until('b stands by', () => b.events.length > 0);
    assert.deepEqual(b.events, [{ role: 'follower', leaderPid: process.pid, leaderWho: 'runner' }]);
    assert.equal(b.role.runningEngine, null, 'the follower runs an engine');

    // A window-like follower: it sees the leader's state and its commands run on the leader's engine.
    const socket = net.createConnection(path.join(dir, 'election', 'leader-unit.sock'));
    const win = new FollowerConnection(socket);
    cleanups.push(() => {
      win.close();
      return Promise.resolve();
    });
    await win.welcomed;
    await win.command('pauseAll', []);
    assert.ok(a.role.runningEngine!.snapshot().pausedAt !== null);
    await win.command('resumeAll', []);
    assert.equal(a.role.runningEngine!.snapshot().pausedAt, null);
    await assert.rejects(
      win.command('selfDestruct', []),
      (e: unknown) => e instanceof LeaderCommandError && /unknown command selfDestruct/.test(e.message),
    );
    await assert.rejects(win.command('disarm', []), /disarm needs a thread/);

    // Fails while a leads: a backs off, and b receives that state.
    failThread(daemon, 't1', 'turn-1');
    await until('a backs off', () => a.decisions.some((d) => d.type === 'backoff'));
    await until('the backoff reaches the follower', () => {
      const s = parseSnapshot(win.state);
      return s?.watches.some((w) => w.state.kind === 'backoff') ?? false;
    });
    await sleep(50); // b's connection got the same state as win's
    await a.role.stop(); // before the recovery is due (300 ms)
    assert.equal(daemon.count('thread/goal/set'), 0);
    await until('b leads', () => b.events.length === 2, 5_000);
    assert.deepEqual(b.events[1], { role: 'leader', elected: true });
    await until('b recovers t1', () => b.decisions.some((d) => d.type === 'recovered'));
    assert.equal(daemon.count('thread/goal/set'), 1);
    // b never saw t1 active itself: only the handover let it recover the failure.
    assert.equal(b.decisions.filter((d) => d.type === 'armed').length, 0);
    assert.ok(b.store.saved.watches.t1, 'the new leader did not save the thread it took over');
    // No second set: the strict fake daemon fails one at arrival; and b's stop waits for the work
    // under way (the recovery's own look included) before the count is read.
    await b.role.stop();
    daemon.check();
    assert.equal(daemon.count('thread/goal/set'), 1, 'a second recovery of one failed turn');
    assert.deepEqual(a.warnings, []);
    assert.deepEqual(b.warnings, []);
  });

  it("a command from another engine's window waits until the leader has loaded its state (it never saves an empty state over it)", async () => {
    const dir = tempDir('cgr-role-');
    const daemon = new FakeDaemon(dir);
    daemon.addThread('t1');
    const saved = emptyState();
    saved.watches.t1 = watch('t1', 1, { recovered: ['turn-0'] });
    let open: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const store = new MemoryStore(saved, { loadGate: gate });
    const r = runner(daemon, path.join(dir, 'election'), 'leader-gated', store);
    const starting = r.role.start();
    await until('the role line', () => r.events.length > 0);
    const win = new FollowerConnection(net.createConnection(path.join(dir, 'election', 'leader-gated.sock')));
    cleanups.push(() => {
      win.close();
      return Promise.resolve();
    });
    await win.welcomed;
    let answered = false;
    const command = win.command('pauseAll', []).then(() => {
      answered = true;
    });
    await sleep(200);
    assert.equal(answered, false, 'the command ran before the engine had loaded its state');
    assert.equal(store.saves, 0, 'saved before loading');
    open();
    await starting;
    await command;
    assert.notEqual(store.saved.pausedAt, null);
    assert.deepEqual(store.saved.watches.t1?.recovered, ['turn-0'], 'the stored state was overwritten');
  });

  it('without a usable election directory it runs the engine anyway and says so', async () => {
    const dir = tempDir('cgr-role-');
    const open = path.join(dir, 'open');
    fs.mkdirSync(open, { mode: 0o777 });
    fs.chmodSync(open, 0o777);
    const daemon = new FakeDaemon(dir);
    daemon.addThread('t1');
    const r = runner(daemon, open);
    await r.role.start();
    assert.equal(r.warnings.length, 1);
    assert.match(
      r.warnings[0],
      /leader election unavailable \(.*writable by group or others.*\); this runner runs the engine without it/,
    );
    assert.deepEqual(r.events, [{ role: 'leader', elected: false }]);
    await until('armed', () => r.decisions.some((d) => d.type === 'armed'));
  });

  it('with no election (a private stdio daemon) it runs the engine and tells nothing', async () => {
    const dir = tempDir('cgr-role-');
    const daemon = new FakeDaemon(dir);
    daemon.addThread('t1');
    const r = runner(daemon, null);
    await r.role.start();
    assert.deepEqual(r.events, []);
    assert.deepEqual(r.warnings, []);
    await until('armed', () => r.decisions.some((d) => d.type === 'armed'));
  });

  it('role lines read like decision lines', () => {
    const now = Date.UTC(2026, 0, 2, 3, 4, 5);
    assert.equal(
      roleLine({ role: 'follower', leaderPid: 42, leaderWho: 'VS Code window' }, '/s.sock', now),
      '2026-01-02T03:04:05.000Z standby: another engine (VS Code window, pid 42) is watching /s.sock; this runner stands by and takes over if it stops',
    );
    assert.equal(
      roleLine({ role: 'follower', leaderPid: 42, leaderWho: null }, '/s.sock', now),
      '2026-01-02T03:04:05.000Z standby: another engine (pid 42) is watching /s.sock; this runner stands by and takes over if it stops',
    );
    assert.match(
      roleLine({ role: 'leader', elected: true }, '/s.sock', now),
      /^2026-01-02T03:04:05.000Z leader: this runner runs the engine for \/s.sock/,
    );
    assert.deepEqual(roleObject({ role: 'follower', leaderPid: 42, leaderWho: 'runner' }, '/s.sock', now), {
      ts: '2026-01-02T03:04:05.000Z',
      type: 'role',
      role: 'follower',
      leaderPid: 42,
      leaderWho: 'runner',
      target: '/s.sock',
    });
  });
});

/** The command line as a process (out/src/runner/cli.js), its stdout lines collected. */
class Cli {
  readonly lines: string[] = [];
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  constructor(args: string[], env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, [...GUARDED, ...args], {
      // A runner without --state keeps its default file in this test's own XDG_STATE_HOME.
      env: { ...process.env, XDG_STATE_HOME: testStateHome(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    readline.createInterface({ input: this.child.stdout! }).on('line', (l) => this.lines.push(l));
    readline.createInterface({ input: this.child.stderr! }).on('line', (l) => this.lines.push(`stderr: ${l}`));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    cleanups.push(async () => {
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
      await this.exited;
    });
  }
  async line(re: RegExp, timeoutMs = 10_000): Promise<string> {
    await until(`a line matching ${re}\n${this.lines.join('\n')}`, () => this.lines.some((l) => re.test(l)), timeoutMs);
    return this.lines.find((l) => re.test(l))!;
  }
}

describe('the command line', () => {
  it('text mode: the second runner on a socket stands by naming the first, and takes over when it is killed', async () => {
    const dir = tempDir('cgr-role-');
    const env = { XDG_RUNTIME_DIR: path.join(dir, 'run') };
    fs.mkdirSync(env.XDG_RUNTIME_DIR, { mode: 0o700 });
    // No daemon at that socket: the engine keeps reconnecting, which is all this needs.
    const sock = path.join(dir, 'nobody.sock');
    const first = new Cli(['watch', '--socket', sock, '--state', path.join(dir, 'a.json')], env);
    await first.line(/ leader: this runner runs the engine for /);
    const second = new Cli(
      ['watch', '--socket', path.relative(process.cwd(), sock), '--state', path.join(dir, 'b.json')],
      env,
    );
    const standby = await second.line(/ standby: /);
    assert.match(
      standby,
      new RegExp(
        `^\\S+Z standby: another engine \\(runner, pid ${first.child.pid}\\) is watching ${sock.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}; this runner stands by`,
      ),
    );
    assert.equal(
      second.lines.some((l) => / connection /.test(l)),
      false,
      'the follower connects to the daemon',
    );
    first.child.kill('SIGKILL');
    await first.exited;
    await second.line(/ leader: this runner runs the engine for /);
    await second.line(/ connection (error|disconnected): /);
    second.child.kill('SIGINT');
    assert.equal(await second.exited, 0);
    assert.match(second.lines.at(-1)!, /stopped on SIGINT; state saved to /);
  });

  it('JSON mode: role lines; an unusable election directory is a warning and the runner leads anyway', async () => {
    const dir = tempDir('cgr-role-');
    const run = path.join(dir, 'run');
    fs.mkdirSync(path.join(run, 'codex-goal-recovery'), { recursive: true });
    fs.chmodSync(path.join(run, 'codex-goal-recovery'), 0o777);
    const cli = new Cli(
      ['watch', '--socket', path.join(dir, 'nobody.sock'), '--state', path.join(dir, 's.json'), '--json'],
      { XDG_RUNTIME_DIR: run },
    );
    const warning = JSON.parse(await cli.line(/"type":"warning"/)) as { message: string; level: string };
    assert.match(warning.message, /^leader election unavailable \(.*writable by group or others/);
    assert.equal(warning.level, 'warning');
    const role = JSON.parse(await cli.line(/"type":"role"/)) as Record<string, unknown>;
    assert.deepEqual(
      { ...role, ts: 'x' },
      { ts: 'x', level: 'notice', type: 'role', role: 'leader', elected: false, target: path.join(dir, 'nobody.sock') },
    );
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
  });

  it('under systemd (stdout the journal stream JOURNAL_STREAM names): lines start with their syslog priority, plain and --json', async () => {
    const plain = await journalRun([]);
    assert.ok(
      plain.every((l) => /^<[3-7]>\d{4}-/.test(l)),
      plain.join('\n'),
    );
    assert.ok(
      plain.some((l) => /^<4>.* connection /.test(l)),
      `a lost connection is a warning:\n${plain.join('\n')}`,
    );
    assert.ok(
      plain.some((l) => /^<5>.* stopped on SIGTERM/.test(l)),
      plain.join('\n'),
    );
    const json = await journalRun(['--json']);
    const priority = { error: 3, warning: 4, notice: 5, info: 6, debug: 7 } as Record<string, number>;
    for (const l of json) {
      const m = /^<(\d)>(\{.*\})$/.exec(l);
      assert.ok(m, l);
      const object = JSON.parse(m[2]) as { level: string };
      assert.equal(Number(m[1]), priority[object.level], l);
    }
    assert.ok(
      json.some((l) => l.startsWith('<4>') && l.includes('"type":"connection"')),
      json.join('\n'),
    );
  });

  it('a reader that goes away (watch piped into `head`): the runner stops cleanly, its state saved, instead of dying on EPIPE', async () => {
    const dir = tempDir('cgr-role-');
    const env = { XDG_RUNTIME_DIR: path.join(dir, 'run') };
    fs.mkdirSync(env.XDG_RUNTIME_DIR, { mode: 0o700 });
    const state = path.join(dir, 's.json');
    // No daemon: the engine keeps reconnecting and says so, so it writes again after the pipe closed.
    const cli = new Cli(['watch', '--socket', path.join(dir, 'nobody.sock'), '--state', state], env);
    await cli.line(/ leader: this runner runs the engine for /);
    cli.child.stdout!.destroy();
    assert.equal(await cli.exited, 0, cli.lines.join('\n'));
    assert.ok(fs.existsSync(state), 'the state was not saved');
    assert.equal(cli.lines.filter((l) => l.startsWith('stderr: ')).join('\n'), '');
  });
});

/**
 * A runner on no daemon whose stdout is the journal's stream, stood in for by a file that
 * JOURNAL_STREAM names by its device and inode (as systemd names the socket it connects a
 * service's stdout to): its lines once it said the connection failed and was stopped.
 */
async function journalRun(flags: string[]): Promise<string[]> {
  const dir = tempDir('cgr-role-');
  const env = { XDG_RUNTIME_DIR: path.join(dir, 'run') };
  fs.mkdirSync(env.XDG_RUNTIME_DIR, { mode: 0o700 });
  const log = path.join(dir, 'journal');
  const fd = fs.openSync(log, 'w');
  const st = fs.fstatSync(fd);
  const child = spawn(process.execPath, [...GUARDED, 'watch', '--socket', path.join(dir, 'nobody.sock'), ...flags], {
    env: { ...process.env, XDG_STATE_HOME: testStateHome(), ...env, JOURNAL_STREAM: `${st.dev}:${st.ino}` },
    stdio: ['ignore', fd, 'ignore'],
  });
  fs.closeSync(fd);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  const read = () => fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
  await until(`a lost connection line\n${read().join('\n')}`, () => read().some((l) => /connection/.test(l)), 10_000);
  child.kill('SIGTERM');
  await exited;
  return read();
}
