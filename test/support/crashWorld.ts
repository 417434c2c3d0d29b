// A world for crash-consistency properties: one fake daemon, one fake clock, and a sequence of
// engine "lives". A life ends by a crash: the engine is dropped without `stop()` (its timers
// die, its connection closes, whatever it had not written to disk is gone) and a new engine
// starts from what its store durably holds. The store models fsync: a save is durable once its
// promise resolves; one still being written when the crash comes may or may not have reached
// the disk (drawn at random). A life can also stall (`stall`): frozen past its lease while a
// second engine takes over from its last snapshot, then woken and dropped once it stepped down.
// Every life leads by a real Lease on the fake clock, renewed by a timer of its own; the
// engine's fence is that lease.
//
// The world is the judge, from the daemon's side: every automatic `thread/goal/set` is checked
// the moment it arrives (before the daemon applies it) against what the world knows — the
// goal's status and why it is blocked, the newest turn, the person's commands and markers, and
// the durable store — and the first broken rule is kept as `violation`, which the driver throws
// right after the step (the set is not applied, so nothing builds on it).
import { Engine } from '../../src/core/engine';
import type { Clock, TimerHandle } from '../../src/core/clock';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import { HandoverStore, mergeLeaderSnapshot } from '../../src/leader/handover';
import { Lease, LEASE_MS, RENEW_MS } from '../../src/leader/lease';
import type { Decision } from '../../src/model/decision';
import type { EngineSnapshot } from '../../src/model/snapshot';
import { emptyState, type PersistedState, type WatchedThread } from '../../src/model/watch';
import { dueAt, scheduledOf } from '../../src/model/queries';
import { startSession } from '../../src/protocol/client';
import type { Connector } from '../../src/protocol/daemon';
import { LineMessageReader, LineMessageWriter } from '../../src/protocol/lineFraming';
import type { Transport } from '../../src/protocol/transport';
import type { LoadResult, StateStore } from '../../src/store/store';
import * as fs from 'node:fs';
import { PassThrough } from 'node:stream';
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

/** A timer that fell due while its life was frozen: it fires when the life wakes. */
interface Overdue {
  handle: TimerHandle;
  callback: () => void;
  quiet: boolean;
}

/**
 * A clock for one life: its timers die with it. Frozen (a stalled process: SIGSTOP, a blocked
 * event loop), its timers that fall due fire nothing; they fire, in the order they fell due, when
 * the life wakes. A `quiet` timer (the lease's renewal) sets nothing in motion for the world to
 * wait for: `busy.fired` counts only the others, so the driver need not let the engine react to
 * every renewal.
 */
export class ScopedClock implements Clock {
  private readonly handles = new Set<TimerHandle>();
  private dead = false;
  private frozen = false;
  private overdue: Overdue[] = [];

  constructor(
    private readonly base: FakeClock,
    private readonly busy: { fired: number } = { fired: 0 },
  ) {}

  now(): number {
    return this.base.now();
  }
  elapsed(): number {
    return this.base.elapsed();
  }

  setTimer(callback: () => void, delayMs: number, quiet = false): TimerHandle {
    if (this.dead) return { id: -1 };
    const handle = this.base.setTimer(() => {
      this.handles.delete(handle);
      if (this.dead) return;
      if (this.frozen) {
        this.overdue.push({ handle, callback, quiet });
        return;
      }
      if (!quiet) this.busy.fired += 1;
      callback();
    }, delayMs);
    this.handles.add(handle);
    return handle;
  }

  clearTimer(handle: TimerHandle): void {
    this.handles.delete(handle);
    this.base.clearTimer(handle);
    this.overdue = this.overdue.filter((o) => o.handle.id !== handle.id);
  }

  kill(): void {
    this.dead = true;
    for (const h of this.handles) this.base.clearTimer(h);
    this.handles.clear();
    this.overdue = [];
  }

  /** The process stops: no timer of it fires until `wake`. */
  freeze(): void {
    this.frozen = true;
  }

  /** The timers that fell due while frozen, in order: how many come before the first quiet one. */
  overdueBeforeQuiet(): { total: number; beforeQuiet: number } {
    const q = this.overdue.findIndex((o) => o.quiet);
    return { total: this.overdue.length, beforeQuiet: q === -1 ? this.overdue.length : q };
  }

