// A world for crash-consistency properties: one fake daemon, one fake clock, and a sequence of
// engine "lives". A life ends by a crash: the engine is dropped without `stop()` (its timers
// die, its connection closes, whatever it had not written to disk is gone) and a new engine
// starts from what its store durably holds. The store models fsync: a save is durable once its
// promise resolves; one still being written when the crash comes may or may not have reached
// the disk (drawn at random).
//
// The world is the judge, from the daemon's side: every automatic `thread/goal/set` is checked
// the moment it arrives (before the daemon applies it) against what the world knows — the
// goal's status and why it is blocked, the newest turn, the person's commands and markers, and
// the durable store — and the first broken rule is kept as `violation`, which the driver throws
// right after the step (the set is not applied, so nothing builds on it).
import { Engine } from '../../src/core/engine';
import type { Clock, TimerHandle } from '../../src/core/clock';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import type { Decision } from '../../src/model/decision';
import { emptyState, type PersistedState, type WatchedThread } from '../../src/model/watch';
import { startSession } from '../../src/protocol/client';
import type { Connector } from '../../src/protocol/daemon';
import type { LoadResult, StateStore } from '../../src/store/store';
import * as fs from 'node:fs';
import { FakeClock } from './fakeClock';
import {
  FakeDaemon,
  goalEventLine,
  modelGoalCallLine,
  testGoal,
  testTurn,
  type FakeConnection,
  type WireMessage,
} from './fakeDaemon';

/** A clock for one life: its timers die with it. */
export class ScopedClock implements Clock {
  private readonly handles = new Set<TimerHandle>();
  private dead = false;

  constructor(private readonly base: FakeClock) {}

  now(): number {
    return this.base.now();
  }
  elapsed(): number {
    return this.base.elapsed();
  }

  setTimer(callback: () => void, delayMs: number): TimerHandle {
    if (this.dead) return { id: -1 };
    const handle = this.base.setTimer(() => {
      this.handles.delete(handle);
      if (!this.dead) callback();
    }, delayMs);
    this.handles.add(handle);
    return handle;
  }

  clearTimer(handle: TimerHandle): void {
    this.handles.delete(handle);
    this.base.clearTimer(handle);
  }

  kill(): void {
    this.dead = true;
    for (const h of this.handles) this.base.clearTimer(h);
    this.handles.clear();
  }
}

/** A store that models fsync: `durable` is what a crash leaves. */
export class DurableStore implements StateStore {
  readonly location = 'durable memory store';
  durable: PersistedState;
  private writing: PersistedState | null = null;
  private dead = false;

  constructor(durable: PersistedState = emptyState()) {
    this.durable = structuredClone(durable);
  }

  load(): Promise<LoadResult> {
    return Promise.resolve({ state: structuredClone(this.durable), problem: null });
  }

  /** Taken at the call (like a serializer), durable one macrotask later (like an fsync). */
  save(state: PersistedState): Promise<void> {
    const copy = structuredClone(state);
    if (this.dead) return new Promise<void>(() => undefined); // the process is gone: never answers
    this.writing = copy;
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        if (this.dead) return;
        this.durable = copy;
        if (this.writing === copy) this.writing = null;
        resolve();
      }),
    );
  }

  /** The crash: a save under way reached the disk or not (`reached`); nothing more is written. */
  crash(reached: boolean): PersistedState {
    if (this.writing && reached) this.durable = this.writing;
    this.writing = null;
    this.dead = true;
    return structuredClone(this.durable);
  }
}

/** What one crash found on disk for a thread: the phase of its recovery it cut. */
export type CrashPhase =
  | 'arming not durable'
  | 'failure not recorded'
  | 'backoff durable'
  | 'write-ahead durable, set not applied'
  | 'set applied, not confirmed on disk'
  | 'recovered and confirmed'
  | 'nothing to recover';

