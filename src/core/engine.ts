// The recovery engine: watches goal threads on a Codex app-server and re-activates
// goals that a transient failure blocked, safely. Pure TypeScript: the daemon
// connection, the store, the clock and randomness are injected.
import type { Decision } from '../model/decision';
import type { ConnectionState, EngineSnapshot } from '../model/snapshot';
import {
  addHistory,
  canRetryNow,
  describeErrorCode,
  dueAt,
  emptyState,
  formatDuration,
  type GoalSnapshot,
  isDisarmed,
  markRecovered,
  newWatch,
  type PersistedState,
  type TurnFailure,
  type WatchedThread,
  type WatchState,
} from '../model/watch';
import {
  ConnectionLostError,
  type Connector,
  type DaemonListener,
  type DaemonSession,
  RpcError,
  type Thread,
  type ThreadGoal,
} from '../protocol/daemon';
import { scanForMarkers, scanFromLastActivation, type ScanOptions } from '../rollout/markers';
import type { StateStore } from '../store/store';
import { jitteredDelay, type Random } from './backoff';
import { classifyFailure, describeErrorInfo } from './classify';
import type { Clock, TimerHandle } from './clock';
import { RecoveryLimiter } from './limiter';
import { isThreadActive, type LiveThread, newLive, waitsForPerson } from './live';
import type { EngineOptions } from './options';
import { resetFromMessage } from './usageReset';

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
}

/** Why an attempt was called off just before the set: data, logged as `skipped`. */
class Abort extends Error {}
/** The write-ahead save failed: the set is not sent, and the recovery waits `SAVE_RETRY_MS`. */
class SaveFailed extends Abort {}
const SAVE_RETRY_MS = 5_000;

export class Engine {
  private state: PersistedState = emptyState();
  private readonly live = new Map<string, LiveThread>();
  private session: DaemonSession | null = null;
  private connection: ConnectionState = { kind: 'connecting', detail: 'starting' };
  private readonly lanes = new Map<string, Promise<void>>();
  private readonly queued = new Set<string>();
  private readonly inFlight = new Set<Promise<unknown>>();
  /** Goals a notification showed active on threads not yet watched (adopted on evaluation). */
  private readonly seenActive = new Map<string, ThreadGoal>();
  /** Threads whose recovery attempt is under way: not due again until it ends. */
  private readonly attempting = new Set<string>();
  private dueTimer: TimerHandle | null = null;
  private resyncTimer: TimerHandle | null = null;
  private reconnectTimer: TimerHandle | null = null;
  private reconnectAttempt = 0;
  private generation = 0;
  /** Monotonic time until which the global limiter holds recoveries back, or null. */
  private limitedUntil: number | null = null;
  /** Both clocks read together at the last look: a wall-clock jump shows as a difference of their deltas. */
  private clockRef: { wall: number; mono: number } | null = null;
  private stopped = true;
  private saving: Promise<unknown> = Promise.resolve();
  /**
   * Decisions made but not announced yet: each goes out once the save that holds the state it
   * reports has resolved (durable before announced). `viewsStale`: likewise for the views.
   */
  private readonly outbox: Decision[] = [];
  private viewsStale = false;
  /**
   * Threads whose watch may have changed since the last save (`allDirty`: every one, e.g. after
   * a load or a reset). A save re-serializes only those; the store keeps the rest as it wrote them.
   */
  private readonly dirty = new Set<string>();
  private allDirty = true;
  /** The monotonic time the limiter was last asked about (never goes back). */
  private limiterAt = 0;
  /** The soonest due time, on the monotonic clock, when the due timer was set. */
  private dueNotBeforeMono = 0;
  /** Attempts prepared ahead, waiting for their due time to send the set. */
  private readonly prepared = new Map<string, Prepared>();
  /**
   * How long the recent saves took. A write-ahead may wait for the save being written and then
   * its own: a recovery is prepared at least three times the slowest of them early.
   */
  private readonly saveMs: number[] = [];
  /** The pending lazy save (`persistSoon`), if any. */
  private lazySave: TimerHandle | null = null;
  /** A save queued behind the one being written, not started yet: later callers share it. */
  private queuedSave: Promise<boolean> | null = null;

  private options: EngineOptions;
  private limiter: RecoveryLimiter;

  constructor(
    options: EngineOptions,
    private readonly deps: EngineDeps,
  ) {
    this.options = { ...options };
    this.limiter = new RecoveryLimiter({ burst: options.limiterBurst, intervalMs: options.limiterIntervalMs });
  }

  /** Applies new settings at once: delays already scheduled keep their due time. */
  updateOptions(options: EngineOptions): void {
    const limiterChanged =
      options.limiterBurst !== this.options.limiterBurst ||
      options.limiterIntervalMs !== this.options.limiterIntervalMs;
    this.options = { ...options };
    if (limiterChanged)
      this.limiter = new RecoveryLimiter({ burst: options.limiterBurst, intervalMs: options.limiterIntervalMs });
    if (!this.stopped && this.session) {
      if (this.resyncTimer) this.deps.clock.clearTimer(this.resyncTimer);
      this.resyncTimer = this.timer(() => void this.resync(), this.options.resyncMs);
    }
    this.reschedule();
    this.changed();
  }

  // ---- lifecycle -------------------------------------------------------------

  /** Loads the store and starts connecting in the background. */
  async start(): Promise<void> {
    const generation = this.generation;
    const loaded = await this.deps.store.load();
    // Stopped while loading (a window or runner that lost its role at once): stay stopped.
    if (this.generation !== generation) return;
    this.state = loaded.state;
    this.allDirty = true;
    if (loaded.problem) this.emit({ type: 'warning', message: loaded.problem });
    this.stopped = false;
    // A time this engine stored is in the future: the wall clock went back while it was stopped.
    const behind = latestRecorded(this.state) - this.deps.clock.now();
    if (behind > CLOCK_JUMP_TOLERANCE_MS) this.clockWentBack(behind, 'since the state was saved');
    this.clockRef = { wall: this.deps.clock.now(), mono: this.deps.clock.elapsed() };
    this.reschedule();
    this.connectNow();
  }

  /** Stops timers, waits for work under way, saves and closes the connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.generation += 1;
    for (const timer of [this.dueTimer, this.resyncTimer, this.reconnectTimer])
      if (timer) this.deps.clock.clearTimer(timer);
    this.dueTimer = this.resyncTimer = this.reconnectTimer = null;
    for (const p of this.prepared.values()) {
      // Not sent: the intent is withdrawn (saved below), the recovery is due again next start.
      if (p.timer) this.deps.clock.clearTimer(p.timer);
      if (p.w.pending?.failedTurnId === p.failedTurnId) p.w.pending = null;
      if (p.w.state.kind === 'recovering') this.writeState(p.w, p.scheduled);
      this.dirty.add(p.w.threadId);
      this.attempting.delete(p.w.threadId);
    }
    this.prepared.clear();
    await this.idle();
    const session = this.session;
    this.session = null;
    await session?.close();
    await this.persist();
    // A clean stop leaves one snapshot (a journal, if the store keeps one, folded into it).
    await this.deps.store.compact?.().catch((error: unknown) => {
      this.deps.onDecision({
        type: 'warning',
        message: `could not compact the state in ${this.deps.store.location}: ${errorText(error)}`,
      });
    });
  }

  /** Resolves when no work is under way (for tests and orderly shutdown). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  // ---- what views read -----------------------------------------------------

  watches(): readonly WatchedThread[] {
    return Object.values(this.state.watches);
  }

  watch(threadId: string): WatchedThread | undefined {
    return this.state.watches[threadId];
  }

  connectionState(): ConnectionState {
    return this.connection;
  }

  isPaused(): boolean {
    return this.state.pausedAt !== null;
  }

  /** Everything a view shows, as one value (deep-copied: safe to keep and to send). */
  snapshot(): EngineSnapshot {
    return structuredClone({
      at: this.deps.clock.now(),
      connection: this.connection,
      target: this.deps.target ?? '',
      pausedAt: this.state.pausedAt,
      maxAttempts: this.options.maxAttempts,
      nextDueAt: this.nextDueAt(),
      watches: this.watches() as WatchedThread[],
    });
  }