  /**
   * The process runs again: the timers that fell due meanwhile fire first, one at a time in the
   * order they fell due (a timer cleared by an earlier one does not fire), with `between` (the
   * microtasks) after each, as Node runs its timers phase before it reads any socket.
   */
  async wake(between: () => Promise<void>): Promise<void> {
    this.frozen = false;
    for (let next = this.overdue.shift(); next; next = this.overdue.shift()) {
      if (this.dead) return;
      if (!next.quiet) this.busy.fired += 1;
      next.callback();
      await between();
    }
  }
}

/** A store that models fsync: `durable` is what a crash leaves. */
export class DurableStore implements StateStore {
  readonly location = 'durable memory store';
  durable: PersistedState;
  /** Called at every save, before anything is written (the world judges who saves when). */
  onSave: (() => void) | null = null;
  private writing: PersistedState | null = null;
  private dead = false;
  /** Frozen: saves reach the disk, but their completions wait for `release` (the process is stopped). */
  private held: (() => void)[] | null = null;

  constructor(durable: PersistedState = emptyState()) {
    this.durable = structuredClone(durable);
  }

  load(): Promise<LoadResult> {
    return Promise.resolve({ state: structuredClone(this.durable), problem: null });
  }

  /** Taken at the call (like a serializer), durable one macrotask later (like an fsync). */
  save(state: PersistedState): Promise<void> {
    this.onSave?.();
    const copy = structuredClone(state);
    if (this.dead) return new Promise<void>(() => undefined); // the process is gone: never answers
    this.writing = copy;
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        if (this.dead) return;
        this.durable = copy;
        if (this.writing === copy) this.writing = null;
        if (this.held) this.held.push(resolve);
        else resolve();
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

  /** The process stops: what it is writing reaches the disk, but it hears of it only after `release`. */
  freeze(): void {
    this.held ??= [];
  }

  /** The process runs again: the saves that completed meanwhile resolve, in order. */
  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const resolve of held) resolve();
  }
}

/**
 * What a connection delivers to its engine, gated: while its process is frozen the daemon's lines
 * (and the end of the connection) queue up unread, as in a stopped process's socket buffer; `open`
 * delivers them in order. What the engine writes goes through `tap` first.
 */
class Gate {
  readonly inbox = new PassThrough();
  private ended = false;
  private held: Array<{ chunk: Buffer | string } | { end: true } | { close: string }> | null = null;
  private readonly closeCallbacks: ((reason: string) => void)[] = [];

  constructor(readonly c: FakeConnection) {
    c.toClient.on('data', (chunk: Buffer | string) => {
      if (this.held) this.held.push({ chunk });
      else this.inbox.write(chunk);
    });
    c.toClient.on('end', () => {
      if (this.held) this.held.push({ end: true });
      else this.end();
    });
    c.onClose((reason) => {
      if (this.held) this.held.push({ close: reason });
      else for (const cb of this.closeCallbacks.splice(0)) cb(reason);
    });
  }

  transport(tap: (line: string) => boolean): Transport {
    class TappedWriter extends LineMessageWriter {
      protected override send(text: string, done: (err?: Error | null) => void): void {
        if (tap(text)) super.send(text, done);
        else done(); // dropped: the judge refused it (the run fails)
      }
    }
    return {
      reader: new LineMessageReader(this.inbox),
      writer: new TappedWriter(this.c.fromClient),
      describe: 'fake daemon (gated)',
      onClose: (cb) => {
        if (this.c.closedReason !== null && !this.held) cb(this.c.closedReason);
        else this.closeCallbacks.push(cb);
      },
      close: () => {
        this.c.close('closed by client');
        return Promise.resolve();
      },
    };
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.inbox.end();
  }

  freeze(): void {
    this.held ??= [];
  }

  /** Lines queued while frozen. */
  get queued(): number {
    return this.held?.filter((h) => 'chunk' in h).length ?? 0;
  }