interface Facts {
  id: string;
  /** Why the goal is blocked, as the world made it (null: it is not blocked by the world). */
  cause: 'transient' | 'permanent' | 'model' | null;
  /** When the failure of the newest turn happened (world time), if it failed. */
  failedAt: number | null;
  /** Transient failed turns since a person last set the goal active (give-ups need more than maxAttempts). */
  failuresSinceActivation: number;
  /** A person set the goal active (start or resume) at this world time. */
  activatedAt: number;
  /** Crash times at which the disk held no armed watch of this goal after its last activation. */
  unarmedCrashes: number[];
  /** Approvals pending on the thread. */
  approvals: Set<string>;
  /** Confirmed disarm from the extension (Disarm thread), until Re-arm. */
  disarmed: boolean;
  rearmedAt: number;
  /** Retry now was pressed at this world time (due times before it no longer bind). */
  retryNowAt: number;
  /** The earliest due time the disk ever held for a failed turn (the restart must not act sooner). */
  durableDue: Map<string, number>;
}

export interface SetRecord {
  threadId: string;
  failedTurnId: string;
  at: number;
  due: number;
}

let approvalIds = 0;

export class CrashWorld {
  readonly clock = new FakeClock();
  readonly daemon: FakeDaemon;
  readonly options: EngineOptions = { ...DEFAULT_OPTIONS };
  readonly facts = new Map<string, Facts>();
  /** Failed turns an automatic set took effect for, as `threadId/turnId`. */
  readonly effective = new Set<string>();
  readonly sets: SetRecord[] = [];
  readonly phases: CrashPhase[] = [];
  readonly log: string[] = [];
  violation: Error | null = null;
  engine!: Engine;
  private store!: DurableStore;
  private scoped!: ScopedClock;
  private connections: FakeConnection[] = [];
  private alive = false;
  /** What the live engine announced, with the world time it did. */
  decisions: Array<{ d: Decision; at: number }> = [];
  paused = false;
  /** When the person resumed auto-recovery, and when an engine restarted after a crash. */
  private readonly resumeTimes: number[] = [];
  private readonly restartTimes: number[] = [];

  constructor(
    readonly dir: string,
    private readonly random: () => number,
  ) {
    this.daemon = new FakeDaemon(dir);
    this.daemon.before = (m) => this.judge(m);
  }

  // ---- lives ------------------------------------------------------------------

  async boot(state: PersistedState = emptyState()): Promise<void> {
    this.store = new DurableStore(state);
    this.scoped = new ScopedClock(this.clock);
    this.connections = [];
    this.decisions = [];
    this.alive = true;
    const connect: Connector = async (listener) => {
      const c = this.daemon.accept();
      this.connections.push(c);
      return startSession(c.transport(), listener, { clientVersion: 'crash-test', requestTimeoutMs: 60_000 });
    };
    const life = { alive: true };
    this.engine = new Engine(this.options, {
      connect,
      store: this.store,
      clock: this.scoped,
      random: this.random,
      onDecision: (d) => {
        if (life.alive) this.decisions.push({ d, at: this.clock.now() });
      },
    });
    const engine = this.engine;
    this.kill = () => {
      life.alive = false;
      void engine; // dropped: never stopped
    };
    await this.engine.start();
    await this.settle();
  }

  private kill: () => void = () => undefined;

  /** The process dies: nothing of it runs again; a new engine starts from the disk. */
  async crash(reached: boolean): Promise<CrashPhase[]> {
    this.alive = false;
    this.kill();
    this.scoped.kill();
    for (const c of this.connections) c.close('EOF (the engine crashed)');
    const disk = this.store.crash(reached);
    this.checkAnnounced(disk);
    const now = this.clock.now();
    const found: CrashPhase[] = [];
    for (const f of this.facts.values()) {
      const phase = this.phaseOf(f, disk.watches[f.id]);
      found.push(phase);
      if (phase === 'arming not durable') f.unarmedCrashes.push(now);
      const w = disk.watches[f.id];
      const due = w?.lastFailure?.dueAt;
      if (w?.lastFailure && due !== null && due !== undefined) {
        const known = f.durableDue.get(w.lastFailure.turnId);
        if (known === undefined || due < known) f.durableDue.set(w.lastFailure.turnId, due);
      }
    }
    this.phases.push(...found);
    this.log.push(
      `crash at +${this.at()} s (${reached ? 'the save under way reached the disk' : 'the save under way was lost'}): ${found.join(', ') || 'no threads'}`,
    );
    this.restartTimes.push(now);
    await this.boot(disk);
    return found;
  }