  /** The soonest time the engine will act, or null. */
  nextDueAt(): number | null {
    return this.nextAction(0);
  }

  /**
   * The soonest time a recovery must start to go out on time when it is prepared `leadMs` ahead
   * (0: the time it goes out), or null. A recovery held by the limiter starts when its slot
   * comes, never ahead of it: the limiter counts when recoveries start.
   */
  private nextAction(leadMs: number): number | null {
    const soonest = this.soonestDue();
    if (soonest === null) return null;
    const held = this.limitedUntil === null ? 0 : this.limitedUntil - this.deps.clock.elapsed();
    return held > 0 ? Math.max(soonest - leadMs, this.deps.clock.now() + held) : soonest - leadMs;
  }

  /** The soonest due time of a recovery not under way (wall clock), or null. */
  private soonestDue(): number | null {
    if (this.state.pausedAt !== null) return null;
    let soonest: number | null = null;
    for (const w of this.watches()) {
      const due = dueAt(w.state);
      if (due !== null && !this.attempting.has(w.threadId) && (soonest === null || due < soonest)) soonest = due;
    }
    return soonest;
  }

  // ---- the user's commands -------------------------------------------------

  async pauseAll(): Promise<void> {
    this.state.pausedAt = this.deps.clock.now();
    this.emit({ type: 'skipped', threadId: '*', reason: 'auto-recovery paused by the user' });
    this.reschedule();
    this.changed();
    await this.persist();
  }

  async resumeAll(): Promise<void> {
    this.state.pausedAt = null;
    this.emit({ type: 'rearmed', threadId: '*', reason: 'auto-recovery resumed by the user' });
    this.reschedule();
    this.changed();
    await this.persist();
  }

  async disarm(threadId: string): Promise<void> {
    const now = this.deps.clock.now();
    this.state.disarmed[threadId] = now;
    const w = this.state.watches[threadId];
    if (w) this.setState(w, { kind: 'disarmed', at: now });
    this.emit({ type: 'disarmed', threadId, reason: 'disarmed by the user' });
    this.reschedule();
    this.changed();
    await this.persist();
  }

  async rearm(threadId: string): Promise<void> {
    delete this.state.disarmed[threadId];
    const w = this.state.watches[threadId];
    if (w && isDisarmed(w.state)) {
      // Armed again as at its first arming: from the goal's last activation in the rollout (the
      // next look reads back to it). What happened since still counts: a block the model chose
      // while the thread was disarmed (never read then) is not taken for a failure to recover,
      // and a person's marker since the activation still speaks for them.
      this.dirty.add(threadId);
      w.armedAt = this.deps.clock.now();
      w.armOffset = null;
      w.rolloutOffset = 0;
      w.lastMarker = null;
      w.modelBlockOffset = null;
      this.setState(w, { kind: 'running' });
    }
    this.emit({ type: 'rearmed', threadId, reason: 're-armed by the user' });
    await this.persist();
    this.touch(threadId);
  }

  /** Makes a scheduled (or given-up) recovery due now. */
  async retryNow(threadId: string): Promise<void> {
    const w = this.state.watches[threadId];
    if (!w || !canRetryNow(w)) return;
    if (w.state.kind === 'unloaded') return this.loadAndRetry(w);
    const now = this.deps.clock.now();
    if (w.state.kind === 'backoff' || w.state.kind === 'usageLimited') {
      this.writeState(w, { ...w.state, dueAt: now });
    } else if (w.state.kind === 'gaveUp' && w.lastFailure) {
      this.setState(w, { kind: 'backoff', dueAt: now, attempt: w.failures, failedTurnId: w.lastFailure.turnId });
    }
    if (w.lastFailure) w.lastFailure.dueAt = now;
    this.dirty.add(threadId);
    this.changed();
    this.reschedule();
    await this.persist();
  }

  /**
   * "Retry now" on a thread the daemon has not loaded (after a restart it loads none): the
   * person's click loads it with `thread/resume`, then the recovery runs as usual, due now, on
   * fresh reads and checks. Only while its goal is blocked or usage-limited: resuming a thread
   * whose goal is blocked starts no turn, one whose goal is active does (measured, 0.169.0).
   */
  private async loadAndRetry(w: WatchedThread): Promise<void> {
    const session = this.session;
    if (!session) throw new Error(`not connected to the Codex daemon (${this.connection.detail})`);
    const threadId = w.threadId;
    let refused: string | null = null;
    await this.inLane(threadId, async () => {
      const live = this.liveOf(threadId);
      if (this.state.watches[threadId] !== w || w.state.kind !== 'unloaded' || live.loaded) return; // decided meanwhile
      const goal = await session.getGoal(threadId);
      w.goal = goal ? snapshot(goal) : null;
      if (goal?.status !== 'blocked' && goal?.status !== 'usageLimited') {
        refused = `nothing to retry, the goal is ${goal?.status ?? 'cleared'} now`;
        this.changed();
        return;
      }
      let thread: Thread;
      try {
        thread = await session.resume(threadId);
      } catch (error) {
        if (!(error instanceof RpcError)) throw error;
        refused = `the daemon did not load it: ${error.message}`;
        this.emit({ type: 'warning', threadId, message: `Retry now: ${refused}` });
        return;
      }
      live.loaded = true;
      live.subscribed = true;
      live.status = thread.status;
      this.applyThread(w, thread);
      this.emit({
        type: 'loaded',
        threadId,
        reason: 'Retry now on a thread the daemon had not loaded (thread/resume)',
      });
      if (w.lastFailure && w.lastFailure.dueAt !== null)
        w.lastFailure.dueAt = Math.min(w.lastFailure.dueAt, this.deps.clock.now());
      await this.decide(session, w);
      this.reschedule();
    });
    await this.persist();
    if (refused) throw new Error(`Retry now: ${refused}`);
  }

  /**
   * "Pause goal": `thread/goal/set {status: "paused", origin: "user"}`, so Codex itself records
   * the user's intent in the rollout. Only ever called when a person pressed that button.
   */
  async pauseGoal(threadId: string): Promise<void> {
    const session = this.session;
    if (!session) throw new Error(`not connected to the Codex daemon (${this.connection.detail})`);
    const goal = await session.setGoalStatusAsUser(threadId, 'paused');
    const w = this.state.watches[threadId];
    if (w && goal) w.goal = snapshot(goal);
    this.touch(threadId);
  }

  /** Forgets every watched thread and every intent marker (the user asked, and confirmed). */
  async reset(): Promise<void> {
    this.state = emptyState();
    this.allDirty = true;
    this.reschedule();
    this.changed();
    await this.persist();
    await this.resync();
  }

  /** A full pass over the daemon's loaded threads (also run every `resyncMs`). */
  async resync(): Promise<void> {
    if (!this.session && !this.stopped && this.connection.kind === 'disconnected') {
      // Asked to look now (e.g. the daemon was just started): do not wait for the reconnect backoff.
      if (this.reconnectTimer) this.deps.clock.clearTimer(this.reconnectTimer);
      this.reconnectAttempt = 0;
      this.connectNow();
      await this.idle();
      return;
    }
    await this.track(this.resyncOnce());
  }

  // ---- connection ------------------------------------------------------------

  private connectNow(): void {
    if (this.stopped || this.session) return;
    this.reconnectTimer = null;
    const generation = ++this.generation;
    this.connection = { kind: 'connecting', detail: 'connecting' };
    this.changed();
    const attempt = this.deps.connect(this.listener(generation)).then(
      async (session) => {
        if (generation !== this.generation || this.stopped) return session.close();
        this.session = session;
        this.reconnectAttempt = 0;
        this.connection = { kind: 'connected', detail: session.describe };
        this.emit({ type: 'connection', state: 'connected', detail: session.describe });
        this.changed();
        this.reschedule();
        await this.resyncOnce();
      },
      (error: unknown) => {
        if (generation === this.generation) this.connectionLost(errorText(error), 'error');
      },
    );
    void this.track(attempt);
  }

