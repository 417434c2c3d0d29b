// What every part of the engine shares: the state it owns, what it knows of each thread right
// now, the one state write, the work queue of each thread (jobs.ts says what goes in and who does
// it), the timers (the clock guard, the schedule) and the way out (the saver's outbox). The
// parts (the reconciler, attempts, events, commands, connection) each hold this and nothing of one
// another's internals; the engine makes them and names the queue's worker.
import type { Decision } from '../model/decision';
import type { ConnectionState } from '../model/snapshot';
import { type EngineState, emptyState, type PersistedState, type Watch, type WatchState } from '../model/watch';
import { scheduledOf } from '../model/queries';
import { ConnectionLostError, type Connector, type DaemonSession, RpcError } from '../protocol/daemon';
import type { StateStore } from '../store/store';
import { WorkQueue } from '../util/workQueue';
import type { Random } from './backoff';
import type { Clock, TimerHandle } from './clock';
import { type LiveThread, newLive } from './live';
import type { EngineOptions } from './options';
import { Saver } from './saving';
import { keepsSlot, mayHoldOthers } from './outage';
import { type JobWorkers, merges, type ThreadJob } from './jobs';
import { errorText } from '../util/errorText';
import { writeState } from './watchWrites';

export interface EngineDeps {
  connect: Connector;
  /** Where `connect` goes, for messages and views. */
  target?: string;
  store: StateStore;
  clock: Clock;
  random: Random;
  onDecision: (decision: Decision) => void;
  /** Called after any change a view may show. */
  onChange?: () => void;
  /** Called before each read of a rollout, with its file position and length (tests, diagnostics). */
  onRolloutRead?: (path: string, position: number, length: number) => void;
  /**
   * Null while this engine may act; else why not (src/leader/lease.ts: the lease of the process
   * that leads ran out, or it no longer leads). Asked right before every write to the daemon,
   * every save and every announcement, with no `await` in between; omitted, it always may.
   */
  fence?: () => string | null;
}

/** What the due jobs share across threads (schedule.ts): when each acts, the lead, the limiter, the outage's probe. */
export interface DueTimer {
  /** When a scheduled recovery's `due` job comes (wall clock), or null: not while its attempt runs. */
  actsAt(w: Watch): number | null;
  /** The monotonic time before which the watch's set never goes out (its due time). */
  notBefore(w: Watch): number;
  /** The wall clock jumped forward: what fell due goes with the next due job. */
  jumpedForward(): void;
  /** A response completed on the thread, to a request sent no earlier than `since`. */
  answered(threadId: string, since: number): void;
  /** The token the thread's attempt took given back: its set will not go out. */
  giveBack(threadId: string): void;
  /** The thread's set goes out now: 0, its token spent; or the ms until the limiter has one. */
  spend(threadId: string): number;
  /** The slot the limiter keeps for the thread's recovery (if any) given back: it will not go. */
  giveSlotBack(threadId: string): void;
  prepareLead(): number;
  release(): void;
  nextDueAt(): number | null;
  stop(): void;
  updateOptions(previous: EngineOptions): void;
}

/** Every engine timer (clockGuard.ts): the wall clock is checked before its callback runs. */
export interface TimerGuard {
  setTimer(callback: () => void, delayMs: number): TimerHandle;
  clearTimer(handle: TimerHandle): void;
  started(): void;
}

/** What the engine makes its timers of (engine.ts names schedule.ts and clockGuard.ts). */
export interface EngineTimers {
  guard: (core: EngineCore) => TimerGuard;
  schedule: (core: EngineCore) => DueTimer;
}