  /**
   * Durable before announced: everything the dead engine announced is on the disk it left
   * (or was superseded there by something later).
   */
  private checkAnnounced(disk: PersistedState): void {
    const last = new Map<string, { d: Decision; at: number }>();
    for (const e of this.decisions) {
      const d = e.d;
      if (!('threadId' in d) || d.threadId === undefined) continue;
      const w = disk.watches[d.threadId];
      const what = `the engine announced ${JSON.stringify(d)} before the crash, but the disk`;
      switch (d.type) {
        case 'armed':
          if (!w || w.state.kind === 'notAdopted') this.fail(`${what} holds no armed watch of ${d.threadId}`);
          break;
        case 'backoff': {
          const f = w?.lastFailure;
          if (!w || !(f?.turnId === d.failedTurnId || w.recovered.includes(d.failedTurnId) || (f && f.at >= e.at)))
            this.fail(`${what} holds no record of that failure (${JSON.stringify(f ?? null)})`);
          break;
        }
        case 'recovered':
          if (!w?.recovered.includes(d.failedTurnId))
            this.fail(`${what} does not count ${d.failedTurnId} as recovered`);
          break;
        case 'gave-up':
          if (!w || (w.state.kind !== 'gaveUp' && w.updatedAt < e.at)) this.fail(`${what} does not hold the give-up`);
          break;
        default:
          break;
      }
      if (d.type === 'disarmed' || d.type === 'rearmed') last.set(d.threadId, e);
    }
    for (const [id, e] of last) {
      if (id === '*') continue;
      const disarmedOnDisk = disk.disarmed[id] !== undefined || disk.watches[id]?.state.kind === 'userIntent';
      if (e.d.type === 'disarmed' && !disarmedOnDisk && (disk.watches[id]?.updatedAt ?? 0) < e.at)
        this.fail(`the engine announced ${JSON.stringify(e.d)} before the crash, but the disk does not hold it`);
    }
    const pause = [...this.decisions].reverse().find((e) => 'threadId' in e.d && e.d.threadId === '*');
    if (pause && (pause.d.type === 'skipped') !== (disk.pausedAt !== null))
      this.fail(
        `the engine announced ${JSON.stringify(pause.d)} before the crash, but the disk says pausedAt ${disk.pausedAt}`,
      );
    if (this.violation) this.violation = new Error(`${this.violation.message}`);
  }

  private phaseOf(f: Facts, w: WatchedThread | undefined): CrashPhase {
    const t = this.daemon.thread(f.id);
    if (!w || w.state.kind === 'notAdopted' || w.armedAt < f.activatedAt - 1) return 'arming not durable';
    if (t.goal?.status !== 'blocked' || f.cause !== 'transient' || t.turn.status !== 'failed') {
      if (w.pending && this.effective.has(`${f.id}/${w.pending.failedTurnId}`))
        return 'set applied, not confirmed on disk';
      return 'nothing to recover';
    }
    const turnId = t.turn.id;
    if (w.pending?.failedTurnId === turnId) return 'write-ahead durable, set not applied';
    if (w.lastFailure?.turnId === turnId && w.lastFailure.dueAt !== null)
      return w.recovered.includes(turnId) ? 'recovered and confirmed' : 'backoff durable';
    return 'failure not recorded';
  }

  /** Ends the world: the live engine is dropped like a crash, every connection closed. */
  close(): void {
    this.alive = false;
    this.kill();
    this.scoped.kill();
    this.daemon.disconnect('test over');
  }

  /** What the engine's store holds on disk now. */
  disk(): PersistedState {
    return this.store.durable;
  }

  // ---- time -------------------------------------------------------------------