  private connectionLost(reason: string, kind: 'error' | 'disconnected'): void {
    this.generation += 1; // whatever the old connection still delivers is dropped
    this.session = null;
    // What the old connection told is stale: it is read again after reconnecting.
    this.live.clear();
    if (this.stopped) return;
    const delay = Math.min(this.options.reconnectMaxMs, this.options.reconnectBaseMs * 2 ** this.reconnectAttempt);
    this.reconnectAttempt += 1;
    const retryAt = this.deps.clock.now() + delay;
    this.connection = { kind: 'disconnected', detail: reason, retryAt };
    this.emit({
      type: 'connection',
      state: kind,
      detail: `${reason}; reconnecting in ${Math.round(delay / 100) / 10} s`,
    });
    this.changed();
    if (this.reconnectTimer) this.deps.clock.clearTimer(this.reconnectTimer);
    this.reconnectTimer = this.timer(() => this.connectNow(), delay);
  }

  /** Events of an older connection are dropped: only the current generation counts. */
  private listener(generation: number): DaemonListener {
    const bump = (threadId: string): LiveThread => {
      const live = this.liveOf(threadId);
      live.seq += 1;
      live.loaded = true;
      this.dirty.add(threadId);
      return live;
    };
    const handlers: DaemonListener = {
      goalUpdated: (threadId, goal) => {
        bump(threadId);
        const w = this.state.watches[threadId];
        if (w) w.goal = snapshot(goal);
        else if (goal.status === 'active') this.seenActive.set(threadId, goal); // it may block before the engine looks
        if (w || goal.status === 'active') this.touch(threadId);
      },
      goalCleared: (threadId) => {
        bump(threadId);
        const w = this.state.watches[threadId];
        if (w) w.goal = null;
        this.touch(threadId);
      },
      threadStatus: (threadId, status) => {
        const live = bump(threadId);
        live.status = status;
        if (status.type === 'notLoaded') live.loaded = false;
        this.touch(threadId);
      },
      threadStarted: (thread) => {
        const live = bump(thread.id);
        live.status = thread.status;
      },
      threadClosed: (threadId) => {
        const live = bump(threadId);
        live.loaded = false;
        live.subscribed = false;
        this.touch(threadId);
      },
      turnStarted: (threadId, turn) => {
        const live = bump(threadId);
        live.turn = turn;
        live.turnFromEvent = true;
        live.retrying = null;
        this.touch(threadId);
      },
      turnCompleted: (threadId, turn) => {
        const live = bump(threadId);
        live.turn = turn;
        live.turnFromEvent = true;
        live.retrying = null;
        live.approvals.clear();
        const w = this.state.watches[threadId];
        if (w && turn.status === 'completed') w.failures = 0; // a successful turn resets the count
        this.touch(threadId);
      },
      error: (threadId, _turnId, error, willRetry) => {
        const live = bump(threadId);
        live.retrying = willRetry ? error.message || describeErrorInfo(error.codexErrorInfo).code : null;
        this.touch(threadId);
      },
      serverRequest: (threadId, requestId, method) => {
        if (threadId === null) return;
        const live = bump(threadId);
        live.approvals.add(requestId);
        this.emit({
          type: 'skipped',
          threadId,
          reason: 'waiting for the user',
          detail: `${method} left to the user's client`,
        });
        this.touch(threadId);
      },
      serverRequestResolved: (threadId, requestId) => {
        const live = bump(threadId);
        live.approvals.delete(requestId);
        this.touch(threadId);
      },
      protocolProblem: (message) => this.emit({ type: 'warning', message: `protocol: ${message}` }),
      closed: (reason) => this.connectionLost(reason, 'disconnected'),
    };
    const guarded = {} as Record<keyof DaemonListener, (...args: never[]) => void>;
    for (const key of Object.keys(handlers) as (keyof DaemonListener)[]) {
      const handler = handlers[key] as (...args: unknown[]) => void;
      guarded[key] = (...args: unknown[]) => {
        if (generation === this.generation && !this.stopped) handler(...args);
      };
    }
    return guarded as unknown as DaemonListener;
  }

  // ---- resync ----------------------------------------------------------------

  private async resyncOnce(): Promise<void> {
    const session = this.session;
    if (!session || this.stopped) return;
    if (this.resyncTimer) this.deps.clock.clearTimer(this.resyncTimer);
    this.resyncTimer = this.timer(() => void this.resync(), this.options.resyncMs);
    let ids: string[];
    try {
      ids = await session.listLoaded();
    } catch (error) {
      this.readFailed('thread/loaded/list', error);
      return;
    }
    const loaded = new Set(ids);
    for (const w of this.watches()) {
      if (!loaded.has(w.threadId)) {
        this.liveOf(w.threadId).loaded = false;
        this.markUnloaded(w);
      }
    }
    await Promise.all(ids.map((id) => this.inLane(id, () => this.refresh(session, id))));
    this.reschedule();
    await this.persist();
  }

  /** One RPC for a thread the engine already knows and whose goal did not change. */
  private async refresh(session: DaemonSession, threadId: string): Promise<void> {
    const live = this.liveOf(threadId);
    live.loaded = true;
    const seq = live.seq;
    const goal = await session.getGoal(threadId);
    const w = this.state.watches[threadId];
    if (live.seq !== seq) return this.evaluate(session, threadId); // events won the race: trust them
    if (!w) {
      if (goal) await this.adopt(session, threadId, goal);
      return;
    }
    const before = w.goal;
    w.goal = goal ? snapshot(goal) : null;
    const unchanged = before && w.goal && before.status === w.goal.status && before.updatedAt === w.goal.updatedAt;
    // Unchanged is not enough when the last look failed: an event may have updated the goal
    // and the look it started (reading the turn) never finished.
    if (unchanged && live.subscribed && w.state.kind !== 'unloaded' && w.pending === null && !live.needsLook) return;
    await this.evaluate(session, threadId);
  }

  /**
   * First sight of a thread with a goal: arm it only if the goal is active (and `autoArm` is on).
   * `seen`: the goal as first seen (a notification may show it active); `current`: as it is now.
   */
  private async adopt(
    session: DaemonSession,
    threadId: string,
    seen: ThreadGoal,
    current: ThreadGoal = seen,
  ): Promise<void> {
    const w = newWatch(threadId, this.deps.clock.now());
    w.goal = snapshot(current);
    w.title = current.objective || threadId;
    this.state.watches[threadId] = w;
    this.dirty.add(threadId);
    if (seen.status !== 'active' || !this.options.autoArm) {
      this.writeState(w, { kind: 'notAdopted', status: current.status });
      this.changed();
      return;
    }
    await this.arm(session, w);
  }

  /**
   * The arming is the goal's last activation in the rollout (Codex writes a goal event for every
   * thread/goal/set): the model may block it, or the user pause it, before the engine has read
   * anything. The first look at the rollout finds that offset.
   */
  private async arm(session: DaemonSession, w: WatchedThread): Promise<void> {
    const thread = await this.subscribe(session, w.threadId);
    w.armedAt = this.deps.clock.now();
    w.armOffset = null;
    w.rolloutOffset = 0;
    w.lastMarker = null;
    w.failures = 0;
    w.lastFailure = null;
    w.pending = null;
    this.setState(w, { kind: 'running' });
    this.emit({ type: 'armed', threadId: w.threadId, title: w.title });
    const live = this.liveOf(w.threadId);
    const seq = live.seq;
    // A brand-new thread has no turn to list yet ("not materialized"): its events tell.
    const turn = await session.latestTurn(w.threadId).catch(notMaterialized);
    if (live.seq === seq) {
      if (thread) live.status = thread.status;
      live.turn = turn;
    }
    await this.decide(session, w);
  }

