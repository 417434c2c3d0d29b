// The elected engine (src/leader/electedEngine.ts): the term of office the runner and the window
// share. Real elections in private temporary directories and real sockets; the engine is a fake
// (these are tests of the term, not of recovery: the engine's own suites cover that), and so,
// where a test must drive the roles itself (a step-down, a malformed leader), is the election.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { ServiceCommand } from '../../src/core/commandTable';
import {
  ElectedEngine,
  type DecidedBy,
  type ElectedEngineOptions,
  type FocusSource,
  type LeaderView,
  type TermEngine,
  type TermEvents,
} from '../../src/leader/electedEngine';
import type { LeaderElection, Role } from '../../src/leader/election';
import { FollowerConnection } from '../../src/leader/followerConnection';
import { LeaderServer } from '../../src/leader/leaderServer';
import { encodeMessage } from '../../src/leader/messages';
import { notifyTarget } from '../../src/leader/notifyTarget';
import type { Decision } from '../../src/model/decision';
import { emptySnapshot, type EngineSnapshot } from '../../src/model/snapshot';
import { sleep, tempDir, until } from '../support/wait';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

/** A term's engine that records what is done to it, in one log shared by every engine of a test. */
class FakeEngine implements TermEngine {
  readonly commands: [ServiceCommand, string | undefined][] = [];
  snap: EngineSnapshot;
  /** Resolves the start (a test holds it to see that commands wait). */
  private openGate: (() => void) | null = null;
  private readonly gate: Promise<void>;

  constructor(
    readonly name: string,
    readonly seed: EngineSnapshot | null,
    readonly events: TermEvents,
    private readonly log: string[],
    opts: { gated?: boolean; stopMs?: number } = {},
  ) {
    this.snap = { ...emptySnapshot(`target of ${name}`, Date.now()), maxAttempts: 6 };
    this.gate = opts.gated ? new Promise((resolve) => (this.openGate = resolve)) : Promise.resolve();
    this.stopMs = opts.stopMs ?? 0;
    log.push(`make ${name}`);
  }
  private readonly stopMs: number;

  open(): void {
    this.openGate?.();
  }
  async start(): Promise<void> {
    this.log.push(`start ${this.name}`);
    await this.gate;
    this.log.push(`started ${this.name}`);
  }
  async stop(): Promise<void> {
    this.log.push(`stop ${this.name}`);
    await sleep(this.stopMs);
    this.log.push(`stopped ${this.name}`);
  }
  snapshot(): EngineSnapshot {
    return this.snap;
  }
  run(command: ServiceCommand, threadId?: string): Promise<void> {
    this.commands.push([command, threadId]);
    if (command === 'retryNow' && threadId === 'unknown') return Promise.reject(new Error('no such thread'));
    return Promise.resolve();
  }
  /** The engine announces a decision (as the real one does once it is durable). */
  decide(d: Decision): void {
    this.events.decided(d);
  }
}