  /** Lets in-memory streams deliver and the live engine react, until it is idle (six rounds). */
  async settle(): Promise<void> {
    // A rule the strict daemon saw broken is thrown here, in the property's run (with its counterexample).
    await this.daemon.checking(async () => {
      for (let i = 0; i < 6; i++) {
        await new Promise((resolve) => setImmediate(resolve));
        while (this.clock.fireDue()) {
          /* every timer due now, as the loop turns */
        }
        if (this.alive) await this.engine.idle();
      }
    });
  }

  /**
   * `turns` turns of the event loop, without waiting for the engine: a crash that follows lands
   * inside whatever is under way (reads, a save, a set on the wire). 6 or more: a full settle.
   */
  async run(turns: number): Promise<void> {
    if (turns >= 6) return this.settle();
    await this.daemon.checking(async () => {
      for (let i = 0; i < turns; i++) {
        await new Promise((resolve) => setImmediate(resolve));
        while (this.clock.fireDue()) {
          /* every timer due now, as the loop turns */
        }
      }
    });
  }

  /**
   * Time passes one timer at a time: the engine reacts to each before the next fires. A timer
   * that falls due exactly at the end gets only `lastRounds` turns of the event loop (`run`:
   * fewer than 6, and a crash that follows lands inside what it started).
   */
  async advance(ms: number, lastRounds = 6): Promise<void> {
    const end = this.clock.elapsed() + Math.max(0, ms);
    for (;;) {
      const next = this.clock.nextIn();
      if (next === null || this.clock.elapsed() + next > end) break;
      const atEnd = this.clock.elapsed() + next === end;
      this.clock.step(next);
      if (atEnd && lastRounds < 6) {
        await this.run(lastRounds);
        return;
      }
      await this.settle();
      this.throwIfBroken();
    }
    this.clock.step(end - this.clock.elapsed()); // no timer is due by the end: time only moves
    await this.run(lastRounds);
  }

  at(): number {
    return Math.round(this.clock.elapsed() / 100) / 10;
  }

  throwIfBroken(): void {
    if (this.violation) throw this.violation;
    this.daemon.check();
  }

  // ---- what happens in Codex -------------------------------------------------------

  private fact(id: string): Facts {
    const f = this.facts.get(id);
    if (!f) throw new Error(`no thread ${id}`);
    return f;
  }

  private nextTurnId(id: string): string {
    const n = Number(this.daemon.thread(id).turn.id.split('-')[1] ?? '0');
    return `turn-${n + 1}`;
  }

  /** A person gives a new thread a goal; Codex starts its first turn. */
  startGoal(id: string): void {
    const t = this.daemon.addThread(id, 'active', testTurn('turn-1', 'inProgress'), 'active');
    t.status = { type: 'active', activeFlags: [] };
    fs.appendFileSync(t.path, goalEventLine(t.goal!));
    this.facts.set(id, {
      id,
      cause: null,
      failedAt: null,
      failuresSinceActivation: 0,
      activatedAt: this.clock.now(),
      unarmedCrashes: [],
      approvals: new Set(),
      disarmed: false,
      rearmedAt: 0,
      retryNowAt: 0,
      durableDue: new Map(),
    });
    this.daemon.notify('thread/started', {
      thread: { id, status: t.status, path: t.path, preview: '', name: null, cwd: this.dir, turns: [] },
    });
    this.daemon.notify('thread/goal/updated', { threadId: id, turnId: null, goal: t.goal });
    this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
    this.daemon.notifySubscribed(id, 'turn/started', { threadId: id, turn: t.turn });
    this.log.push(`+${this.at()} s ${id}: goal set active by the person, turn-1 runs`);
  }

  running(id: string): boolean {
    const t = this.daemon.threads.get(id);
    return t?.turn.status === 'inProgress' && t.goal?.status === 'active';
  }