  /** `thread/resume` on a loaded thread, once per connection: turn and error events follow. */
  private async subscribe(session: DaemonSession, threadId: string): Promise<Thread | null> {
    const live = this.liveOf(threadId);
    if (live.subscribed || !live.loaded) return null;
    const w = this.state.watches[threadId];
    const running = () => isThreadActive(live.status) || live.turn?.status === 'inProgress';
    if (w?.goal?.status === 'active' && !running()) {
      // Measured with 0.169.0: resuming an idle thread whose goal is active starts a turn,
      // i.e. restarts work the user interrupted. Subscribe only while a turn runs.
      const seq = live.seq;
      const [thread, turn] = await readBoth(
        session.readThread(threadId),
        session.latestTurn(threadId).catch(notMaterialized),
      );
      if (live.seq !== seq) return null; // something happened meanwhile: decide again on its event
      live.status = thread.status;
      live.turn = turn;
      this.applyThread(w, thread);
      if (!running()) return null;
    }
    let thread: Thread;
    try {
      thread = await session.resume(threadId);
    } catch (error) {
      // e.g. a brand-new thread whose rollout does not exist yet: try again on its next event.
      if (!(error instanceof RpcError)) throw error;
      // A thread whose rollout does not exist yet is refused on every event until it does: say
      // so once. Any other refusal is an error of its own, logged each time.
      const notYet = /no rollout found/i.test(error.message);
      if (!notYet || !live.subscribeFailed)
        this.emit({ type: 'warning', threadId, message: `not subscribed yet: ${error.message}` });
      if (notYet) live.subscribeFailed = true;
      return null;
    }
    live.subscribed = true;
    const watched = this.state.watches[threadId];
    if (watched) this.applyThread(watched, thread);
    return thread;
  }

  // ---- evaluation --------------------------------------------------------------

  /** Schedules an evaluation of the thread after the work already queued for it. */
  private touch(threadId: string): void {
    this.dirty.add(threadId);
    this.changed();
    if (this.queued.has(threadId)) return;
    this.queued.add(threadId);
    void this.inLane(threadId, async () => {
      this.queued.delete(threadId);
      const session = this.session;
      if (session) await this.evaluate(session, threadId);
    });
  }

  private async evaluate(session: DaemonSession, threadId: string): Promise<void> {
    const w = this.state.watches[threadId];
    const live = this.liveOf(threadId);
    live.needsLook = false; // set again if this look fails
    if (!w) {
      // A goal became active on a thread the engine has not seen: adopt it. It was active when
      // the notification was sent, even if it is blocked by the time the engine looks.
      const seen = this.seenActive.get(threadId);
      this.seenActive.delete(threadId);
      const goal = await session.getGoal(threadId);
      if (goal && !this.state.watches[threadId]) await this.adopt(session, threadId, seen ?? goal, goal);
      return;
    }
    if (!live.loaded) return this.markUnloaded(w);
    if (w.goal === null) {
      // The goal was cleared: nothing left to watch.
      delete this.state.watches[threadId];
      this.emit({ type: 'skipped', threadId, reason: 'goal cleared' });
      this.changed();
      return;
    }
    if (w.state.kind === 'notAdopted') {
      if (w.goal.status === 'active' && this.options.autoArm && !this.state.disarmed[threadId])
        await this.arm(session, w);
      else if (w.state.status !== w.goal.status) this.writeState(w, { kind: 'notAdopted', status: w.goal.status });
      return;
    }
    if (!isDisarmed(w.state) && !live.subscribed) await this.subscribe(session, threadId);
    await this.decide(session, w);
  }

  /** Derives the thread's state from what the daemon says; schedules a recovery where one is due. */
  private async decide(session: DaemonSession, w: WatchedThread): Promise<void> {
    const threadId = w.threadId;
    const live = this.liveOf(threadId);
    const now = this.deps.clock.now();
    if (this.state.disarmed[threadId] !== undefined) {
      if (w.state.kind !== 'disarmed') this.setState(w, { kind: 'disarmed', at: this.state.disarmed[threadId]! });
      return;
    }
    const goal = w.goal;
    if (!goal) return;
    const stopped = goal.status === 'blocked' || goal.status === 'usageLimited';
    // Subscribed, the engine was told how the newest turn ended (events come in wire order, and
    // what it knew is forgotten on a reconnect): nothing to read again.
    const known = live.subscribed && live.turnFromEvent && live.turn !== null && live.turn.status !== 'inProgress';
    if ((stopped && !known) || w.rolloutPath === null || w.pending !== null) {
      // Codex marks the goal blocked before the turn completes, and an event may have been
      // missed (not subscribed yet, a reconnect, a restart with an intent pending): read the
      // thread (and its rollout's path) and how its newest turn ended, before the rollout is read.
      const seq = live.seq;
      const [thread, turn] = await readBoth(
        session.readThread(threadId),
        session.latestTurn(threadId).catch(notMaterialized),
      );
      if (live.seq === seq) {
        live.status = thread.status;
        live.turn = turn;
        this.applyThread(w, thread);
      }
    }
    await this.readMarkers(w);
    if (w.state.kind === 'userIntent') return;
    if (w.pending && !this.prepared.has(threadId)) this.resolvePending(w, live); // a prepared set is not sent yet

    switch (goal.status) {
      case 'active':
        return this.setState(w, activeState(live));
      case 'paused':
        return this.setState(w, { kind: 'paused' });
      case 'complete':
        return this.setState(w, { kind: 'complete' });
      case 'budgetLimited':
        return this.setState(w, { kind: 'budgetLimited' });
      case 'usageLimited':
        return this.usageLimited(session, w, live);
      case 'blocked':
        return this.blocked(w, live, now);
    }
  }

  private blocked(w: WatchedThread, live: LiveThread, now: number): void {
    if (othersMove(live)) return this.setState(w, activeState(live));
    if (w.modelBlockOffset !== null) return this.setState(w, { kind: 'modelBlocked' }); // even if its turn then failed
    const turn = live.turn;
    if (!turn || turn.status === 'inProgress') return; // the turn's end is still to come
    if (turn.status === 'completed') return this.setState(w, { kind: 'modelBlocked' });
    if (turn.status === 'interrupted') return this.setState(w, { kind: 'interrupted' });
    if (w.recovered.includes(turn.id)) return; // recovered once already: never again
    const { code, httpStatus } = describeErrorInfo(turn.error?.codexErrorInfo ?? null);
    const cls = classifyFailure(turn.error?.codexErrorInfo ?? null, turn.error?.message ?? '');
    if (cls.kind !== 'transient') {
      if (w.state.kind !== 'needsAttention')
        this.emit({
          type: 'attention',
          threadId: w.threadId,
          reason: `${describeErrorCode(code)} (${turn.error?.message ?? 'turn failed'})`,
        });
      return this.setState(w, { kind: 'needsAttention', code, message: turn.error?.message ?? 'turn failed' });
    }
    if (w.lastFailure?.turnId === turn.id && w.lastFailure.dueAt !== null) {
      // A failure already counted (after a restart, an unload or a called-off attempt).
      if (w.state.kind === 'backoff' || w.state.kind === 'recovering' || w.state.kind === 'gaveUp') return;
      if (w.failures > this.options.maxAttempts) return this.giveUp(w, turn.id);
      return this.setState(w, {
        kind: 'backoff',
        dueAt: w.lastFailure.dueAt,
        attempt: w.failures,
        failedTurnId: turn.id,
      });
    }
    // A new failed turn.
    if (w.lastFailure && w.recovered.includes(w.lastFailure.turnId)) {
      addHistory(w, {
        at: now,
        failedTurnId: w.lastFailure.turnId,
        attempt: w.failures,
        error: w.lastFailure.code,
        outcome: 'failed-again',
        detail: code,
      });
    }
    w.failures += 1;
    const failure: TurnFailure = {
      turnId: turn.id,
      message: turn.error?.message ?? '',
      code,
      httpStatus,
      at: now,
      dueAt: null,
    };
    w.lastFailure = failure;
    if (w.failures > this.options.maxAttempts) return this.giveUp(w, turn.id);
    const delayMs = jitteredDelay(
      { baseMs: this.options.baseDelayMs, capMs: this.options.maxDelayMs },
      w.failures,
      this.deps.random,
    );
    failure.dueAt = now + delayMs;
    this.setState(w, { kind: 'backoff', dueAt: failure.dueAt, attempt: w.failures, failedTurnId: turn.id });
    this.emit({
      type: 'backoff',
      threadId: w.threadId,
      attempt: w.failures,
      failedTurnId: turn.id,
      dueAt: failure.dueAt,
      delayMs,
      error: code,
    });
  }

  private giveUp(w: WatchedThread, failedTurnId: string): void {
    const attempts = this.options.maxAttempts;
    if (w.state.kind === 'gaveUp') return;
    addHistory(w, {
      at: this.deps.clock.now(),
      failedTurnId,
      attempt: w.failures,
      error: w.lastFailure?.code ?? '',
      outcome: 'gave-up',
    });
    this.setState(w, { kind: 'gaveUp', attempts });
    this.emit({ type: 'gave-up', threadId: w.threadId, attempts, failedTurnId });
  }