  open(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const h of held) {
      if ('chunk' in h) {
        if (!this.ended) this.inbox.write(h.chunk);
      } else if ('end' in h) this.end();
      else for (const cb of this.closeCallbacks.splice(0)) cb(h.close);
    }
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

/** What a stall reached (counted over the runs, like the crash phases). */
export type StallPhase =
  | 'stalled with a recovery due inside the freeze'
  | 'stalled between its write-ahead save and its set'
  | 'woke with a set due before its renewal'
  | 'woke to queued notifications'
  | 'the new engine recovered what the stalled one had due'
  | 'stepped down, its stop saved nothing';

/** One engine's life: from its start to its crash, its stall's end, or the end of the run. */
interface Life {
  name: string;
  engine: Engine;
  store: DurableStore;
  scoped: ScopedClock;
  lease: Lease;
  gates: Gate[];
  /** What it announced, with the world time it did. */
  decisions: Array<{ d: Decision; at: number }>;
  /** Not crashed nor dropped. */
  alive: boolean;
  /** Another engine took over (why its lease ran out): nothing may come from this one any more. */
  stale: string | null;
  /** Stalled (after the few turns it finishes first): it must not run at all. */
  frozen: boolean;
  /** The snapshot it last pushed to its followers. */
  lastSnapshot: EngineSnapshot | null;
  /** Its stop (after it stepped down) completed. */
  stopped: boolean;
  /** Why its renewal found the lease gone. */
  lostLease: string | null;
  /** When its lease was last renewed (monotonic ms), as its renewal timer saw it. */
  renewedAt: number;
}

/** Lets the microtasks queued so far run (and those they queue), as between two timers. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 64; i++) await Promise.resolve();
}

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
  /** What the stalls reached, counted like the crash phases. */
  readonly stallPhases: StallPhase[] = [];
  violation: Error | null = null;
  engine!: Engine;
  /** The engine of the world now (the leader); a stalled one is dropped once it woke. */
  private life!: Life;
  private lives = 0;
  /** Timers fired that set something in motion (not a renewal): the driver lets the engine react to those. */
  private readonly busy = { fired: 0 };
  /** What the live engine announced, with the world time it did. */
  get decisions(): Array<{ d: Decision; at: number }> {
    return this.life.decisions;
  }
  paused = false;
  /** When the person resumed auto-recovery, and when an engine restarted after a crash or took over. */
  private readonly resumeTimes: number[] = [];
  /**
   * When a turn completed successfully (the provider answered): every goal here runs on the mock,
   * so a failure older than one may be recovered at once (src/core/outage.ts, `releasedBy`).
   */
  private readonly answerTimes: number[] = [];
  /**
   * Turns that began on the mock after a failure, as a probe may (an automatic set, a person's
   * resume): a goal due meanwhile may wait for its verdict, at most the backoff cap.
   */
  private readonly probeStarts: { threadId: string; at: number }[] = [];
  private readonly restartTimes: number[] = [];
  /** Failed turns a stalled engine had due within its freeze (`threadId/turnId`): who recovers them. */
  private readonly dueAtStall = new Set<string>();

  constructor(
    readonly dir: string,
    private readonly random: () => number,
  ) {
    this.daemon = new FakeDaemon(dir);
    this.daemon.before = (m) => this.judge(m);
  }

  // ---- lives ----------------------------------------------------------------------------

  /**
   * A new engine life: its own timers (a ScopedClock), its store, its connections (gated, so a
   * stall can freeze them) and its lease (src/leader/lease.ts, on the fake monotonic clock),
   * renewed every RENEW_MS by a timer of its own, as src/leader/tenure.ts does; the engine's
   * fence is the lease. `snapshot`: the life takes over from a leader, starting from its store
   * merged with that leader's last snapshot (HandoverStore), as production builds a takeover.
   */
  async boot(state: PersistedState = emptyState(), snapshot: EngineSnapshot | null = null): Promise<void> {
    const store = new DurableStore(state);
    const scoped = new ScopedClock(this.clock, this.busy);
    const lease = new Lease(LEASE_MS, () => this.clock.elapsed());
    const life: Life = {
      name: `engine ${++this.lives}`,
      engine: null as unknown as Engine,
      store,
      scoped,
      lease,
      gates: [],
      decisions: [],
      alive: true,
      stale: null,
      frozen: false,
      lastSnapshot: null,
      stopped: false,
      lostLease: null,
      renewedAt: this.clock.elapsed(),
    };
    this.life = life;
    store.onSave = () => {
      if (life.frozen) this.ranFrozen += 1;
      if (life.stale) this.fail(`${life.name} saved after its lease ran out: ${this.sinceRenewal(life)}`);
    };
    const renew = (): void => {
      if (!life.alive) return;
      if (!lease.renew()) {
        // The tenure's `lost`: the election steps down and the ElectedEngine stops the engine
        // (a Serial: the stop starts a microtask later).
        life.lostLease = lease.check() ?? 'lost';
        this.busy.fired += 1;
        if (life !== this.stalled) this.fail(`${life.name} lost its lease without a stall: ${life.lostLease}`);
        void Promise.resolve().then(() =>
          life.engine.stop().then(
            () => void (life.stopped = true),
            () => void (life.stopped = true),
          ),
        );
        return;
      }
      life.renewedAt = this.clock.elapsed();
      scoped.setTimer(renew, RENEW_MS, true);
    };
    scoped.setTimer(renew, RENEW_MS, true);
    const connect: Connector = async (listener) => {
      const gate = new Gate(this.daemon.accept());
      life.gates.push(gate);
      return startSession(
        gate.transport((line) => this.tap(life, line)),
        listener,
        {
          clientVersion: 'crash-test',
          requestTimeoutMs: 60_000,
        },
      );
    };
    const push = (): void => {
      // What a leader pushes to its followers (its snapshot, at every change and decision; the
      // views' change follows every save, after its decisions): the start of the next leader's term.
      if (life.alive && !life.stale) life.lastSnapshot = life.engine.snapshot();
    };
    life.engine = new Engine(this.options, {
      connect,
      store: snapshot ? new HandoverStore(store, snapshot) : store,
      clock: scoped,
      random: this.random,
      fence: () => lease.check(),
      onDecision: (d) => {
        if (life.stale) {
          this.fail(`${life.name} announced ${JSON.stringify(d)} after its lease ran out: ${this.sinceRenewal(life)}`);
          return;
        }
        if (life.alive) life.decisions.push({ d, at: this.clock.now() });
      },
      onChange: push,
    });
    this.engine = life.engine;
    await life.engine.start();
    await this.settle();
  }