  /** The running turn fails (Codex may retry the stream first, in the same turn). */
  failTurn(id: string, transient: boolean, retryFirst: boolean): void {
    const f = this.fact(id);
    this.settleApprovals(id);
    const info = transient ? 'internalServerError' : 'contextWindowExceeded';
    this.daemon.failWithEvents(id, { codexErrorInfo: info, retryFirst });
    f.cause = transient ? 'transient' : 'permanent';
    f.failedAt = this.clock.now();
    if (transient) f.failuresSinceActivation += 1;
    this.log.push(
      `+${this.at()} s ${id}: ${this.daemon.thread(id).turn.id} failed (${info}${retryFirst ? ', after a Codex retry' : ''})`,
    );
  }

  /** Codex retries the turn's request itself (`error {willRetry:true}`); the turn goes on. */
  codexRetry(id: string): void {
    const t = this.daemon.thread(id);
    this.daemon.notifySubscribed(id, 'error', {
      threadId: id,
      turnId: t.turn.id,
      willRetry: true,
      error: {
        message: 'Reconnecting... 1/5',
        codexErrorInfo: { responseStreamDisconnected: { httpStatusCode: null } },
        additionalDetails: null,
      },
    });
    this.log.push(`+${this.at()} s ${id}: Codex retries ${t.turn.id} itself`);
  }

  /** The running turn completes; the goal stays active (idle thread) or is complete. */
  completeTurn(id: string, goalDone: boolean): void {
    const t = this.daemon.thread(id);
    this.settleApprovals(id);
    t.turn = testTurn(t.turn.id, 'completed');
    t.status = { type: 'idle' };
    this.daemon.notifySubscribed(id, 'turn/completed', { threadId: id, turn: t.turn });
    if (goalDone) {
      t.goal = testGoal(id, 'complete');
      this.daemon.notify('thread/goal/updated', { threadId: id, turnId: t.turn.id, goal: t.goal });
    }
    this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
    this.fact(id).cause = null;
    this.log.push(`+${this.at()} s ${id}: ${t.turn.id} completed${goalDone ? ', goal complete' : ''}`);
  }

  /** The model blocks the goal itself (`update_goal`); its turn then completes, or fails. */
  modelBlock(id: string, thenFails: boolean): void {
    const t = this.daemon.thread(id);
    this.settleApprovals(id);
    fs.appendFileSync(t.path, modelGoalCallLine('blocked', `call-${t.turn.id}`));
    if (thenFails) {
      this.daemon.failWithEvents(id, { codexErrorInfo: 'internalServerError' });
    } else {
      t.goal = testGoal(id, 'blocked');
      t.turn = testTurn(t.turn.id, 'completed');
      t.status = { type: 'idle' };
      this.daemon.notify('thread/goal/updated', { threadId: id, turnId: t.turn.id, goal: t.goal });
      this.daemon.notifySubscribed(id, 'turn/completed', { threadId: id, turn: t.turn });
      this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
    }
    const f = this.fact(id);
    f.cause = 'model';
    f.failedAt = thenFails ? this.clock.now() : null;
    this.log.push(`+${this.at()} s ${id}: the model blocked the goal${thenFails ? ', then its turn failed' : ''}`);
  }

  /** A person pauses the goal in Codex (a marker in the rollout), on a thread with no turn running. */
  userPause(id: string): void {
    this.daemon.human(id, 'paused');
    this.fact(id).cause = null;
    this.log.push(`+${this.at()} s ${id}: the person paused the goal`);
  }

  /** A person sets the goal active again; Codex starts a turn for it. */
  userResume(id: string): void {
    const f = this.fact(id);
    this.daemon.human(id, 'active');
    const t = this.daemon.thread(id);
    t.turn = testTurn(this.nextTurnId(id), 'inProgress');
    t.status = { type: 'active', activeFlags: [] };
    this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
    this.daemon.notifySubscribed(id, 'turn/started', { threadId: id, turn: t.turn });
    f.cause = null;
    f.failedAt = null;
    f.failuresSinceActivation = 0;
    f.activatedAt = this.clock.now();
    f.unarmedCrashes = [];
    this.log.push(`+${this.at()} s ${id}: the person set the goal active, ${t.turn.id} runs`);
  }