  private async usageLimited(session: DaemonSession, w: WatchedThread, live: LiveThread): Promise<void> {
    if (!this.options.recoverUsageLimited) {
      return this.setState(w, {
        kind: 'needsAttention',
        code: 'usageLimitExceeded',
        message: 'usage limit reached (automatic resume is off)',
      });
    }
    if (othersMove(live)) return this.setState(w, activeState(live));
    const key = live.turn?.id ?? `usage@${w.goal?.updatedAt ?? 0}`;
    if (w.recovered.includes(key)) return;
    if (w.lastFailure?.turnId === key && w.lastFailure.dueAt !== null) {
      if (w.state.kind === 'usageLimited' || w.state.kind === 'recovering') return;
      return this.setState(w, { kind: 'usageLimited', dueAt: w.lastFailure.dueAt, resetsAt: null });
    }
    const now = this.deps.clock.now();
    let resetsAt: number | null = null;
    try {
      resetsAt = await session.rateLimitResetAt();
    } catch (error) {
      if (error instanceof ConnectionLostError) throw error;
      this.emit({
        type: 'warning',
        threadId: w.threadId,
        message: `could not read the rate limits (${errorText(error)}); using the reset time in the error message, if any`,
      });
    }
    if (resetsAt === null && live.turn?.error) resetsAt = resetFromMessage(live.turn.error.message, now);
    const due =
      resetsAt !== null && resetsAt > now ? resetsAt + this.options.usageMarginMs : now + this.options.maxDelayMs;
    w.lastFailure = {
      turnId: key,
      message: 'usage limit reached',
      code: 'usageLimitExceeded',
      httpStatus: 429,
      at: now,
      dueAt: due,
    };
    this.setState(w, { kind: 'usageLimited', dueAt: due, resetsAt });
    this.emit({
      type: 'backoff',
      threadId: w.threadId,
      attempt: 1,
      failedTurnId: key,
      dueAt: due,
      delayMs: due - now,
      error: 'usageLimitExceeded',
    });
  }

  /** After a crash, a reconnect or an error reply: did the set take effect? The daemon's state says. */
  private resolvePending(w: WatchedThread, live: LiveThread): boolean {
    const pending = w.pending;
    if (!pending) return false;
    // Undecided until the newest turn is known (a read may have been overtaken by an event).
    if (live.turn === null && w.goal?.status !== 'active') return false;
    const goal = w.goal;
    const newerTurn = live.turn !== null && live.turn.id !== pending.failedTurnId;
    if (goal?.status === 'active' || newerTurn) {
      this.confirmRecovered(w, pending.failedTurnId, pending.attempt, 'confirmed from the daemon state');
      return true;
    }
    w.pending = null;
    if (goal && (goal.status === 'blocked' || goal.status === 'usageLimited')) {
      addHistory(w, {
        at: this.deps.clock.now(),
        failedTurnId: pending.failedTurnId,
        attempt: pending.attempt,
        error: w.lastFailure?.code ?? '',
        outcome: 'skipped',
        detail: 'no effect on the daemon: the set was lost, or never sent before the engine stopped; due again',
      });
      // Due again at once, but never before its due time: an intent prepared ahead of it (and
      // cut short by a crash before the set went out) is not sent early.
      if (w.lastFailure?.turnId === pending.failedTurnId)
        w.lastFailure.dueAt = Math.max(this.deps.clock.now(), w.lastFailure.dueAt ?? 0);
      // Not in backoff any more: the next decision puts it back, due then.
      this.writeState(w, { kind: 'running' });
    }
    return false;
  }

  private confirmRecovered(w: WatchedThread, failedTurnId: string, attempt: number, how: string): void {
    w.pending = null;
    if (w.recovered.includes(failedTurnId)) return;
    markRecovered(w, failedTurnId);
    addHistory(w, {
      at: this.deps.clock.now(),
      failedTurnId,
      attempt,
      error: w.lastFailure?.code ?? '',
      outcome: 'recovered',
      detail: how,
    });
    this.emit({ type: 'recovered', threadId: w.threadId, attempt, failedTurnId, how });
    this.changed();
  }

  private async readMarkers(w: WatchedThread): Promise<void> {
    if (!w.rolloutPath) return;
    const rolloutPath = w.rolloutPath;
    const onRead = this.deps.onRolloutRead;
    const opts: ScanOptions = onRead ? { onRead: (position, length) => onRead(rolloutPath, position, length) } : {};
    let result;
    // Just armed: the first look reads back from the end to the goal's last activation only, then
    // forward from it, instead of reading the whole rollout forward from 0.
    let activation: number | null = null;
    try {
      if (w.armOffset === null) {
        result = await scanFromLastActivation(rolloutPath, w.rolloutOffset, opts);
        activation = result.activation;
      } else {
        result = await scanForMarkers(rolloutPath, w.rolloutOffset, opts);
      }
    } catch (error) {
      this.emit({ type: 'warning', threadId: w.threadId, message: `could not read the rollout: ${errorText(error)}` });
      return;
    }
    w.rolloutOffset = result.nextOffset;
    let markers = result.markers;
    if (result.truncated) {
      // The rollout was rewritten: offsets from before mean nothing now. Only its last marker
      // can still speak for the user.
      this.emit({
        type: 'warning',
        threadId: w.threadId,
        message: `the rollout ${w.rolloutPath} was truncated or rewritten; re-read from the start`,
      });
      w.armOffset = 0;
      markers = result.last ? [result.last] : [];
    }
    if (w.armOffset === null) {
      // Just armed: the arming is the goal's last activation (one appended since the backward
      // lookup is in the goal lines; the one it found is their first unless more than
      // `maxMarkers` goal lines followed it). With no activation line at all (nothing in the file
      // shows where the goal was set active), the arming falls back to offset 0, as before this
      // lookup existed: every marker and model block in the file counts, and the file was read
      // whole, twice (backwards, then forwards), still in bounded memory.
      const activations = result.goalLines.filter((l) => l.by === 'event' && l.status === 'active');
      w.armOffset = activations.at(-1)?.offset ?? activation ?? 0;
    }
    for (const line of result.goalLines) {
      if (line.offset < w.armOffset) continue;
      if (line.by === 'model' && line.status === 'blocked') w.modelBlockOffset = line.offset;
      else if (
        line.by === 'event' &&
        line.status === 'active' &&
        (w.modelBlockOffset === null || line.offset > w.modelBlockOffset)
      )
        w.modelBlockOffset = null;
    }
    for (const marker of markers) {
      w.lastMarker = marker;
      if (marker.offset < w.armOffset) continue; // older than the arming
      const now = this.deps.clock.now();
      if (marker.status === 'active') {
        if (w.state.kind === 'userIntent') {
          w.armedAt = now;
          w.armOffset = marker.offset;
          this.setState(w, { kind: 'running' });
          this.emit({ type: 'rearmed', threadId: w.threadId, reason: 'the user set the goal active' });
        }
      } else if (!(w.state.kind === 'userIntent' && w.state.requested === marker.status)) {
        w.pending = null;
        this.setState(w, { kind: 'userIntent', requested: marker.status, at: now });
        this.emit({ type: 'disarmed', threadId: w.threadId, reason: `the user set the goal ${marker.status}` });
      }
    }
  }

  private markUnloaded(w: WatchedThread): void {
    const keep =
      isDisarmed(w.state) ||
      ['complete', 'budgetLimited', 'modelBlocked', 'notAdopted', 'gaveUp', 'needsAttention', 'unloaded'].includes(
        w.state.kind,
      );
    if (!keep) this.setState(w, { kind: 'unloaded' });
  }

  // ---- recovery ----------------------------------------------------------------

  /** How early a recovery is prepared: `prepareMs`, or more when saves are slow (a large state, a busy disk). */
  private prepareLead(): number {
    if (this.options.prepareMs <= 0) return 0;
    return Math.max(this.options.prepareMs, Math.min(MAX_PREPARE_MS, 3 * Math.max(0, ...this.saveMs)));
  }