/** A window's focus, set by the test. */
class Focus implements FocusSource {
  private listeners = new Set<(focused: boolean) => void>();
  constructor(private value = false) {}
  focused(): boolean {
    return this.value;
  }
  set(value: boolean): void {
    this.value = value;
    for (const l of [...this.listeners]) l(value);
  }
  onDidChange(listener: (focused: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

interface Member {
  name: string;
  elected: ElectedEngine<FakeEngine>;
  engines: FakeEngine[];
  roles: string[];
  decisions: { decision: Decision; by: DecidedBy }[];
  notified: Decision[];
  warnings: string[];
  alone: string[];
  leader: LeaderView | null;
}

function member(
  name: string,
  election: { dir: string; name: string } | null,
  extra: Partial<ElectedEngineOptions<FakeEngine>> & { gated?: boolean; stopMs?: number; trace?: string[] } = {},
): Member {
  const { trace, gated, stopMs, ...options } = extra;
  const log = trace ?? [];
  const m: Member = {
    name,
    engines: [],
    roles: [],
    decisions: [],
    notified: [],
    warnings: [],
    alone: [],
    leader: null,
    elected: null as unknown as ElectedEngine<FakeEngine>,
  };
  m.elected = new ElectedEngine<FakeEngine>({
    election,
    who: name,
    makeEngine: (seed, events) => {
      const e = new FakeEngine(`${name}#${m.engines.length + 1}`, seed, events, log, {
        ...(gated !== undefined && { gated }),
        ...(stopMs !== undefined && { stopMs }),
      });
      m.engines.push(e);
      return e;
    },
    onLead: (_e, how) => m.roles.push(`lead ${how}`),
    onFollow: (leader) => {
      m.leader = leader;
      m.roles.push('follow');
    },
    onDecision: (decision, by) => m.decisions.push({ decision, by }),
    notify: (d) => m.notified.push(d),
    onAlone: (e) => m.alone.push(e.message),
    onWarning: (w) => m.warnings.push(w),
    broadcastMs: 10,
    ...options,
  });
  cleanups.push(() => m.elected.stop());
  return m;
}

const gaveUp = (threadId: string): Decision => ({ type: 'gave-up', threadId, attempts: 6, failedTurnId: 't1' });
const id = (d: Decision): string => ('threadId' in d && d.threadId) || d.type;

describe('the elected engine', () => {
  it("one leads, the other follows with the leader's snapshot; a follower's command runs on the leader only once its engine has loaded", async () => {
    const election = { dir: tempDir('cgr-elected-'), name: 'e1' };
    const a = member('A', election, { gated: true });
    const starting = a.elected.start();
    await until('A leads', () => a.engines.length === 1);
    const b = member('B', election);
    await b.elected.start();
    assert.deepEqual(b.roles, ['follow']);
    assert.equal(b.engines.length, 0, 'a follower ran an engine');
    const who = await b.leader!.welcomed;
    assert.equal(who.who, 'A');
    const sent = b.leader!.command('pauseAll');
    await sleep(100);
    assert.deepEqual(a.engines[0].commands, [], 'a command ran before the engine had loaded its state');
    a.engines[0].snap = { ...a.engines[0].snap, pausedAt: 1234 };
    a.engines[0].open();
    await sent;
    await starting;
    assert.deepEqual(a.engines[0].commands, [['pauseAll', undefined]]);
    const seen: EngineSnapshot[] = [];
    b.leader!.onState((s) => seen.push(s));
    a.engines[0].events.changed();
    await until("B has A's snapshot", () => seen.some((s) => s.pausedAt === 1234));
    // A refusal comes back as the leader's error.
    await assert.rejects(b.leader!.command('retryNow', 'unknown'), /no such thread/);
    // A goes: B leads, from A's last snapshot.
    await a.elected.stop();
    await until('B leads', () => b.engines.length === 1);
    assert.equal(b.engines[0].seed?.pausedAt, 1234, "B's engine did not start from A's last snapshot");
    assert.deepEqual(b.roles, ['follow', 'lead elected']);
  });

  it("a new term starts only once the previous term's engine has stopped and saved", async () => {
    const log: string[] = [];
    const election = new FakeElection();
    const m = member(
      'W',
      { dir: 'unused', name: 'unused' },
      {
        trace: log,
        stopMs: 150,
        makeElection: () => election as unknown as LeaderElection,
      },
    );
    await m.elected.start();
    election.lead();
    await until('the first engine started', () => log.includes('started W#1'));
    // Stepped down (its socket replaced), then elected again at once.
    election.role('follower');
    election.lead();
    await until('the second engine started', () => log.includes('started W#2'));
    assert.deepEqual(log, [
      'make W#1',
      'start W#1',
      'started W#1',
      'stop W#1',
      'stopped W#1',
      'make W#2',
      'start W#2',
      'started W#2',
    ]);
  });

  it('every decision reaches every follower in order, marked with who decided; exactly one window notifies: the focused one, else the one focused last', async () => {
    const election = { dir: tempDir('cgr-elected-'), name: 'e3' };
    const focus = { A: new Focus(false), B: new Focus(true), C: new Focus(false) };
    // Every decision its own burst here (a burst keeps its window: the next test).
    const notifyBurst = { holdMs: 0, maxMs: 0 };
    const a = member('A', election, { focus: focus.A, notifyBurst });
    await a.elected.start();
    const b = member('B', election, { focus: focus.B, notifyBurst });
    const c = member('C', election, { focus: focus.C, notifyBurst });
    await b.elected.start();
    await c.elected.start();
    await b.leader!.welcomed;
    await c.leader!.welcomed;
    const engine = a.engines[0];
    const notifiedBy = () => ({ A: a.notified.length, B: b.notified.length, C: c.notified.length });
    const decideAndWait = async (d: Decision) => {
      engine.decide(d);
      await until('both followers have it', () =>
        [b, c].every((m) => m.decisions.some((x) => JSON.stringify(x.decision) === JSON.stringify(d))),
      );
      await sleep(30);
    };
    await sleep(50); // the focus reports reach the leader
    await decideAndWait(gaveUp('th-1'));
    assert.deepEqual(notifiedBy(), { A: 0, B: 1, C: 0 }, 'the focused window (B) did not notify alone');
    focus.B.set(false);
    focus.C.set(true);
    await sleep(50);
    await decideAndWait(gaveUp('th-2'));
    assert.deepEqual(notifiedBy(), { A: 0, B: 1, C: 1 });
    focus.C.set(false); // nobody focused: the one focused last
    await sleep(50);
    await decideAndWait(gaveUp('th-3'));
    assert.deepEqual(notifiedBy(), { A: 0, B: 1, C: 2 });
    focus.A.set(true); // the leader window itself
    await sleep(50);
    await decideAndWait(gaveUp('th-4'));
    assert.deepEqual(notifiedBy(), { A: 1, B: 1, C: 2 });
    // Order and marks: what each follower logged is the leader's sequence, by A.
    for (const f of [b, c]) {
      assert.deepEqual(
        f.decisions
          .filter((x) => x.decision.type === 'gave-up')
          .map((x) => [x.decision.type === 'gave-up' && x.decision.threadId, x.by.who, x.by.self]),
        ['th-1', 'th-2', 'th-3', 'th-4'].map((t) => [t, 'A', false]),
      );
      assert.equal(f.decisions[0].by.pid, process.pid);
    }
    assert.deepEqual(
      a.decisions.map((x) => x.by.self),
      [true, true, true, true],
    );
  });

  it('one burst, one window: the focus moving mid-burst sends the rest of it to the same window, the next burst to the focused one', async () => {
    const election = { dir: tempDir('cgr-elected-'), name: 'e3b' };
    const focus = { B: new Focus(true), C: new Focus(false) };
    const runner = member('runner', election, { notifyBurst: { holdMs: 600, maxMs: 5_000 } });
    await runner.elected.start();
    const b = member('B', election, { focus: focus.B });
    const c = member('C', election, { focus: focus.C });
    await b.elected.start();
    await c.elected.start();
    await b.leader!.welcomed;
    await c.leader!.welcomed;
    await sleep(50); // the focus reports reach the leader
    const engine = runner.engines[0];
    const notified = () => ({ B: b.notified.map(id), C: c.notified.map(id) });
    engine.decide(gaveUp('th-1'));
    focus.B.set(false);
    focus.C.set(true);
    await sleep(50);
    engine.decide(gaveUp('th-2'));
    engine.decide({ type: 'recovered', threadId: 'th-r', attempt: 1, failedTurnId: 't1', how: 'set' });
    await until('both windows have them', () => [b, c].every((m) => m.decisions.length >= 3));
    await sleep(700); // the burst is over
    engine.decide(gaveUp('th-3'));
    await until('both windows have it', () => [b, c].every((m) => m.decisions.length >= 4));
    await sleep(30);
    assert.deepEqual(notified(), { B: ['th-1', 'th-2'], C: ['th-r', 'th-3'] }, 'a burst split across windows');
  });

  it('a runner leading: the focused window notifies; with no window following, nobody does', async () => {
    const election = { dir: tempDir('cgr-elected-'), name: 'e4' };
    const runner = member('runner', election); // no focus: not a window
    await runner.elected.start();
    runner.engines[0].decide(gaveUp('alone'));
    await sleep(30);
    assert.deepEqual(runner.notified, [], 'a runner notified');
    const w = member('window', election, { focus: new Focus(false) });
    await w.elected.start();
    await w.leader!.welcomed;
    await sleep(50);
    runner.engines[0].decide(gaveUp('seen'));
    await until('the window has it', () => w.decisions.length > 0);
    await sleep(20);
    assert.deepEqual(
      w.notified.map((d) => d.type === 'gave-up' && d.threadId),
      ['seen'],
      'the only window (never focused) did not notify',
    );
    assert.deepEqual(runner.notified, []);
  });

  it('with no election possible (the constructor throws, as on Windows, or the directory is unsafe) it runs the engine alone and says why', async () => {
    const throws = member(
      'X',
      { dir: 'unused', name: 'unused' },
      {
        makeElection: () => {
          throw new Error('not on this platform');
        },
      },
    );
    await throws.elected.start();
    assert.deepEqual(throws.alone, ['not on this platform']);
    assert.deepEqual(throws.roles, ['lead alone']);
    assert.ok(throws.elected.runningEngine);
    const dir = tempDir('cgr-elected-');
    fs.chmodSync(dir, 0o777);
    const unsafe = member('Y', { dir, name: 'e5' });
    await unsafe.elected.start();
    assert.equal(unsafe.alone.length, 1);
    assert.match(unsafe.alone[0], /writable by group or others/);
    assert.deepEqual(unsafe.roles, ['lead alone']);
    const privateDaemon = member('Z', null);
    await privateDaemon.elected.start();
    assert.deepEqual(privateDaemon.roles, ['lead private']);
    assert.deepEqual(privateDaemon.alone, []);
  });

  it('a malformed decision or state from the leader is said and skipped; the next decision still arrives, and one for this window notifies', async () => {
    const dir = tempDir('cgr-elected-');
    const sock = path.join(dir, 'raw.sock');
    let peer: net.Socket | null = null;
    const raw = net.createServer((s) => (peer = s));
    await new Promise<void>((r) => raw.listen(sock, r));
    cleanups.push(() => new Promise((r) => raw.close(() => r())));
    const election = new FakeElection();
    const focus = new Focus(true);
    const m = member(
      'F',
      { dir: 'unused', name: 'unused' },
      {
        focus,
        makeElection: () => election as unknown as LeaderElection,
      },
    );
    await m.elected.start();
    const client = net.connect(sock);
    cleanups.push(() => {
      client.destroy();
      peer?.destroy();
      return Promise.resolve();
    });
    await until('connected', () => peer !== null);
    const lines: string[] = [];
    let buffered = '';
    peer!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      lines.push(...parts);
    });
    election.follow(new FollowerConnection(client));
    await until('follows', () => m.roles.includes('follow'));
    await until('its focus is told', () => lines.some((l) => l.includes('"focus"')));
    const viewer = (JSON.parse(lines.find((l) => l.includes('"focus"'))!) as { viewer: string }).viewer;
    const by = { who: 'runner', pid: 4242 };
    peer!.write(encodeMessage({ type: 'welcome', leaderPid: 4242, version: 2, who: 'runner' }));
    peer!.write(encodeMessage({ type: 'state', snapshot: { not: 'a snapshot' } }));
    peer!.write(
      encodeMessage({ type: 'decision', at: 1, decision: { type: 'gave-up', threadId: 7 }, by, notify: viewer }),
    );
    peer!.write(encodeMessage({ type: 'decision', at: 2, decision: gaveUp('th-ok'), by, notify: 'someone-else' }));
    peer!.write(encodeMessage({ type: 'decision', at: 3, decision: gaveUp('th-mine'), by, notify: viewer }));
    await until('both valid decisions', () => m.decisions.length === 2);
    assert.deepEqual(
      m.decisions.map((x) => [x.decision.type === 'gave-up' && x.decision.threadId, x.by.who, x.by.pid, x.by.self]),
      [
        ['th-ok', 'runner', 4242, false],
        ['th-mine', 'runner', 4242, false],
      ],
    );
    assert.deepEqual(
      m.notified.map((d) => d.type === 'gave-up' && d.threadId),
      ['th-mine'],
    );
    assert.equal(m.warnings.length, 2, JSON.stringify(m.warnings));
    assert.match(m.warnings[0], /ignored a malformed state from the leader/);
    assert.match(m.warnings[1], /ignored a malformed decision from the leader \(runner, pid 4242\)/);
  });

  it('notifyTarget: focused first, then the latest focus, then the first listed; null without windows', () => {
    assert.equal(notifyTarget([]), null);
    const w = (viewer: string, focused: boolean, focusedSeq: number) => ({ viewer, focused, focusedSeq });
    assert.equal(notifyTarget([w('a', false, 0), w('b', true, 1), w('c', false, 9)]), 'b');
    assert.equal(notifyTarget([w('a', false, 0), w('b', false, 1), w('c', false, 9)]), 'c');
    assert.equal(notifyTarget([w('a', false, 0), w('b', false, 0)]), 'a');
  });
});

/** An election the test drives: it leads or follows when told (the real one is tested in leader.test.ts). */
class FakeElection {
  private leaders: ((s: LeaderServer) => void)[] = [];
  private followers: ((c: FollowerConnection) => void)[] = [];
  private roles: ((r: Role) => void)[] = [];
  onLeader(cb: (s: LeaderServer) => void): () => void {
    this.leaders.push(cb);
    return () => undefined;
  }
  onFollower(cb: (c: FollowerConnection) => void): () => void {
    this.followers.push(cb);
    return () => undefined;
  }
  onRoleChange(cb: (r: Role) => void): () => void {
    this.roles.push(cb);
    return () => undefined;
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  stop(): Promise<void> {
    this.role('stopped');
    return Promise.resolve();
  }
  lead(): void {
    const server = new LeaderServer(net.createServer());
    this.role('leader');
    for (const cb of this.leaders) cb(server);
  }
  follow(conn: FollowerConnection): void {
    this.role('follower');
    for (const cb of this.followers) cb(conn);
  }
  role(r: Role): void {
    for (const cb of this.roles) cb(r);
  }
}