  /** Every line an engine writes, before the daemon reads it: false drops it (the run fails). */
  private tap(life: Life, line: string): boolean {
    if (!life.stale && !life.frozen) return true;
    let m: WireMessage;
    try {
      m = JSON.parse(line) as WireMessage;
    } catch {
      return true;
    }
    if (life.frozen) this.ranFrozen += 1;
    if (!life.stale || (m.method !== 'thread/goal/set' && m.method !== 'thread/resume')) return true;
    return this.fail(
      `${life.name} sent ${m.method} ${JSON.stringify(m.params ?? {})} after its lease ran out: ${this.sinceRenewal(life)}`,
    );
  }

  /**
   * What a frozen engine did all the same: a rollout read (real file I/O, which the freeze cannot
   * hold) that completed after the freeze lets it run on until its next held input. Counted
   * (kept rare by the freeze's wait); bound by the same rules: nothing after its lease ran out.
   */
  ranFrozen = 0;

  private sinceRenewal(life: Life): string {
    return `${this.clock.elapsed() - life.renewedAt} ms after its last renewal (lease ${LEASE_MS} ms; ${life.stale ?? 'no takeover yet'})`;
  }

  /** The stalled life, from its freeze until it is dropped. */
  private stalled: Life | null = null;

  /** Ends a life without stop(): its timers die, its connections close, its saves stop. */
  private drop(life: Life, why: string): void {
    life.alive = false;
    life.scoped.kill();
    for (const g of life.gates) {
      g.c.close(why);
      g.open();
    }
  }

  /** The process dies: nothing of it runs again; a new engine starts from the disk. */
  async crash(reached: boolean): Promise<CrashPhase[]> {
    const life = this.life;
    this.drop(life, 'EOF (the engine crashed)');
    const disk = life.store.crash(reached);
    this.checkAnnounced(life, disk);
    const now = this.clock.now();
    const found = this.cut(disk);
    this.phases.push(...found);
    this.log.push(
      `crash of ${life.name} at +${this.at()} s (${reached ? 'the save under way reached the disk' : 'the save under way was lost'}): ${found.join(', ') || 'no threads'}`,
    );
    this.restartTimes.push(now);
    await this.boot(disk);
    return found;
  }

  /** What the state a new engine starts from holds of each thread: the phase it cut. */
  private cut(disk: PersistedState): CrashPhase[] {
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
    return found;
  }