  /**
   * Every engine timer goes through here, so each firing first checks the wall clock against
   * the monotonic one. A jump forward (or a suspend) is taken as time that passed: what fell due
   * is due, and the limiter, which counts monotonic time, spreads it. A jump back would
   * otherwise postpone every scheduled recovery by the size of the jump: it is undone instead.
   */
  private timer(callback: () => void, delayMs: number): TimerHandle {
    return this.deps.clock.setTimer(
      () => {
        this.checkClock();
        callback();
      },
      Math.min(delayMs, MAX_TIMER_MS),
    ); // longer: fires early, and the due timer re-arms for what is left
  }

  private checkClock(): void {
    const wall = this.deps.clock.now();
    const mono = this.deps.clock.elapsed();
    const ref = this.clockRef;
    this.clockRef = { wall, mono };
    if (!ref || this.stopped) return;
    const skew = wall - ref.wall - (mono - ref.mono);
    if (skew < -CLOCK_JUMP_TOLERANCE_MS) this.clockWentBack(-skew, 'while running');
  }

  /**
   * The wall clock went back by `ms`: move every delay the engine chose (backoffs, and a usage
   * limit whose reset time is unknown) back with it, so each keeps the real time it had left.
   * A reset time the provider gave is a point in time, not a delay: it stays.
   */
  private clockWentBack(ms: number, when: string): void {
    let moved = 0;
    for (const w of this.watches()) {
      const s = w.state;
      const absolute = s.kind === 'usageLimited' && s.resetsAt !== null;
      if (s.kind === 'backoff' || (s.kind === 'usageLimited' && !absolute)) {
        this.writeState(w, { ...s, dueAt: s.dueAt - ms });
        moved += 1;
      }
      const f = w.lastFailure;
      const relative =
        s.kind === 'backoff' || (s.kind === 'usageLimited' ? !absolute : f?.code !== 'usageLimitExceeded');
      if (f && f.dueAt !== null && relative && !w.recovered.includes(f.turnId)) f.dueAt -= ms;
    }
    this.emit({
      type: 'warning',
      message: `the wall clock went back by ${formatDuration(ms)} ${when}; ${moved} scheduled ${moved === 1 ? 'recovery keeps' : 'recoveries keep'} the time it had left`,
    });
    this.reschedule();
    this.changed();
    void this.persist();
  }

  private reschedule(): void {
    if (this.dueTimer) this.deps.clock.clearTimer(this.dueTimer);
    this.dueTimer = null;
    // Without a session nothing can be sent: a due timer would only fire and re-arm itself at
    // once (a busy loop while the daemon is away). Connecting reschedules.
    if (this.stopped || !this.session) return;
    const now = this.deps.clock.now();
    const next = this.nextAction(this.prepareLead());
    if (next === null) return;
    // The soonest due time on the monotonic clock: a prepared set never goes out before it,
    // even if the wall clock jumps forward meanwhile (that is not time that passed for a timer).
    this.dueNotBeforeMono = this.deps.clock.elapsed() + Math.max(0, (this.soonestDue() ?? now) - now);
    this.dueTimer = this.timer(() => this.fireDue(), Math.max(0, next - now));
  }

  private fireDue(): void {
    this.dueTimer = null;
    const notBeforeMono = this.dueNotBeforeMono;
    const session = this.session;
    if (this.stopped || this.state.pausedAt !== null || !session) return;
    const now = this.deps.clock.now();
    const due = this.watches()
      .filter((w) => {
        const d = dueAt(w.state);
        return d !== null && d <= now + this.prepareLead() && !this.attempting.has(w.threadId);
      })
      .sort((a, b) => dueAt(a.state)! - dueAt(b.state)!);
    for (const w of due) {
      // The limiter counts real elapsed time: a wall-clock jump neither refills nor empties it.
      // It counts sets when they go out: a recovery prepared ahead takes its slot at its due time.
      const mono = this.deps.clock.elapsed();
      const sendsIn = Math.max(0, dueAt(w.state)! - now, notBeforeMono - mono);
      this.limiterAt = Math.max(this.limiterAt, mono + sendsIn);
      const wait = this.limiter.take(this.limiterAt);
      if (wait > 0) {
        this.limitedUntil = this.limiterAt + wait;
        this.emit({
          type: 'skipped',
          threadId: w.threadId,
          reason: 'global rate limit',
          detail: `next recovery slot in ${Math.ceil(wait / 1000)} s`,
        });
        break;
      }
      this.limitedUntil = null;
      this.attempting.add(w.threadId);
      void this.inLane(w.threadId, async () => {
        let waiting = false;
        try {
          waiting = await this.attempt(session, w.threadId, notBeforeMono);
        } finally {
          if (!waiting) this.attemptDone(w.threadId);
        }
      });
    }
    this.reschedule();
  }

  private attemptDone(threadId: string): void {
    this.attempting.delete(threadId);
    this.reschedule();
  }

  /**
   * Re-reads everything, checks nothing changed, persists the intent, then sends the set: at
   * once when it is due, else from a timer at the due time (true: the send is waiting; the lane
   * is free meanwhile, and any event for the thread calls the send off).
   */
  private async attempt(session: DaemonSession, threadId: string, notBeforeMono = 0): Promise<boolean> {
    const w = this.state.watches[threadId];
    if (!w) return false;
    const scheduled = w.state;
    if (
      (scheduled.kind !== 'backoff' && scheduled.kind !== 'usageLimited') ||
      scheduled.dueAt > this.deps.clock.now() + this.prepareLead()
    )
      return false;
    const failedTurnId = scheduled.kind === 'backoff' ? scheduled.failedTurnId : (w.lastFailure?.turnId ?? '');
    const expectedStatus = scheduled.kind === 'backoff' ? 'blocked' : 'usageLimited';
    const attempt = scheduled.kind === 'backoff' ? scheduled.attempt : 1;
    const live = this.liveOf(threadId);
    const p: Prepared = {
      session,
      w,
      live,
      seq: live.seq,
      scheduled,
      failedTurnId,
      expectedStatus,
      attempt,
      timer: null,
    };
    try {
      const seq = p.seq;
      const goal = await session.getGoal(threadId);
      this.unchanged(live, seq, 'the goal changed while it was read');
      w.goal = goal ? snapshot(goal) : null;
      const thread = await session.readThread(threadId);
      this.unchanged(live, seq, 'the thread changed while it was read');
      live.status = thread.status;
      this.applyThread(w, thread);
      const turn = await session.latestTurn(threadId);
      this.unchanged(live, seq, 'a turn event arrived while the turns were read');
      live.turn = turn;
      await this.readMarkers(w);
      this.check(w, live, expectedStatus, failedTurnId);
      // Write-ahead: the intent is on disk before the set can take effect.
      w.pending = { failedTurnId, attempt, sentAt: this.deps.clock.now() };
      this.setState(w, { kind: 'recovering', attempt, failedTurnId, sentAt: w.pending.sentAt });
      if (!(await this.persist()))
        throw new SaveFailed(
          `the intent could not be saved to ${this.deps.store.location}; the recovery waits ${SAVE_RETRY_MS / 1000} s and tries again`,
        );
      this.unchanged(live, seq, 'an event arrived while the intent was saved');
      this.check(w, live, expectedStatus, failedTurnId);
    } catch (error) {
      return this.calledOff(p, error);
    }
    const due = p.scheduled.kind === 'backoff' || p.scheduled.kind === 'usageLimited' ? p.scheduled.dueAt : 0;
    const early = Math.max(due - this.deps.clock.now(), notBeforeMono - this.deps.clock.elapsed());
    if (early <= 0) {
      await this.send(p);
      return false;
    }
    // Prepared ahead: the set goes out at the due time, if nothing happened meanwhile.
    this.prepared.set(threadId, p);
    p.timer = this.deps.clock.setTimer(() => {
      p.timer = null;
      void this.inLane(threadId, async () => {
        try {
          await this.send(p);
        } finally {
          this.prepared.delete(threadId);
          this.attemptDone(threadId);
        }
      });
    }, early);
    return true;
  }

