import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as net from 'node:net';
import * as readline from 'node:readline';
import { spawn, type ChildProcess } from 'node:child_process';
import * as z from 'zod/mini';
import { LeaderElection, type LeaderElectionOptions, type Role } from '../../src/leader/election';
import { FollowerConnection, LeaderCommandError } from '../../src/leader/followerConnection';
import type { LeaderServer } from '../../src/leader/leaderServer';
import { encodeMessage, LineDecoder, FollowerMessageSchema, MAX_LINE_BYTES } from '../../src/leader/messages';
import { LEASE_MS, RENEW_MS } from '../../src/leader/lease';
import { sleep, tempDir } from '../support/wait';

const CHILD = path.resolve(__dirname, '..', 'support', 'leaderChild.js');
const NAME = 'leader-test';
const now = () => Number(process.hrtime.bigint()) / 1e6;

// ---- cleanup, even on failure ---------------------------------------------------------------

const elections = new Set<LeaderElection>();
const children = new Set<Child>();

after(async () => {
  for (const c of children) c.kill();
  await Promise.all([...children].map((c) => c.exited));
  await Promise.all([...elections].map((e) => e.stop().catch(() => undefined)));
});

async function stopAll(list: LeaderElection[]): Promise<void> {
  await Promise.all(list.map((e) => e.stop()));
}

interface Tracked {
  election: LeaderElection;
  logs: string[];
  /** Role changes with the time they happened. */
  changes: Array<{ role: Role; t: number }>;
}

function election(dir: string, extra: Partial<LeaderElectionOptions> = {}): Tracked {
  const logs: string[] = [];
  const e = new LeaderElection({ dir, name: NAME, checkMs: 200, log: (m) => logs.push(m), ...extra });
  const tracked: Tracked = { election: e, logs, changes: [] };
  e.onRoleChange((role) => tracked.changes.push({ role, t: now() }));
  elections.add(e);
  return tracked;
}

async function waitUntil(cond: () => boolean, timeoutMs: number, what: string): Promise<number> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
  return Date.now() - t0;
}

/** Intervals during which each role log says "leader" (end: next change, or `endAt`). */
function leaderIntervals(changes: Array<{ role: string; t: number }>, endAt = Infinity): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let start: number | null = null;
  for (const c of changes) {
    if (c.role === 'leader' && start === null) start = c.t;
    else if (c.role !== 'leader' && start !== null) {
      out.push([start, c.t]);
      start = null;
    }
  }
  if (start !== null) out.push([start, endAt]);
  return out;
}

function assertNoTwoLeaders(logs: Array<{ label: string; intervals: Array<[number, number]> }>): void {
  for (let i = 0; i < logs.length; i++) {
    for (let j = i + 1; j < logs.length; j++) {
      for (const [s1, e1] of logs[i].intervals) {
        for (const [s2, e2] of logs[j].intervals) {
          assert.ok(
            !(s1 < e2 && s2 < e1),
            `${logs[i].label} [${s1}, ${e1}) and ${logs[j].label} [${s2}, ${e2}) were leaders at once`,
          );
        }
      }
    }
  }
}

/** A socket file at `p` that nobody listens on (a dead leader's). */
async function makeStaleSocket(p: string): Promise<void> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(p, r));
  const keep = `${p}.keep`;
  fs.linkSync(p, keep);
  await new Promise<void>((r) => srv.close(() => r())); // unlinks p
  fs.renameSync(keep, p);
}