export class EngineCore {
  /** Saved as it is; everyone else reads it as `EngineState` (its watches written by watchWrites.ts alone). */
  private current: PersistedState = emptyState();
  /**
   * Threads whose watch may have a recovery scheduled (a superset, checked on use): the timer
   * looks at these instead of every watch, at every change of a due time (with 10,000 watches,
   * a scan of them all per change made arming and recovering quadratic).
   */
  private readonly mayBeDue = new Set<string>();
  options: EngineOptions;
  session: DaemonSession | null = null;
  connection: ConnectionState = { kind: 'connecting', detail: 'starting' };
  stopped = true;
  /** Bumped by every connection and stop: what an older connection still delivers is dropped. */
  generation = 0;
  readonly live = new Map<string, LiveThread>();
  readonly saver: Saver;
  /** Every engine timer goes through it: wall-clock jumps, and delays Node can keep. */
  readonly guard: TimerGuard;
  /** Each thread's due job, the preparation lead, the limiter and the outage's probe. */
  readonly schedule: DueTimer;
  /** One queue per thread: a thread's work never overlaps, a look asked twice while one waits runs once. */
  readonly work: WorkQueue<ThreadJob>;
  /** Threads whose recovery took its slot, and the session its attempt runs on in their `due` job (attempting). */
  readonly underway = new Map<string, DaemonSession>();
  private workers: JobWorkers | null = null;
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    options: EngineOptions,
    readonly deps: EngineDeps,
    timers: EngineTimers,
  ) {
    this.options = { ...options };
    this.saver = new Saver({
      store: deps.store,
      clock: deps.clock,
      onDecision: deps.onDecision,
      ...(deps.onChange ? { onChange: deps.onChange } : {}),
      state: () => this.current,
      track: (p) => this.track(p),
      stopped: () => this.stopped,
      fence: () => this.fence(),
    });
    this.guard = timers.guard(this);
    this.schedule = timers.schedule(this);
    this.work = new WorkQueue<ThreadJob>({
      process: (threadId, job) => this.process(threadId, job),
      merges,
      // A prepared set ended (sent, or called off): its thread may fall due again.
      done: (threadId, job) => {
        if (job.kind === 'send') this.attemptEnded(threadId);
      },
      // Every job, a delayed `send` too once it is due: `idle()` waits for them all.
      track: (done) => void this.track(done),
      // Through the clock guard, as every engine timer (a wall-clock jump, a delay Node cannot keep).
      timers: this.guard,
    });
  }

  /** Who does what the thread queues hold (the engine names them once, at its start). */
  serve(workers: JobWorkers): void {
    this.workers = workers;
  }

  /** The state the engine owns; replacing it (a load, a reset) re-reads which watches are scheduled. */
  /** Null while this engine may act (EngineDeps.fence); else why not. */
  fence(): string | null {
    return this.deps.fence?.() ?? null;
  }

  /** Throws, saying why, when this engine may not act now (a person's command on a stale leader). */
  mustLead(what: string): void {
    const reason = this.fence();
    if (reason !== null) throw new Error(`${what}: not done: ${reason}`);
  }

  get state(): EngineState {
    return this.current;
  }

  set state(state: PersistedState) {
    this.current = state;
    this.mayBeDue.clear();
    for (const [threadId, w] of Object.entries(state.watches)) if (scheduledOf(w.state)) this.mayBeDue.add(threadId);
  }

  now(): number {
    return this.deps.clock.now();
  }

  watches(): readonly Watch[] {
    return Object.values(this.state.watches);
  }

  /** The watches with a recovery scheduled (also those the limiter holds for a slot). */
  scheduledWatches(): Watch[] {
    const scheduled: Watch[] = [];
    for (const threadId of this.mayBeDue) {
      const w = this.current.watches[threadId];
      if (w && scheduledOf(w.state)) scheduled.push(w);
      else this.mayBeDue.delete(threadId);
    }
    return scheduled;
  }

  liveOf(threadId: string): LiveThread {
    let live = this.live.get(threadId);
    if (!live) {
      live = newLive();
      this.live.set(threadId, live);
    }
    return live;
  }

  /**
   * The one write of a watch's state: it marks the watch for the next save and moves its
   * `updatedAt` (never back, even when the wall clock is set back: the leader handover keeps the
   * copy changed last). Unchanged, nothing happens. Its due job follows when a due time changed;
   * `quiet`: the views are not told yet (the caller tells them once, for many writes).
   */
  setState(w: Watch, state: WatchState, quiet = false): void {
    if (JSON.stringify(w.state) === JSON.stringify(state)) return;
    // Due jobs depend only on due times, and on whether an outage's probe is still out: other
    // changes need none.
    const was = w.state;
    const timing = scheduledOf(was) !== null || scheduledOf(state) !== null || mayHoldOthers(w);
    writeState(w, state, this.now());
    if (scheduledOf(state)) this.mayBeDue.add(w.threadId);
    this.saver.mark(w.threadId);
    if (timing) this.followDue(w, was);
    if (!quiet) this.changed();
  }

  /** The watch goes (its goal was cleared, or is no one's to show any more), with the reason said once. */
  forget(threadId: string, reason: string): void {
    delete this.state.watches[threadId];
    this.schedule.giveSlotBack(threadId);
    this.mark(threadId);
    this.emit({ type: 'skipped', threadId, reason });
    this.changed();
  }

  /** The thread's watch (or its history, its failure, its intent) changed: saved next time. */
  mark(threadId: string): void {
    this.saver.mark(threadId);
  }

  emit(decision: Decision): void {
    this.saver.emit(decision);
  }

  changed(): void {
    this.saver.changed();
  }

  persist(): Promise<boolean> {
    return this.saver.persist();
  }

  /** Holds the saves that can wait while a pass looks at many threads (Saver.hold); call the result to let go. */
  holdSaves(): () => void {
    return this.saver.hold();
  }

  /** Queues a look at the thread after the work already queued for it (one waiting look is enough). */
  touch(threadId: string): void {
    this.mark(threadId);
    this.changed();
    void this.work.add(threadId, { kind: 'look' });
  }

  /** Runs `work` in the thread's queue, after everything queued for it; errors are logged, never thrown. */
  run(threadId: string, work: () => Promise<void>): Promise<void> {
    return this.work.add(threadId, { kind: 'task', run: work });
  }

  /** A recovery attempt of the thread is under way, or prepared and waiting for its due time. */
  attempting(threadId: string): boolean {
    return this.underway.has(threadId) || this.work.has(threadId, 'send');
  }

  /**
   * An attempt's job ended (its set sent, called off, or prepared for later): the thread may fall
   * due again. With no set of it queued, a limiter token it took and did not spend is given back
   * (its watch gone, its recovery moved, the leader fenced: nothing went out).
   */
  attemptEnded(threadId: string): void {
    this.underway.delete(threadId);
    if (!this.work.has(threadId, 'send')) this.schedule.giveBack(threadId);
    const w = this.current.watches[threadId];
    if (w) this.followDue(w);
  }

  /**
   * A watch's state changed (from `was`), or its attempt ended: its `due` job follows it, and so do
   * the recoveries held for it as their outage's probe (outage.ts mayHoldOthers); not after a move
   * between scheduled states (held or not), which changes nothing they wait for (isProbing). The
   * slot the limiter keeps for a recovery that will not go is given back.
   */
  followDue(w: Watch, was?: WatchState): void {
    if (!keepsSlot(w.state)) this.schedule.giveSlotBack(w.threadId);
    this.requeue(w);
    if (!mayHoldOthers(w) || (was && scheduledOf(was) && scheduledOf(w.state))) return;
    for (const x of this.scheduledWatches())
      if (x.state.kind === 'waitingProbe' && x.state.probe === w.threadId) this.requeue(x);
  }

  /** Every scheduled recovery's `due` job set again (what they wait for changed: a connection, a pause, a probe). */
  reschedule(): void {
    for (const w of this.scheduledWatches()) this.requeue(w);
  }

  /**
   * The thread's `due` job, set for when its recovery acts (replacing the one set before), if ever;
   * not while connecting (connected, every one is set). It writes no state: held for a probe that is
   * out no more, its due job comes at once, and its turn shows it scheduled again (attempt.ts).
   */
  requeue(w: Watch, at = this.schedule.actsAt(w), notBeforeMono = 0): void {
    if (at === null || this.stopped || !this.session) return;
    const job = { kind: 'due', notBeforeMono: Math.max(notBeforeMono, this.schedule.notBefore(w)) } as const;
    this.work.addAfter(w.threadId, job, Math.max(0, at - this.now()));
  }

  /** One job of a thread's queue; whatever it changed after its last save is saved next time. */
  private async process(threadId: string, job: ThreadJob): Promise<void> {
    try {
      const work = this.workers?.[job.kind] as ((threadId: string, job: ThreadJob) => Promise<void> | void) | undefined;
      await work?.(threadId, job);
    } catch (error) {
      this.liveOf(threadId).needsLook = true;
      this.readFailed(threadId, error);
    } finally {
      this.mark(threadId);
    }
  }

  track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    const forget = (): void => void this.inFlight.delete(promise);
    void promise.then(forget, forget);
    return promise;
  }

  /** Resolves when no work is under way (for tests and orderly shutdown). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  readFailed(what: string, error: unknown): void {
    if (error instanceof ConnectionLostError) return; // the reconnect and its resync take over
    const message = error instanceof RpcError ? error.message : errorText(error);
    this.emit({ type: 'warning', message: `${what}: ${message}` });
  }
}