  /** Codex asks the person to approve a command in the running turn. */
  approval(id: string): void {
    const t = this.daemon.thread(id);
    const requestId = `approval-${++approvalIds}`;
    this.fact(id).approvals.add(requestId);
    t.status = { type: 'active', activeFlags: ['waitingOnApproval'] };
    this.daemon.serverRequest(requestId, 'item/commandExecution/requestApproval', {
      threadId: id,
      turnId: t.turn.id,
      itemId: `item-${requestId}`,
    });
    this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
    this.log.push(`+${this.at()} s ${id}: approval ${requestId} asked`);
  }

  /** The person's own client answers the approvals (or the turn's end takes them away). */
  settleApprovals(id: string): void {
    const f = this.fact(id);
    for (const requestId of f.approvals) this.daemon.resolveServerRequest(requestId);
    if (f.approvals.size > 0) {
      const t = this.daemon.thread(id);
      if (t.turn.status === 'inProgress') {
        t.status = { type: 'active', activeFlags: [] };
        this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
      }
      this.log.push(`+${this.at()} s ${id}: approvals answered by the person`);
    }
    f.approvals.clear();
  }

  // ---- the person's commands in this product ------------------------------------------

  async command(name: 'pauseAll' | 'resumeAll' | 'disarm' | 'rearm' | 'retryNow', id?: string): Promise<void> {
    const e = this.engine;
    this.log.push(`+${this.at()} s command ${name}${id ? ` ${id}` : ''}`);
    switch (name) {
      case 'pauseAll':
        await e.pauseAll();
        this.paused = true;
        break;
      case 'resumeAll':
        await e.resumeAll();
        this.paused = false;
        this.resumeTimes.push(this.clock.now());
        break;
      case 'disarm':
        await e.disarm(id!);
        this.fact(id!).disarmed = true;
        break;
      case 'rearm': {
        // Before the call: the engine may act on the re-arm before the call returns.
        const f = this.fact(id!);
        const was = f.disarmed;
        f.disarmed = false;
        f.rearmedAt = this.clock.now();
        try {
          await e.rearm(id!);
        } catch (error) {
          f.disarmed = was;
          throw error;
        }
        break;
      }
      case 'retryNow':
        this.fact(id!).retryNowAt = this.clock.now();
        await e.retryNow(id!).catch(() => undefined);
        break;
    }
    await this.settle();
  }

  // ---- the judge -------------------------------------------------------------------

  /** The first broken rule; the set is dropped unanswered, and the driver throws after the step. */
  private fail(message: string): false {
    this.violation ??= new Error(`${message}\n  at +${this.at()} s; history:\n  ${this.log.join('\n  ')}`);
    // The refused request gets no answer: end the connections, so the engine is not left waiting.
    setImmediate(() => this.daemon.disconnect('the test judge refused a request'));
    return false;
  }