  /** The attempt stops before the set: the intent is withdrawn and the thread decided again. */
  private async calledOff(p: Prepared, error: unknown): Promise<false> {
    const { w, failedTurnId } = p;
    if (w.state.kind === 'recovering' && w.pending?.failedTurnId === failedTurnId) w.pending = null;
    this.limiter.giveBack();
    if (w.state.kind === 'recovering') this.writeState(w, p.scheduled);
    if (error instanceof SaveFailed && (w.state.kind === 'backoff' || w.state.kind === 'usageLimited')) {
      // Never sent without its intent on disk; and not at once again, against a failing disk.
      const until = Math.max(w.state.dueAt, this.deps.clock.now() + SAVE_RETRY_MS);
      this.writeState(w, { ...w.state, dueAt: until });
      if (w.lastFailure?.turnId === failedTurnId && w.lastFailure.dueAt !== null) w.lastFailure.dueAt = until;
    }
    if (!(error instanceof Abort)) throw error;
    this.emit({ type: 'skipped', threadId: w.threadId, reason: error.message });
    if (this.session === p.session && !this.stopped) await this.evaluateAfterAbort(p.session, w);
    else await this.persist();
    return false;
  }

  /** Sends the set of a prepared attempt, after a last check. */
  private async send(p: Prepared): Promise<void> {
    const { session, w, live, failedTurnId, attempt } = p;
    const threadId = w.threadId;
    try {
      if (this.session !== session || this.liveOf(threadId) !== live)
        throw new Abort('the connection changed while the recovery waited for its due time');
      this.unchanged(live, p.seq, 'an event arrived while the recovery waited for its due time');
      this.check(w, live, p.expectedStatus, failedTurnId);
    } catch (error) {
      await this.calledOff(p, error);
      return;
    }
    // What it announces is on disk already (the write-ahead: `recovering`, the intent): the set
    // goes out at once, and the line follows with the next save (waiting for one here would put
    // every save under way between the due time and the set).
    this.emit({ type: 'recovering', threadId, attempt, failedTurnId });
    try {
      const result = await session.setGoalActive(threadId);
      if (result) w.goal = snapshot(result);
      if (result?.status === 'active' || (live.turn && live.turn.id !== failedTurnId)) {
        this.confirmRecovered(w, failedTurnId, attempt, 'thread/goal/set accepted');
      }
    } catch (error) {
      if (error instanceof ConnectionLostError) {
        // Lost reply: the intent stays on disk; the state after reconnecting decides.
        this.emit({
          type: 'warning',
          threadId,
          message: `${error.message}; the outcome is read back after reconnecting`,
        });
        await this.persist();
        throw error;
      }
      this.emit({
        type: 'warning',
        threadId,
        message: `${errorText(error)}; reading the daemon's state to see whether it took effect`,
      });
      await this.afterSetError(session, w, failedTurnId, attempt, error);
    }
    await this.decide(session, w);
    this.reschedule();
    this.persistSoon();
  }

  private unchanged(live: LiveThread, seq: number, reason: string): void {
    if (live.seq !== seq) throw new Abort(reason);
  }

  /** The conditions under which an automatic set is allowed, checked on fresh reads. */
  private check(
    w: WatchedThread,
    live: LiveThread,
    expectedStatus: 'blocked' | 'usageLimited',
    failedTurnId: string,
  ): void {
    if (this.stopped) throw new Abort('stopping');
    if (this.state.pausedAt !== null) throw new Abort('auto-recovery is paused');
    if (this.state.disarmed[w.threadId] !== undefined) throw new Abort('disarmed by the user');
    if (w.state.kind === 'userIntent') throw new Abort(`the user set the goal ${w.state.requested}`);
    if (w.modelBlockOffset !== null && expectedStatus === 'blocked')
      throw new Abort('the model blocked the goal itself');
    if (live.status?.type === 'notLoaded') {
      // Measured (0.169.0): a set on a thread the daemon has not loaded (e.g. after it was
      // killed and started again) makes the goal active with no turn and no rollout line.
      live.loaded = false;
      throw new Abort('the thread is not loaded in the daemon');
    }
    if (!w.goal) throw new Abort('the goal was cleared');
    if (w.goal.status !== expectedStatus) throw new Abort(`the goal is ${w.goal.status} now`);
    if (isThreadActive(live.status))
      throw new Abort(waitsForPerson(live) ? 'waiting for approval' : 'a turn is running');
    if (live.approvals.size > 0) throw new Abort('waiting for approval');
    if (live.retrying) throw new Abort('Codex is retrying');
    if (expectedStatus === 'blocked') {
      if (!live.turn || live.turn.id !== failedTurnId) throw new Abort('a newer turn exists');
      if (live.turn.status !== 'failed') throw new Abort(`the latest turn is ${live.turn.status}`);
    }
    if (w.recovered.includes(failedTurnId)) throw new Abort('this failed turn was recovered already');
  }

  private async evaluateAfterAbort(session: DaemonSession, w: WatchedThread): Promise<void> {
    if (!this.liveOf(w.threadId).loaded)
      this.markUnloaded(w); // until some client loads it again
    else await this.decide(session, w);
    this.reschedule();
    this.persistSoon();
  }

  /** An error reply: if events or state show the goal went active, it counts as success. */
  private async afterSetError(
    session: DaemonSession,
    w: WatchedThread,
    failedTurnId: string,
    attempt: number,
    error: unknown,
  ): Promise<void> {
    const live = this.liveOf(w.threadId);
    const seq = live.seq;
    const [goal, turn] = await readBoth(session.getGoal(w.threadId), session.latestTurn(w.threadId));
    if (live.seq === seq) {
      w.goal = goal ? snapshot(goal) : null;
      live.turn = turn;
    }
    if (w.goal?.status === 'active' || (live.turn && live.turn.id !== failedTurnId)) {
      this.confirmRecovered(w, failedTurnId, attempt, `took effect despite the error reply (${errorText(error)})`);
      return;
    }
    w.pending = null;
    addHistory(w, {
      at: this.deps.clock.now(),
      failedTurnId,
      attempt,
      error: w.lastFailure?.code ?? '',
      outcome: 'rejected',
      detail: errorText(error),
    });
    // A rejected set counts as a failed attempt: back off further, give up after the limit.
    w.failures += 1;
    if (w.failures > this.options.maxAttempts) return this.giveUp(w, failedTurnId);
    const delayMs = jitteredDelay(
      { baseMs: this.options.baseDelayMs, capMs: this.options.maxDelayMs },
      w.failures,
      this.deps.random,
    );
    const due = this.deps.clock.now() + delayMs;
    if (w.lastFailure?.turnId === failedTurnId) w.lastFailure.dueAt = due;
    this.setState(w, { kind: 'backoff', dueAt: due, attempt: w.failures, failedTurnId });
    this.emit({
      type: 'backoff',
      threadId: w.threadId,
      attempt: w.failures,
      failedTurnId,
      dueAt: due,
      delayMs,
      error: 'set rejected',
    });
  }

  // ---- helpers -------------------------------------------------------------------

  private liveOf(threadId: string): LiveThread {
    let live = this.live.get(threadId);
    if (!live) {
      live = newLive();
      this.live.set(threadId, live);
    }
    return live;
  }

  private applyThread(w: WatchedThread, thread: Thread): void {
    if (thread.path && thread.path !== w.rolloutPath) {
      w.rolloutPath = thread.path;
      if (w.armOffset === null) w.rolloutOffset = 0;
    }
    const title = thread.name || thread.preview || w.goal?.objective;
    if (title) w.title = title.length > 120 ? `${title.slice(0, 117)}…` : title;
  }

  private setState(w: WatchedThread, state: WatchState): void {
    if (sameState(w.state, state)) return;
    // The timer depends only on due times: other changes need no look at every watch.
    const timing = dueAt(w.state) !== dueAt(state);
    this.writeState(w, state);
    if (timing) this.reschedule();
    this.changed();
  }

  /**
   * The one write of a watch's state: it marks the watch for the next save and moves its
   * `updatedAt` (never back, even when the wall clock is set back: the leader handover keeps the
   * copy changed last). `setState` adds the timer and the views; the few writes that skip those
   * (an attempt called off, a due time moved, adoption) call this directly.
   */
  private writeState(w: WatchedThread, state: WatchState): void {
    w.state = state;
    w.updatedAt = Math.max(w.updatedAt, this.deps.clock.now());
    this.dirty.add(w.threadId);
  }