function connectCode(p: string): Promise<string> {
  return new Promise((resolve) => {
    const s = net.createConnection(p);
    s.on('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
  });
}

// ---- child processes ----------------------------------------------------------------------

interface ChildEvent {
  ev: string;
  role?: string;
  leaderPid?: number;
  t?: number;
  snapshot?: unknown;
  id?: number;
  ok?: boolean;
  value?: unknown;
  error?: string;
  message?: string;
  acting?: boolean;
}

class Child {
  readonly proc: ChildProcess;
  readonly events: ChildEvent[] = [];
  readonly stderr: string[] = [];
  role = 'stopped';
  killedAt: number | undefined;
  exitedAt: number | undefined;
  readonly exited: Promise<void>;

  constructor(
    readonly label: string,
    dir: string,
    waitGo = false,
  ) {
    const args = [CHILD, dir, NAME, ...(waitGo ? ['--wait-go'] : [])];
    this.proc = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    children.add(this);
    readline.createInterface({ input: this.proc.stdout! }).on('line', (line) => {
      let ev: ChildEvent;
      try {
        ev = JSON.parse(line) as ChildEvent;
      } catch {
        this.stderr.push(`bad stdout line: ${line}`);
        return;
      }
      this.events.push(ev);
      if (ev.ev === 'role' && ev.role) this.role = ev.role;
    });
    readline.createInterface({ input: this.proc.stderr! }).on('line', (l) => this.stderr.push(l));
    this.proc.stdin!.on('error', () => undefined);
    this.exited = new Promise((r) =>
      this.proc.once('exit', () => {
        this.exitedAt = now();
        r();
      }),
    );
  }

  get alive(): boolean {
    return this.exitedAt === undefined && this.killedAt === undefined;
  }

  send(obj: unknown): void {
    this.proc.stdin!.write(`${JSON.stringify(obj)}\n`);
  }

  kill(): void {
    if (this.exitedAt !== undefined || this.proc.pid === undefined) return;
    if (this.killedAt === undefined) this.killedAt = now();
    try {
      process.kill(this.proc.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  /** SIGSTOP (`stop`) or SIGCONT: the process keeps its sockets open, as Ctrl-Z leaves them. */
  signal(sig: 'SIGSTOP' | 'SIGCONT'): number {
    process.kill(this.proc.pid!, sig);
    return now();
  }

  /** The times at which this process sampled itself leading with its fence open (it could act). */
  actingAt(): number[] {
    return this.events.filter((e) => e.ev === 'sample' && e.acting === true).map((e) => e.t!);
  }

  roleChanges(): Array<{ role: string; t: number }> {
    return this.events.filter((e) => e.ev === 'role').map((e) => ({ role: e.role!, t: e.t! }));
  }

  intervals(): Array<[number, number]> {
    return leaderIntervals(this.roleChanges(), this.killedAt ?? this.exitedAt ?? Infinity);
  }

  /**
   * Every periodic sample that says "leader" lies inside one of the logged leader intervals. A
   * killed process samples until the signal lands, which can be after `killedAt` (taken just before
   * the kill is sent; on a loaded machine the child runs meanwhile): its last interval ends at its
   * exit, not at `killedAt` (which `intervals()` keeps for the two-leaders check: the next leader
   * can only start after the death).
   */
  assertSamplesConsistent(): void {
    const iv = leaderIntervals(this.roleChanges(), this.exitedAt ?? Infinity);
    for (const s of this.events) {
      if (s.ev !== 'sample' || s.role !== 'leader') continue;
      assert.ok(
        iv.some(([a, b]) => s.t! >= a && s.t! <= b),
        `${this.label}: leader sample at ${s.t} outside its intervals`,
      );
    }
  }

  logs(): string[] {
    return this.events.filter((e) => e.ev === 'log').map((e) => e.message!);
  }

  transcript(): string {
    const lines = this.events.filter((e) => e.ev !== 'sample').map((e) => JSON.stringify(e));
    return `${this.label} (pid ${this.proc.pid}):\n  ${[...lines, ...this.stderr].join('\n  ')}`;
  }
}

async function waitChildRole(c: Child, role: string, timeoutMs = 5000): Promise<void> {
  await waitUntil(() => c.role === role, timeoutMs, `${c.label} to be ${role}`).catch((e: Error) => {
    throw new Error(`${e.message}\n${c.transcript()}`);
  });
}

// ---- (a) ------------------------------------------------------------------------------------

test('(a) first in is leader, the second and third are followers; the leader counts them', async () => {
  const dir = tempDir('cgr-ld-');
  const a = election(dir);
  const b = election(dir);
  const c = election(dir);
  try {
    let server: LeaderServer | undefined;
    a.election.onLeader((s) => (server = s));
    await a.election.start();
    assert.equal(a.election.role, 'leader');
    assert.ok(server);
    const sock = path.join(dir, `${NAME}.sock`);
    assert.equal(a.election.socketPath, sock);
    assert.ok(fs.lstatSync(sock).isSocket());
    await b.election.start();
    assert.equal(b.election.role, 'follower');
    await c.election.start();
    assert.equal(c.election.role, 'follower');
    assert.equal(a.election.role, 'leader');
    await waitUntil(() => server!.followerCount === 2, 2000, 'two followers');
    assert.equal(await b.election.connection!.welcomed, process.pid);
    // Nothing left over but the socket and the leader file (its term: src/leader/lease.ts).
    assert.deepEqual(fs.readdirSync(dir).sort(), [`${NAME}.leader`, `${NAME}.sock`]);
    assert.equal(a.election.term, 1);
    assert.equal(b.election.connection!.term, 1, "the follower knows the leader's term from its welcome");
  } finally {
    await stopAll([a.election, b.election, c.election]);
  }
  assert.equal(a.election.role, 'stopped');
  assert.deepEqual(
    fs.readdirSync(dir),
    [`${NAME}.leader`],
    'the last leader removes its socket; the leader file stays (the next term is above it)',
  );
  // A stopped election can start again.
  try {
    await c.election.start();
    assert.equal(c.election.role, 'leader');
  } finally {
    await c.election.stop();
  }
});

test('(a) many candidates at once on a fresh dir: exactly one leader', async () => {
  const dir = tempDir('cgr-ld-');
  const all = Array.from({ length: 6 }, () => election(dir));
  try {
    await Promise.all(all.map((t) => t.election.start()));
    const roles = all.map((t) => t.election.role);
    assert.equal(roles.filter((r) => r === 'leader').length, 1, roles.join(','));
    assert.equal(roles.filter((r) => r === 'follower').length, 5, roles.join(','));
  } finally {
    await stopAll(all.map((t) => t.election));
  }
});

// ---- (b) ------------------------------------------------------------------------------------

test('(b) commands reach the leader and results come back; state reaches every follower, a late one gets the latest', async () => {
  const dir = tempDir('cgr-ld-');
  const a = election(dir);
  const b = election(dir);
  const c = election(dir);
  const d = election(dir);
  try {
    const calls: Array<{ name: string; args: unknown[] }> = [];
    a.election.onLeader((server) => {
      server.onCommand(async (name, args) => {
        calls.push({ name, args });
        if (name === 'add') return (args[0] as number) + (args[1] as number);
        if (name === 'hang') return new Promise(() => undefined);
        throw new Error(`unknown command ${name}`);
      });
    });
    await a.election.start();
    const server = a.election.server!;
    server.broadcast({ n: 1 });
    await b.election.start();
    await c.election.start();
    const fb = b.election.connection!;
    const fc = c.election.connection!;

    assert.equal(await fb.command('add', [2, 3]), 5);
    assert.equal(await fc.command('add', [10, -4]), 6);
    assert.deepEqual(calls, [
      { name: 'add', args: [2, 3] },
      { name: 'add', args: [10, -4] },
    ]);
    await assert.rejects(fb.command('nope', ['x']), (e: unknown) => {
      assert.ok(e instanceof LeaderCommandError);
      assert.equal(e.code, 'failed');
      assert.match(e.message, /command "nope" failed on the leader: unknown command nope/);
      return true;
    });
    await assert.rejects(fc.command('hang', [], 150), (e: unknown) => {
      assert.ok(e instanceof LeaderCommandError);
      assert.equal(e.code, 'timeout');
      assert.match(e.message, /"hang" got no answer from the leader within 150 ms/);
      return true;
    });

    // Joined after {n:1}: both got it right after welcome.
    await waitUntil(() => fb.hasState && fc.hasState, 2000, 'initial state');
    assert.deepEqual(fb.state, { n: 1 });
    const seenB: unknown[] = [];
    const seenC: unknown[] = [];
    fb.onState((s) => seenB.push(s));
    fc.onState((s) => seenC.push(s));
    server.broadcast({ n: 2 });
    server.broadcast({ n: 3, nested: { list: [1, 2] } });
    await waitUntil(() => seenB.length >= 3 && seenC.length >= 3, 2000, 'pushed states');
    // onState first replays the latest known state, then every push in order.
    assert.deepEqual(seenB, [{ n: 1 }, { n: 2 }, { n: 3, nested: { list: [1, 2] } }]);
    assert.deepEqual(seenC, seenB);

    // A late follower gets the latest state only, at once.
    await d.election.start();
    const fd = d.election.connection!;
    const seenD: unknown[] = [];
    fd.onState((s) => seenD.push(s));
    await waitUntil(() => seenD.length >= 1, 2000, 'late follower state');
    await sleep(50);
    assert.deepEqual(seenD, [{ n: 3, nested: { list: [1, 2] } }]);
    await waitUntil(() => server.followerCount === 3, 2000, 'three followers');
  } finally {
    await stopAll([a.election, b.election, c.election, d.election]);
  }
});

// ---- (c) ------------------------------------------------------------------------------------

test('(c) the leader stops: exactly one follower takes over within 5 s; pending commands fail clearly', async (t) => {
  const dir = tempDir('cgr-ld-');
  const a = election(dir);
  const b = election(dir);
  const c = election(dir);
  try {
    a.election.onLeader((server) => server.onCommand(() => new Promise(() => undefined)));
    b.election.onLeader((server) => server.onCommand((name) => `b:${name}`));
    c.election.onLeader((server) => server.onCommand((name) => `c:${name}`));
    await a.election.start();
    await b.election.start();
    await c.election.start();
    const pending = b.election.connection!.command('hang', [], 10_000);

    const t0 = now();
    await a.election.stop();
    await assert.rejects(pending, (e: unknown) => {
      assert.ok(e instanceof LeaderCommandError);
      assert.equal(e.code, 'closed');
      assert.match(e.message, /the leader went away before answering command "hang"/);
      return true;
    });
    await waitUntil(() => [b, c].some((t) => t.election.role === 'leader'), 5000, 'a new leader');
    const took = now() - t0;
    assert.ok(took < 5000, `takeover took ${took} ms`);
    t.diagnostic(`takeover after stop(): ${took.toFixed(1)} ms`);
    const [leader, follower] = b.election.role === 'leader' ? [b, c] : [c, b];
    await waitUntil(
      () => follower.election.connection !== undefined && leader.election.server!.followerCount === 1,
      3000,
      'the other to follow',
    );
    await sleep(400); // two leader checks
    assert.equal(leader.election.role, 'leader');
    assert.equal(follower.election.role, 'follower');
    const tag = leader === b ? 'b' : 'c';
    assert.equal(await follower.election.connection!.command('ping'), `${tag}:ping`);
    assertNoTwoLeaders([
      { label: 'a', intervals: leaderIntervals(a.changes) },
      { label: 'b', intervals: leaderIntervals(b.changes) },
      { label: 'c', intervals: leaderIntervals(c.changes) },
    ]);
  } finally {
    await stopAll([a.election, b.election, c.election]);
  }
});

// ---- (d) ------------------------------------------------------------------------------------

test('(d) the leader process is SIGKILLed: exactly one survivor takes over within 5 s, never two leaders', async (t) => {
  const dir = tempDir('cgr-ld-');
  const kids = [new Child('c1', dir)];
  try {
    await waitChildRole(kids[0], 'leader');
    kids.push(new Child('c2', dir), new Child('c3', dir));
    await Promise.all(kids.slice(1).map((k) => waitChildRole(k, 'follower')));
    const sock = path.join(dir, `${NAME}.sock`);
    const before = fs.lstatSync(sock).ino;

    // Round 1: kill the leader; two survivors.
    kids[0].kill();
    const killedAt1 = kids[0].killedAt!;
    await waitUntil(
      () => kids.slice(1).some((k) => k.role === 'leader'),
      5000,
      `a new leader\n${kids.map((k) => k.transcript()).join('\n')}`,
    );
    const leader1 = kids.slice(1).find((k) => k.role === 'leader')!;
    const other = kids.slice(1).find((k) => k !== leader1)!;
    const start1 = leader1.roleChanges().find((r) => r.role === 'leader')!.t;
    assert.ok(start1 > killedAt1, 'the new leader started after the kill');
    assert.ok(start1 - killedAt1 < 5000, `takeover took ${start1 - killedAt1} ms`);
    t.diagnostic(`takeover after SIGKILL (3 processes): ${(start1 - killedAt1).toFixed(1)} ms`);
    assert.notEqual(fs.lstatSync(sock).ino, before, 'the dead socket was replaced');
    // The survivor follows the new leader: its command is answered by the new leader's pid.
    await waitUntil(
      () => other.events.some((e) => e.ev === 'following' && e.leaderPid === leader1.proc.pid),
      4000,
      `following\n${other.transcript()}`,
    );
    other.send({ cmd: 'command', id: 1, name: 'who', args: [1] });
    await waitUntil(
      () => other.events.some((e) => e.ev === 'result' && e.id === 1),
      4000,
      `result\n${other.transcript()}`,
    );
    const res = other.events.find((e) => e.ev === 'result' && e.id === 1)!;
    assert.equal(res.ok, true, res.error);
    assert.deepEqual(res.value, { pid: leader1.proc.pid, name: 'who', args: [1] });
    assert.equal(other.role, 'follower');

    // Round 2: kill the new leader; the last survivor takes over.
    leader1.kill();
    await waitChildRole(other, 'leader', 5000);
    const start2 = other.roleChanges().find((r) => r.role === 'leader')!.t;
    assert.ok(start2 - leader1.killedAt! < 5000, `second takeover took ${start2 - leader1.killedAt!} ms`);
    t.diagnostic(`takeover after SIGKILL (last survivor): ${(start2 - leader1.killedAt!).toFixed(1)} ms`);
    await sleep(300);
    assert.equal(other.role, 'leader');

    for (const k of kids) k.assertSamplesConsistent();
    assertNoTwoLeaders(kids.map((k) => ({ label: k.label, intervals: k.intervals() })));
  } finally {
    for (const k of kids) k.kill();
    await Promise.all(kids.map((k) => k.exited));
  }
});

test("(d) four processes start at once over a dead leader's socket: exactly one leader", async () => {
  const dir = tempDir('cgr-ld-');
  await makeStaleSocket(path.join(dir, `${NAME}.sock`));
  const kids = ['p1', 'p2', 'p3', 'p4'].map((l) => new Child(l, dir, true));
  try {
    // All loaded first, then all join at the same instant: the takeover lock is what keeps this to one leader.
    await waitUntil(() => kids.every((k) => k.events.some((e) => e.ev === 'ready')), 8000, 'children loaded');
    for (const k of kids) k.send({ cmd: 'go' });
    await waitUntil(
      () => kids.every((k) => k.role === 'leader' || k.role === 'follower'),
      8000,
      `all decided\n${kids.map((k) => k.transcript()).join('\n')}`,
    );
    await sleep(600); // a couple of leader checks, and samples
    assert.equal(kids.filter((k) => k.role === 'leader').length, 1, kids.map((k) => `${k.label}:${k.role}`).join(' '));
    for (const k of kids) k.assertSamplesConsistent();
    assertNoTwoLeaders(kids.map((k) => ({ label: k.label, intervals: k.intervals() })));
    // A clean stop of a child: it exits 0 and the rest elect again.
    const leader = kids.find((k) => k.role === 'leader')!;
    leader.send({ cmd: 'stop' });
    await leader.exited;
    assert.equal(leader.proc.exitCode, 0);
    const rest = kids.filter((k) => k !== leader);
    await waitUntil(() => rest.filter((k) => k.role === 'leader').length === 1, 5000, 'a new leader after stop');
    await sleep(300);
    assert.equal(rest.filter((k) => k.role === 'leader').length, 1);
    assertNoTwoLeaders(kids.map((k) => ({ label: k.label, intervals: k.intervals() })));
  } finally {
    for (const k of kids) k.kill();
    await Promise.all(kids.map((k) => k.exited));
  }
});

// ---- (h) stalls: a leader stopped or blocked, its socket open -----------------------------------
//
// With the shipped lease (LEASE_MS, 5 s) and renewals (RENEW_MS, 1 s). A stopped process's kernel
// still accepts connections on its socket, so nothing closes: only the lease tells. What must hold:
// a follower takes over once the leader has been silent for the lease (not before: its silence
// counts from the leader's last beat, at most RENEW_MS before the stall), and the woken or
// unblocked leader never acts again: no sample of it leading with its fence open (what the engine
// asks before every set, save and announcement) falls after the new leader took over. Then it
// follows the new leader.

async function stalledLeader(t: { diagnostic(m: string): void }, how: 'SIGSTOP' | 'block'): Promise<void> {
  const dir = tempDir('cgr-ld-');
  const a = new Child('a', dir);
  const kids = [a];
  try {
    await waitChildRole(a, 'leader');
    const b = new Child('b', dir);
    kids.push(b);
    await waitChildRole(b, 'follower');
    await waitUntil(() => b.events.some((e) => e.ev === 'following'), 2000, 'b welcomed');
    await sleep(1500); // a few beats
    let stalledAt: number;
    if (how === 'SIGSTOP') stalledAt = a.signal('SIGSTOP');
    else {
      a.send({ cmd: 'block', ms: LEASE_MS + 3000 });
      await waitUntil(() => a.events.some((e) => e.ev === 'blocking'), 2000, 'a blocking');
      stalledAt = a.events.find((e) => e.ev === 'blocking')!.t!;
    }
    await waitChildRole(b, 'leader', LEASE_MS + 4000);
    const tookOver = b.roleChanges().find((r) => r.role === 'leader')!.t;
    const after = tookOver - stalledAt;
    t.diagnostic(`${how}: takeover ${after.toFixed(0)} ms after the stall (lease ${LEASE_MS} ms)`);
    assert.ok(after >= LEASE_MS - RENEW_MS, `taken over ${after} ms after the stall: before the lease ran out`);
    assert.ok(after < LEASE_MS + 2500, `taken over only ${after} ms after the stall`);
    assert.ok(
      b.logs().some((l) => /has not answered for .* past its 5\.0 s lease/.test(l)),
      b.transcript(),
    );
    assert.equal(a.role, 'leader', 'the stalled leader could not even tell it lost');
    if (how === 'SIGSTOP') {
      await sleep(2000); // past the takeover: the woken one runs its timers, all of them late
      a.signal('SIGCONT');
    }
    await waitChildRole(a, 'follower', 5000);
    await waitUntil(
      () => a.events.some((e) => e.ev === 'following' && e.leaderPid === b.proc.pid),
      4000,
      `a follows b\n${a.transcript()}`,
    );
    assert.ok(
      a.logs().some((l) => /stepping down: lease lost: this engine did not run for/.test(l)),
      a.transcript(),
    );
    const late = a.actingAt().filter((at) => at >= tookOver);
    assert.deepEqual(late, [], `the stalled leader could act after the takeover at ${tookOver}`);
    const acted = a.actingAt().filter((at) => at > stalledAt);
    assert.deepEqual(acted, [], 'the stalled leader acted after its stall');
    assert.ok(
      b.actingAt().some((at) => at > tookOver),
      'the new leader acts',
    );
    // The new term is above the old one.
    const file = JSON.parse(fs.readFileSync(path.join(dir, `${NAME}.leader`), 'utf8')) as { term: number; pid: number };
    assert.deepEqual([file.term, file.pid], [2, b.proc.pid]);
  } finally {
    for (const k of kids) {
      if (k.alive) k.signal('SIGCONT');
      k.kill();
    }
    await Promise.all(kids.map((k) => k.exited));
  }
}

test('(h) the leader SIGSTOPped (Ctrl-Z): a follower takes over after the lease; woken, it acts no more and follows', async (t) => {
  await stalledLeader(t, 'SIGSTOP');
});

test("(h) the leader's event loop blocked past the lease: a follower takes over; unblocked, it acts no more and follows", async (t) => {
  await stalledLeader(t, 'block');
});

test('(h) a candidate that finds a silent leader (no welcome within the lease) takes its place; a live one is followed', async (t) => {
  const dir = tempDir('cgr-ld-');
  const a = new Child('a', dir);
  const kids = [a];
  try {
    await waitChildRole(a, 'leader');
    const stoppedAt = a.signal('SIGSTOP');
    const b = new Child('b', dir);
    kids.push(b);
    await waitChildRole(b, 'leader', LEASE_MS + RENEW_MS + 4000);
    const tookOver = b.roleChanges().find((r) => r.role === 'leader')!.t;
    t.diagnostic(`a newcomer replaced a stopped leader ${(tookOver - stoppedAt).toFixed(0)} ms after the stop`);
    assert.ok(tookOver - stoppedAt >= LEASE_MS, 'replaced before the lease ran out');
    a.signal('SIGCONT');
    await waitChildRole(a, 'follower', 5000);
    assert.deepEqual(
      a.actingAt().filter((at) => at > stoppedAt),
      [],
    );
  } finally {
    for (const k of kids) {
      if (k.alive) k.signal('SIGCONT');
      k.kill();
    }
    await Promise.all(kids.map((k) => k.exited));
  }
});

// ---- (e) ------------------------------------------------------------------------------------

test('(e) a stale socket file with no process: the newcomer becomes leader', async () => {
  const dir = tempDir('cgr-ld-');
  const sock = path.join(dir, `${NAME}.sock`);
  await makeStaleSocket(sock);
  assert.equal(await connectCode(sock), 'ECONNREFUSED');
  const staleIno = fs.lstatSync(sock).ino;
  const a = election(dir);
  const b = election(dir);
  try {
    await a.election.start();
    assert.equal(a.election.role, 'leader');
    assert.notEqual(fs.lstatSync(sock).ino, staleIno);
    assert.equal(await connectCode(sock), 'connected');
    assert.ok(
      a.logs.some((l) => /removed the dead leader's socket/.test(l)),
      a.logs.join('\n'),
    );
    await b.election.start();
    assert.equal(b.election.role, 'follower');
  } finally {
    await stopAll([a.election, b.election]);
  }
});

test('(e) six candidates at once over a stale socket: exactly one leader, never two', async () => {
  const dir = tempDir('cgr-ld-');
  await makeStaleSocket(path.join(dir, `${NAME}.sock`));
  const all = Array.from({ length: 6 }, () => election(dir));
  try {
    await Promise.all(all.map((t) => t.election.start()));
    await sleep(450); // two leader checks: a wrongly elected second leader would step down by now
    const roles = all.map((t) => t.election.role);
    assert.equal(roles.filter((r) => r === 'leader').length, 1, roles.join(','));
    assertNoTwoLeaders(all.map((t, i) => ({ label: `e${i}`, intervals: leaderIntervals(t.changes) })));
    assert.ok(
      all.every((t) => t.changes.filter((c) => c.role === 'leader').length <= 1),
      'nobody stepped down',
    );
  } finally {
    await stopAll(all.map((t) => t.election));
  }
});

test('(e) a stale socket and a takeover lock left by a dead process: the newcomer still leads', async () => {
  const dir = tempDir('cgr-ld-');
  await makeStaleSocket(path.join(dir, `${NAME}.sock`));
  // The pid of a process that has exited.
  const dead = spawn(process.execPath, ['-e', '0']);
  await new Promise((r) => dead.once('exit', r));
  fs.writeFileSync(path.join(dir, `${NAME}.takeover`), `${dead.pid} deadbeef ${Date.now()}\n`);
  const a = election(dir);
  try {
    await a.election.start();
    assert.equal(a.election.role, 'leader');
    assert.ok(
      a.logs.some((l) => /broke a stale takeover lock/.test(l)),
      a.logs.join('\n'),
    );
    assert.deepEqual(fs.readdirSync(dir).sort(), [`${NAME}.leader`, `${NAME}.sock`]);
  } finally {
    await a.election.stop();
  }
});

test('(e) a live takeover lock is respected; one older than 10 s is broken', async () => {
  const dir = tempDir('cgr-ld-');
  const sock = path.join(dir, `${NAME}.sock`);
  const lockPath = path.join(dir, `${NAME}.takeover`);
  await makeStaleSocket(sock);
  const staleIno = fs.lstatSync(sock).ino;
  // Held by a live process (this one), fresh: the newcomer must wait, and must not touch the socket.
  fs.writeFileSync(lockPath, `${process.pid} cafebabe ${Date.now()}\n`);
  const a = election(dir);
  try {
    const started = a.election.start();
    await sleep(300);
    assert.equal(a.election.role, 'stopped');
    assert.equal(fs.lstatSync(sock).ino, staleIno, 'the socket was left alone while the lock was held');
    assert.ok(fs.existsSync(lockPath));
    fs.unlinkSync(lockPath);
    await started;
    assert.equal(a.election.role, 'leader');
    assert.notEqual(fs.lstatSync(sock).ino, staleIno);
  } finally {
    await a.election.stop();
  }
  // Same, but the live owner's lock is 11 s old: stale by age.
  await makeStaleSocket(sock);
  fs.writeFileSync(lockPath, `${process.pid} cafebabe ${Date.now() - 11_000}\n`);
  const b = election(dir);
  try {
    await b.election.start();
    assert.equal(b.election.role, 'leader');
    assert.ok(
      b.logs.some((l) => /broke a stale takeover lock .* ms old/.test(l)),
      b.logs.join('\n'),
    );
  } finally {
    await b.election.stop();
  }
});

test('leader watch: the socket path replaced under a leader → it steps down, one leader again', async () => {
  const dir = tempDir('cgr-ld-');
  const a = election(dir);
  const b = election(dir);
  try {
    await a.election.start();
    await b.election.start();
    // Something removes the live leader's path (never this code): the leader must notice.
    fs.unlinkSync(path.join(dir, `${NAME}.sock`));
    await waitUntil(() => a.logs.some((l) => /stepping down: its socket path was removed/.test(l)), 2000, 'step down');
    await waitUntil(
      () =>
        [a, b].filter((t) => t.election.role === 'leader').length === 1 && [a, b].some((t) => t.election.connection),
      3000,
      'one leader and one follower',
    );
    assert.ok(fs.lstatSync(path.join(dir, `${NAME}.sock`)).isSocket());
    assertNoTwoLeaders([
      { label: 'a', intervals: leaderIntervals(a.changes) },
      { label: 'b', intervals: leaderIntervals(b.changes) },
    ]);
  } finally {
    await stopAll([a.election, b.election]);
  }
});

// ---- (f) ------------------------------------------------------------------------------------

test('(f) an unsafe directory is refused; a missing one is created 0700', async () => {
  for (const mode of [0o777, 0o770, 0o702]) {
    const dir = tempDir('cgr-ld-', { mode });
    const e = election(dir).election;
    await assert.rejects(e.start(), /refusing directory .*writable by group or others/);
    assert.equal(e.role, 'stopped');
    assert.deepEqual(fs.readdirSync(dir), []);
  }
  const parent = tempDir('cgr-ld-');
  const file = path.join(parent, 'file');
  fs.writeFileSync(file, '');
  await assert.rejects(election(file).election.start(), /not a directory|cannot create/);

  const fresh = path.join(parent, 'a', 'b');
  const e = election(fresh);
  try {
    await e.election.start();
    assert.equal(fs.statSync(fresh).mode & 0o777, 0o700);
    assert.equal(e.election.role, 'leader');
  } finally {
    await e.election.stop();
  }
  assert.throws(() => new LeaderElection({ dir: parent, name: '../x' }), /invalid name/);
  const long = election(path.join(parent, 'x'.repeat(100)));
  await assert.rejects(long.election.start(), /longer than 103 bytes/);
});

// ---- (g) ------------------------------------------------------------------------------------

test('(g) malformed lines from a follower are logged and skipped; the leader keeps serving', async () => {
  const dir = tempDir('cgr-ld-');
  const a = election(dir);
  const b = election(dir);
  try {
    a.election.onLeader((s) => s.onCommand((name) => name.toUpperCase()));
    await a.election.start();
    a.election.server!.broadcast({ ok: true });
    const raw = net.createConnection(path.join(dir, `${NAME}.sock`));
    const got: string[] = [];
    raw.on('data', (d: Buffer) => got.push(d.toString()));
    await new Promise<void>((r) => raw.once('connect', () => r()));
    raw.write('not json\n{"type":"nope"}\n{"type":"command","id":1}\n[1,2]\n\n');
    raw.write(`{"type":"command","id":2,"name":"${'x'.repeat(MAX_LINE_BYTES)}","args":[]}\n`); // over the cap
    raw.write('{"type":"hello","version":1,"pid":1}\n{"type":"command","id":7,"name":"ping","args":[]}\n');
    await waitUntil(() => got.join('').includes('"id":7'), 5000, 'the answer after the junk');
    const lines = got
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    assert.deepEqual(
      lines.map((l) => l.type),
      ['welcome', 'state', 'result'],
    );
    assert.deepEqual(lines[2], { type: 'result', id: 7, ok: true, value: 'PING' });
    const dropped = a.logs.filter((l) => /dropped a line from a follower/.test(l));
    assert.equal(dropped.length, 5, dropped.join('\n'));
    assert.ok(dropped.some((l) => /longer than 16777216 bytes/.test(l)));
    raw.destroy();
    // A regular follower still works.
    await b.election.start();
    assert.equal(await b.election.connection!.command('hi'), 'HI');
    assert.equal(a.election.role, 'leader');
  } finally {
    await stopAll([a.election, b.election]);
  }
});

test('(g) malformed lines from the leader are logged and skipped by a follower', async () => {
  const dir = tempDir('cgr-ld-');
  const p = path.join(dir, 'fake.sock');
  const srv = net.createServer((s) => {
    s.on('data', () => undefined);
    s.write('garbage\n{"type":"result"}\n{"type":"state"');
    s.write('\r\n{"type":"welcome","leaderPid":42}\n{"type":"result","id":999,"ok":true}\n');
    s.write('{"type":"state","snapshot":{"v":1}}\n{"type":"state","snapshot":{"v":2}}');
    s.end('\n');
  });
  await new Promise<void>((r) => srv.listen(p, r));
  try {
    const logs: string[] = [];
    const conn = new FollowerConnection(net.createConnection(p), { log: (m) => logs.push(m) });
    const states: unknown[] = [];
    conn.onState((s) => states.push(s));
    assert.equal(await conn.welcomed, 42);
    await new Promise<void>((r) => conn.onClose(r));
    assert.deepEqual(states, [{ v: 1 }, { v: 2 }]);
    assert.deepEqual(conn.state, { v: 2 });
    assert.equal(logs.filter((l) => /dropped a line from the leader/.test(l)).length, 3, logs.join('\n'));
    assert.ok(logs.some((l) => /unknown or timed-out command id 999/.test(l)));
    assert.ok(conn.closed);
    await assert.rejects(conn.command('late'), /connection to the leader is closed/);
  } finally {
    await new Promise<void>((r) => srv.close(() => r()));
  }
});

test('LineDecoder: split chunks, CRLF, an over-long line skipped to the next newline', () => {
  const got: unknown[] = [];
  const bad: string[] = [];
  const d = new LineDecoder(
    FollowerMessageSchema,
    (m) => got.push(m),
    (r) => bad.push(r),
    64,
  );
  const hello = '{"type":"hello","version":1,"pid":5}';
  d.push(hello.slice(0, 10));
  d.push(`${hello.slice(10)}\r\n${'y'.repeat(40)}`);
  d.push(`${'y'.repeat(40)}${'z'.repeat(200)}\n`);
  d.push(Buffer.from('{"type":"command","id":"a","name":"n","args":[1]}\n'));
  d.push('{"type":"command","id":1,"name":"","args":[]}\n');
  d.push(hello); // no newline: delivered at end()
  d.end();
  assert.deepEqual(got, [
    { type: 'hello', version: 1, pid: 5 },
    { type: 'command', id: 'a', name: 'n', args: [1] },
    { type: 'hello', version: 1, pid: 5 },
  ]);
  assert.equal(bad.length, 2, bad.join('\n'));
  assert.match(bad[0], /longer than 64 bytes/);
  assert.match(bad[1], /unexpected message at name/);
  assert.equal(d.malformedCount, 2);

  const throwing = new LineDecoder(
    z.unknown(),
    () => {
      throw new Error('boom');
    },
    (r) => bad.push(r),
  );
  throwing.push('1\n');
  assert.match(bad[2], /message handler threw: boom/);
  assert.throws(() => encodeMessage({ type: 'state', snapshot: 'x'.repeat(100) }, 50), /over the 50-byte line cap/);
  assert.throws(() => encodeMessage({ type: 'state', snapshot: 10n }), /BigInt/);
});