  /** Every automatic set, before the daemon applies it: false refuses it. */
  private judge(m: WireMessage): boolean {
    if (m.method !== 'thread/goal/set') return true;
    const p = m.params ?? {};
    if (p.origin !== 'automatic') return true;
    const id = String(p.threadId);
    const t = this.daemon.threads.get(id);
    const f = this.facts.get(id);
    if (!t || !f) return this.fail(`an automatic set on an unknown thread ${id}`);
    const turnId = t.turn.id;
    const what = `the automatic set on ${id} (newest turn ${turnId}, ${t.turn.status})`;
    if (Object.keys(p).sort().join(',') !== 'origin,status,threadId' || p.status !== 'active')
      return this.fail(`${what} changed more than the status: ${JSON.stringify(p)}`);
    if (t.goal?.status !== 'blocked') return this.fail(`${what}: the goal is ${t.goal?.status ?? 'cleared'}`);
    if (f.cause === 'model') return this.fail(`${what}: the model blocked this goal`);
    if (f.cause !== 'transient' || t.turn.status !== 'failed')
      return this.fail(`${what}: the goal is not blocked by a transient failure (${f.cause ?? 'no failure'})`);
    if (this.effective.has(`${id}/${turnId}`)) return this.fail(`${what}: a second set for the same failed turn`);
    if (this.paused) return this.fail(`${what}: the person paused auto-recovery`);
    if (f.disarmed) return this.fail(`${what}: the person disarmed the thread`);
    if (f.approvals.size > 0) return this.fail(`${what}: an approval is pending`);
    const w = this.store.durable.watches[id];
    if (!w || w.pending?.failedTurnId !== turnId)
      return this.fail(`${what}: its intent is not on disk (durable pending: ${JSON.stringify(w?.pending ?? null)})`);
    const due = w.lastFailure?.turnId === turnId ? w.lastFailure.dueAt : null;
    if (due === null) return this.fail(`${what}: the disk holds no due time for the failure`);
    const now = this.clock.now();
    const retried = f.retryNowAt >= (f.failedAt ?? 0);
    if (!retried && due < (f.failedAt ?? 0) + this.options.baseDelayMs / 2)
      return this.fail(`${what}: due ${due - (f.failedAt ?? 0)} ms after the failure, less than the shortest backoff`);
    if (!retried && now < due) return this.fail(`${what}: sent at ${now}, before the due time on disk ${due}`);
    const earliest = f.durableDue.get(turnId);
    if (!retried && earliest !== undefined && now < earliest)
      return this.fail(`${what}: sent ${earliest - now} ms before the due time a crash left on disk`);
    this.effective.add(`${id}/${turnId}`);
    f.cause = null;
    this.sets.push({ threadId: id, failedTurnId: turnId, at: now, due: due });
    this.log.push(
      `+${this.at()} s ${id}: automatic set for ${turnId} (${Math.round((now - due) / 100) / 10} s after its due time)`,
    );
    return true;
  }

  /**
   * After the last step and enough time: every transient failure that nothing superseded was
   * recovered, in time. Returns which case each thread ended in.
   */
  verifyLiveness(): string[] {
    const cases: string[] = [];
    const slack = this.options.resyncMs + this.options.limiterIntervalMs * Math.max(1, this.facts.size) + 2_000;
    for (const set of this.sets) {
      const f = this.fact(set.threadId);
      if (f.retryNowAt >= (f.failedAt ?? 0)) continue;
      const before = (times: number[]) => Math.max(0, ...times.filter((t) => t <= set.at));
      const from = Math.max(
        set.due,
        before(this.resumeTimes),
        before(this.restartTimes),
        f.rearmedAt <= set.at ? f.rearmedAt : 0,
      );
      if (set.at > from + slack) {
        throw new Error(
          `${set.threadId}: ${set.failedTurnId} was recovered ${Math.round((set.at - from) / 1000)} s after it was due (more than a resync plus the limiter)\n  ${this.log.join('\n  ')}`,
        );
      }
    }
    for (const f of this.facts.values()) {
      const t = this.daemon.thread(f.id);
      if (
        t.goal?.status !== 'blocked' ||
        f.cause !== 'transient' ||
        t.turn.status !== 'failed' ||
        this.effective.has(`${f.id}/${t.turn.id}`)
      ) {
        cases.push('settled');
        continue;
      }
      if (this.paused) {
        cases.push('held: auto-recovery paused');
        continue;
      }
      if (f.disarmed) {
        cases.push('held: disarmed');
        continue;
      }
      const w = this.disk().watches[f.id];
      if (w?.state.kind === 'gaveUp') {
        if (f.failuresSinceActivation <= this.options.maxAttempts)
          throw new Error(
            `${f.id}: gave up after ${f.failuresSinceActivation} failed turns (the limit is ${this.options.maxAttempts})\n  ${this.log.join('\n  ')}`,
          );
        cases.push('gave up');
        continue;
      }
      if ((!w || w.state.kind === 'notAdopted') && f.unarmedCrashes.length > 0) {
        cases.push('never seen: the arming was not durable at a crash');
        continue;
      }
      throw new Error(
        `${f.id}: the transient failure of ${t.turn.id} was never recovered (on disk: ${JSON.stringify(w?.state ?? null)}, failures ${w?.failures ?? '-'})\n  ${this.log.join('\n  ')}`,
      );
    }
    return cases;
  }
}