  /** Runs `work` after everything queued for the same thread; errors are logged, never thrown. */
  private inLane(threadId: string, work: () => Promise<void>): Promise<void> {
    const previous = this.lanes.get(threadId) ?? Promise.resolve();
    const next = previous
      .then(async () => {
        try {
          await work();
        } finally {
          this.dirty.add(threadId); // whatever it changed after its last save is saved next time
        }
      })
      .catch((error: unknown) => {
        this.liveOf(threadId).needsLook = true;
        this.readFailed(threadId, error);
      });
    this.lanes.set(threadId, next);
    void next.then(() => {
      if (this.lanes.get(threadId) === next) this.lanes.delete(threadId);
    });
    return this.track(next);
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    void promise.then(
      () => this.inFlight.delete(promise),
      () => this.inFlight.delete(promise),
    );
    return promise;
  }

  private readFailed(what: string, error: unknown): void {
    if (error instanceof ConnectionLostError) return; // the reconnect and its resync take over
    const message = error instanceof RpcError ? error.message : errorText(error);
    this.emit({ type: 'warning', message: `${what}: ${message}` });
  }

  /**
   * A save that can wait a little (what follows a set: the write-ahead intent is on disk
   * already, and after a crash the daemon's state decides): one save for every such change
   * within `LAZY_SAVE_MS`, so a busy disk is not asked for one fsync per recovery twice.
   */
  private persistSoon(): void {
    if (this.lazySave || this.stopped) return;
    this.lazySave = this.deps.clock.setTimer(() => {
      this.lazySave = null;
      void this.persist();
    }, LAZY_SAVE_MS);
  }

  /**
   * Saves the state, durably, then announces what was decided before the save began (decision
   * lines, the views): nothing is announced that a crash could take back. Saves are serialized.
   * Callers that come while a save is waiting to start share it: it takes the state as it is
   * when it starts, so it holds every change made before any of them called. Resolves to
   * whether the save succeeded (a failure is announced as a warning, with what it held).
   */
  private persist(): Promise<boolean> {
    if (this.lazySave) {
      // This save covers what the lazy one would have.
      this.deps.clock.clearTimer(this.lazySave);
      this.lazySave = null;
    }
    if (this.queuedSave) return this.queuedSave;
    const run = this.saving.then(async () => {
      this.queuedSave = null;
      const started = this.deps.clock.now();
      const announce = this.outbox.splice(0);
      const views = this.viewsStale || announce.length > 0;
      this.viewsStale = false;
      // What may differ from the last save: the marked threads (every state change, event and
      // decision marks its thread; a lane marks its thread again when it ends). Not every thread
      // with work under way: while thousands are armed at once, that re-serialized them all at
      // every save.
      const changed = this.allDirty ? undefined : new Set(this.dirty);
      this.dirty.clear();
      this.allDirty = false;
      let failure: Decision | null = null;
      try {
        await this.deps.store.save(this.state, changed);
        this.saveMs.push(Math.max(0, this.deps.clock.now() - started));
        if (this.saveMs.length > 16) this.saveMs.shift();
      } catch (error) {
        // Everything may differ from what is on disk now: the next save writes it all.
        this.allDirty = true;
        failure = {
          type: 'warning',
          message: `could not save state to ${this.deps.store.location}: ${errorText(error)}`,
        };
      }
      // Announced even when the save failed (with the warning saying so): never silently lost.
      for (const d of announce) this.deliver(d);
      if (failure) this.deliver(failure);
      if (views) this.deps.onChange?.();
      return failure === null;
    });
    this.queuedSave = run;
    this.saving = run.catch(() => undefined);
    return run;
  }

  /** Announces soon: after the save that holds what was decided so far. */
  private commitSoon(): void {
    void this.track(this.persist());
  }

  private deliver(decision: Decision): void {
    try {
      this.deps.onDecision(decision);
    } catch {
      // A view's failure must not stop the engine or lose the next announcements.
    }
  }

  /** Every decision goes out through the outbox: after the save that holds it. */
  private emit(decision: Decision): void {
    // The thread it speaks of is saved with it, whatever else marked it or not.
    if ('threadId' in decision && decision.threadId !== undefined && decision.threadId !== '*')
      this.dirty.add(decision.threadId);
    this.outbox.push(decision);
    this.commitSoon();
  }

  /** Something a view shows changed: the views hear of it after the save that holds it. */
  private changed(): void {
    this.viewsStale = true;
    this.commitSoon();
  }
}

/** An attempt between its write-ahead save and its set. */
interface Prepared {
  session: DaemonSession;
  w: WatchedThread;
  live: LiveThread;
  /** The thread's event count when its reads began: any event since calls the set off. */
  seq: number;
  scheduled: WatchState;
  failedTurnId: string;
  expectedStatus: 'blocked' | 'usageLimited';
  attempt: number;
  timer: TimerHandle | null;
}

/** How long a save that can wait (`persistSoon`) waits for others to share it. */
const LAZY_SAVE_MS = 1_000;

/**
 * The longest delay a timer is given. Node keeps none over 2^31-1 ms (about 24.8 days): it fires
 * such a timer after 1 ms, so a recovery due later (a usage reset weeks out, a large backoff cap)
 * re-armed its due timer every millisecond. Clamped, it fires early, finds nothing due and is set
 * again for what is left.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** However slow the store, a recovery is not prepared more than this early. */
const MAX_PREPARE_MS = 2_000;

/**
 * Two reads in parallel. When either fails, one error that names every failure, so the log line
 * for a failed look names each call that failed. Only a lost connection alone stays a
 * `ConnectionLostError` (its own line says it, and the reconnect reads everything again).
 */
async function readBoth<A, B>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [ra, rb] = await Promise.allSettled([a, b]);
  if (ra.status === 'fulfilled' && rb.status === 'fulfilled') return [ra.value, rb.value];
  const errors = [ra, rb].flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  if (errors.length === 1 || errors.every((e) => e instanceof ConnectionLostError)) throw errors[0];
  throw new Error(errors.map(errorText).join('; '));
}

/** Wall-clock vs monotonic drift below this is NTP slewing or timer slack, not a jump. */
const CLOCK_JUMP_TOLERANCE_MS = 2_000;

/** The newest wall-clock time this engine wrote into the state. */
function latestRecorded(state: PersistedState): number {
  let latest = state.pausedAt ?? 0;
  for (const at of Object.values(state.disarmed)) latest = Math.max(latest, at);
  for (const w of Object.values(state.watches)) {
    latest = Math.max(
      latest,
      w.armedAt,
      w.updatedAt,
      w.lastFailure?.at ?? 0,
      w.pending?.sentAt ?? 0,
      w.history.at(-1)?.at ?? 0,
    );
  }
  return latest;
}

/**
 * A brand-new thread has no turn to list yet (-32600 "… is not materialized yet …"): that is no
 * turn, not an error. Any other error is one: taking it for "no turn" would leave a failed turn
 * unseen, and unlogged.
 */
function notMaterialized(error: unknown): null {
  if (error instanceof RpcError && /not materialized/i.test(error.message)) return null;
  throw error;
}

/**
 * The thread's next move is someone else's, so nothing is due for a blocked or usage-limited goal:
 * a running turn; a person's approval (even with the thread no longer `active`: a re-attempt would
 * be called off by the pre-send check and fall due again at once); Codex's own retry (its turn has
 * not ended, even when the retry ran into a usage limit). `activeState` says which.
 */
function othersMove(live: LiveThread): boolean {
  return isThreadActive(live.status) || waitsForPerson(live) || live.retrying !== null;
}

function activeState(live: LiveThread): WatchState {
  if (waitsForPerson(live)) return { kind: 'waitingApproval' };
  if (live.retrying) return { kind: 'codexRetrying', detail: live.retrying };
  if (isThreadActive(live.status) || live.turn?.status === 'inProgress') return { kind: 'running' };
  if (live.turn?.status === 'interrupted') return { kind: 'interrupted' };
  return live.status === null ? { kind: 'running' } : { kind: 'idle' };
}

function snapshot(goal: ThreadGoal): GoalSnapshot {
  return {
    status: goal.status,
    objective: goal.objective,
    tokensUsed: goal.tokensUsed,
    tokenBudget: goal.tokenBudget,
    updatedAt: goal.updatedAt,
  };
}

function sameState(a: WatchState, b: WatchState): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