  /**
   * A stall of the engine (SIGSTOP, a blocked event loop) for longer than its lease: its timers
   * stop, what the daemon sends it queues up unread, its saves under way reach the disk but it
   * hears of them only when it runs again. `takeoverMs` after its lease ran out (its last renewal
   * plus LEASE_MS) a second engine takes over as production builds one: its own store (a fresh
   * one, or `shared`: the same file, as two runners with one state path) merged with the stalled
   * leader's last snapshot, a lease of its own; it connects to the same daemon and runs for
   * `extraMs`. Then the stalled engine wakes: its overdue timers fire first (its renewal finds
   * the lease gone), then its saves complete, then its queued lines are read; it is stopped as
   * the ElectedEngine stops it, and dropped. The new engine goes on as the world's engine.
   * Anything the stalled engine sends to the daemon (a set, a resume), saves or announces after
   * its lease ran out is a violation (`tap`, the store's `onSave`, `onDecision`).
   */
  async stall(takeoverMs: number, extraMs: number, shared: boolean): Promise<StallPhase[]> {
    const a = this.life;
    const found: StallPhase[] = [];
    this.stalled = a;
    a.scoped.freeze();
    a.store.freeze();
    for (const g of a.gates) g.freeze();
    // What was already running finishes up to its next held input (a reply, a save, a timer):
    // the process stops a little later, with no time passing. Its rollout reads are real file
    // I/O, which nothing holds: they are given a few real milliseconds to complete first.
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 6; i++) await new Promise((resolve) => setImmediate(resolve));
      if (round < 2) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    a.frozen = true;
    const lastRenewal = a.renewedAt;
    const takeoverAt = lastRenewal + LEASE_MS + Math.max(1, takeoverMs);
    const wakeAt = takeoverAt + extraMs;
    const wakeWall = this.clock.now() + (wakeAt - this.clock.elapsed());
    let dueInside = false;
    for (const w of a.engine.watches()) {
      const scheduled = scheduledOf(w.state);
      const due = dueAt(w);
      const failed = scheduled?.kind === 'backoff' ? scheduled.failedTurnId : w.lastFailure?.turnId;
      if (w.state.kind === 'recovering' || (due !== null && due <= wakeWall)) {
        dueInside = true;
        this.dueAtStall.add(`${w.threadId}/${w.state.kind === 'recovering' ? w.state.failedTurnId : failed}`);
      }
    }
    if (dueInside) found.push('stalled with a recovery due inside the freeze');
    this.log.push(
      `+${this.at()} s ${a.name} stalls (its last renewal ${Math.round((this.clock.elapsed() - lastRenewal) / 100) / 10} s ago; the takeover ${Math.round((takeoverAt - this.clock.elapsed()) / 100) / 10} s from now, ${shared ? 'on the same store' : 'with its own store'}; it wakes ${Math.round(extraMs / 100) / 10} s after the takeover)`,
    );
    await this.advance(takeoverAt - this.clock.elapsed());
    // The takeover: the lease ran out (nothing renewed it). From now on nothing may come from A.
    a.stale = `engine ${this.lives + 1} took over at +${this.at()} s, ${this.clock.elapsed() - lastRenewal} ms after its last renewal`;
    const diskA = structuredClone(a.store.durable);
    if (
      [...this.facts.values()].some(
        (f) => this.phaseOf(f, diskA.watches[f.id]) === 'write-ahead durable, set not applied',
      )
    )
      found.push('stalled between its write-ahead save and its set');
    const own = shared ? diskA : emptyState();
    const snapshot = a.lastSnapshot;
    // What the new engine starts from: the arming it does not hold is the old-block rule's case.
    this.cut(snapshot ? mergeLeaderSnapshot(own, snapshot).state : own);
    this.log.push(
      `+${this.at()} s takeover by engine ${this.lives + 1} (${a.name} silent; ${snapshot ? `its last snapshot: ${snapshot.watches.length} watches` : 'no snapshot'})`,
    );
    this.restartTimes.push(this.clock.now());
    await this.boot(own, snapshot);
    await this.advance(Math.max(0, wakeAt - this.clock.elapsed()));
    // A wakes: its overdue timers first, then its saves' completions, then its sockets.
    const { beforeQuiet } = a.scoped.overdueBeforeQuiet();
    if (beforeQuiet > 0 && a.engine.watches().some((w) => w.state.kind === 'recovering'))
      found.push('woke with a set due before its renewal');
    if (a.gates.some((g) => g.queued > 0)) found.push('woke to queued notifications');
    this.log.push(`+${this.at()} s ${a.name} wakes`);
    a.frozen = false;
    await this.daemon.checking(async () => {
      await a.scoped.wake(microtasks);
      await microtasks();
      a.store.release();
      await microtasks();
      for (const g of a.gates) g.open();
      // Its stop may wait for a rollout read (real file I/O): a few real milliseconds at most.
      for (let i = 0; i < 30 && !a.stopped; i++) {
        await this.settle();
        if (i >= 5) await new Promise((resolve) => setTimeout(resolve, 1));
      }
    });
    if (!a.lostLease)
      this.fail(
        `${a.name} woke and its renewal did not find the lease gone (it did not step down): ${this.sinceRenewal(a)}`,
      );
    else if (a.stopped) found.push('stepped down, its stop saved nothing');
    this.log.push(
      `+${this.at()} s ${a.name} ${a.stopped ? 'stopped' : 'stepping down'}: ${a.lostLease ?? 'lease held'}`,
    );
    this.drop(a, 'the stalled engine stepped down');
    this.checkAnnounced(a, a.store.crash(false));
    this.stalled = null;
    this.stallPhases.push(...found);
    await this.settle();
    return found;
  }

  /**
   * Durable before announced: everything the dead engine announced is on the disk it left
   * (or was superseded there by something later).
   */
  private checkAnnounced(life: Life, disk: PersistedState): void {
    const last = new Map<string, { d: Decision; at: number }>();
    for (const e of life.decisions) {
      const d = e.d;
      if (!('threadId' in d) || d.threadId === undefined) continue;
      const w = disk.watches[d.threadId];
      const what = `${life.name} announced ${JSON.stringify(d)} before it ended, but the disk`;
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
    const pause = [...life.decisions].reverse().find((e) => 'threadId' in e.d && e.d.threadId === '*');
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
    this.drop(this.life, 'test over');
    if (this.stalled) this.drop(this.stalled, 'test over');
    this.daemon.disconnect('test over');
  }

  /** What the engine's store holds on disk now. */
  disk(): PersistedState {
    return this.life.store.durable;
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
        if (this.life.alive && !this.life.frozen) await this.engine.idle();
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
      const fired = this.busy.fired;
      this.clock.step(next);
      if (atEnd && lastRounds < 6) {
        await this.run(lastRounds);
        return;
      }
      // Only a lease renewal (or a frozen engine's timer, kept for its wake): nothing to react to.
      if (this.busy.fired === fired) continue;
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
    this.answerTimes.push(this.clock.now());
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
      this.answerTimes.push(this.clock.now());
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
    this.probeStarts.push({ threadId: id, at: this.clock.now() });
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
    const w = this.disk().watches[id];
    if (!w || w.pending?.failedTurnId !== turnId)
      return this.fail(`${what}: its intent is not on disk (durable pending: ${JSON.stringify(w?.pending ?? null)})`);
    const due = w.lastFailure?.turnId === turnId ? w.lastFailure.dueAt : null;
    if (due === null) return this.fail(`${what}: the disk holds no due time for the failure`);
    const now = this.clock.now();
    // The provider answered since the failure (a turn completed): its recovery may be due at once.
    const retried = f.retryNowAt >= (f.failedAt ?? 0) || this.answerTimes.some((t) => t >= (f.failedAt ?? 0));
    if (!retried && due < (f.failedAt ?? 0) + this.options.baseDelayMs / 2)
      return this.fail(`${what}: due ${due - (f.failedAt ?? 0)} ms after the failure, less than the shortest backoff`);
    if (!retried && now < due) return this.fail(`${what}: sent at ${now}, before the due time on disk ${due}`);
    const earliest = f.durableDue.get(turnId);
    if (!retried && earliest !== undefined && now < earliest)
      return this.fail(`${what}: sent ${earliest - now} ms before the due time a crash left on disk`);
    this.effective.add(`${id}/${turnId}`);
    if (this.dueAtStall.delete(`${id}/${turnId}`))
      this.stallPhases.push('the new engine recovered what the stalled one had due');
    f.cause = null;
    this.sets.push({ threadId: id, failedTurnId: turnId, at: now, due: due });
    this.probeStarts.push({ threadId: id, at: now });
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
      // One outage, one probe (src/core/outage.ts): every goal here runs on the mock and fails
      // alike, so one group. A goal due while another's recovery is out as the probe waits for
      // its verdict, at most the backoff cap after the probe's set.
      const probeAt = before(this.probeStarts.filter((x) => x.threadId !== set.threadId).map((x) => x.at));
      const from = Math.max(
        set.due,
        before(this.resumeTimes),
        before(this.restartTimes),
        f.rearmedAt <= set.at ? f.rearmedAt : 0,
        probeAt > 0 ? Math.min(set.at, probeAt + this.options.maxDelayMs) : 0,
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
        // Given up with its outage's probe: another goal of its group failed past the limit.
        const withProbe = [...this.facts.values()].some(
          (g) => g !== f && g.failuresSinceActivation > this.options.maxAttempts,
        );
        if (withProbe && f.failuresSinceActivation <= this.options.maxAttempts) {
          cases.push('gave up with its outage’s probe');
          continue;
        }
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
