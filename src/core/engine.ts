// The recovery engine: watches goal threads on a Codex app-server and re-activates goals that a
// transient failure blocked, safely. Pure TypeScript: the daemon connection, the store, the
// clock and randomness are injected. This file is the lifecycle and the wiring; each concern
// lives in a file of its own (docs/architecture.md, "The engine's files", says which).
import type { ConnectionState, EngineSnapshot } from '../model/snapshot';
import type { Watch, WatchedThread } from '../model/watch';
import { Attempts } from './attempt';
import { ClockGuard } from './clockGuard';
import { Connection } from './connection';
import { type EngineDeps, EngineCore } from './engineCore';
import { HomeScan } from './homeScan';
import { Reconciler } from './reconciler';
import type { EngineOptions } from './options';
import { Schedule } from './schedule';
import { UserActions } from './userActions';

export type { EngineDeps } from './engineCore';

export class Engine {
  private readonly core: EngineCore;
  private readonly attempts: Attempts;
  private readonly connection: Connection;
  /** What a person asks of the engine, one method a command (commandTable.ts names them). */
  readonly commands: UserActions;

  constructor(options: EngineOptions, deps: EngineDeps) {
    let schedule!: Schedule;
    const core = (this.core = new EngineCore(options, deps, {
      guard: (c) => new ClockGuard(c),
      schedule: (c) => (schedule = new Schedule(c)),
    }));
    const reconciler = new Reconciler(core);
    this.attempts = new Attempts(core, reconciler, schedule);
    const attempts = this.attempts;
    // Who does each job of a thread's queue: the reconciler looks and refreshes, a recovery's due
    // time is its turn and then its attempt, a prepared set is sent, a task runs itself. When an
    // attempt or a send is done, its due job follows the watch again (engineCore.ts attemptEnded).
    core.serve({
      look: (threadId) => (core.session ? reconciler.evaluate(core.session, threadId) : undefined),
      refresh: (threadId, job) => reconciler.refresh(job.session, threadId),
      due: (threadId, job) => attempts.due(threadId, job.notBeforeMono),
      send: (_, job) => attempts.send(job.prepared),
      task: (_, job) => job.run(),
    });
    const home = new HomeScan(core);
    this.connection = new Connection(core, reconciler, home);
    this.commands = new UserActions(core, reconciler, this.connection, home);
  }

  /**
   * Applies new settings at once: delays already scheduled keep their due time. `autoArm` turned on
   * (the first run's choice, or the setting) arms the active goals shown as not adopted now, with a
   * pass over the loaded threads (each is armed as at a restart with `autoArm` on: an old block never).
   */
  updateOptions(options: EngineOptions): void {
    const previous = this.core.options;
    this.core.options = { ...options };
    this.core.schedule.updateOptions(previous);
    this.connection.updateOptions();
    this.core.reschedule();
    this.core.changed();
    if (!previous.autoArm && options.autoArm && this.core.session) void this.resync();
  }

  // ---- lifecycle -------------------------------------------------------------

  /** Loads the store and starts connecting in the background. */
  async start(): Promise<void> {
    const core = this.core;
    const generation = core.generation;
    const loaded = await core.deps.store.load();
    // Stopped while loading (a window or runner that lost its role at once): stay stopped.
    if (core.generation !== generation) return;
    // As the store has it, except what it says differs: nothing else to save until something
    // changes (every change marks its watch).
    core.state = loaded.state;
    for (const id of loaded.changed ?? []) core.mark(id);
    if (loaded.problem) core.emit({ type: 'warning', message: loaded.problem });
    core.stopped = false;
    this.core.guard.started();
    this.connection.connectNow(); // connected, every recovery's due job is set
  }

  /** Stops timers, withdraws prepared sets, waits for work under way, saves and closes the connection. */
  async stop(): Promise<void> {
    const core = this.core;
    core.stopped = true;
    core.generation += 1;
    this.core.schedule.stop();
    this.connection.stopTimers();
    // Not sent: each intent is withdrawn (saved below), the recovery is due again next start.
    this.attempts.withdrawAll();
    await core.idle();
    await this.connection.close();
    await core.persist();
    await core.saver.compact();
  }

  /** Resolves when no work is under way (for tests and orderly shutdown). */
  idle(): Promise<void> {
    return this.core.idle();
  }

  // ---- what views read -----------------------------------------------------

  watches(): readonly Watch[] {
    return this.core.watches();
  }

  watch(threadId: string): Watch | undefined {
    return this.core.state.watches[threadId];
  }

  connectionState(): ConnectionState {
    return this.core.connection;
  }

  /** Everything a view shows, as one value (deep-copied: safe to keep and to send). */
  snapshot(): EngineSnapshot {
    const core = this.core;
    return structuredClone({
      at: core.now(),
      connection: core.connection,
      target: core.deps.target ?? '',
      pausedAt: core.state.pausedAt,
      maxAttempts: core.options.maxAttempts,
      policy: {
        baseDelayMs: core.options.baseDelayMs,
        maxDelayMs: core.options.maxDelayMs,
        maxAttempts: core.options.maxAttempts,
        autoArm: core.options.autoArm,
        recoverUsageLimited: core.options.recoverUsageLimited,
        resyncMs: core.options.resyncMs,
        recoveryBudget: core.options.recoveryBudget,
      },
      nextDueAt: this.nextDueAt(),
      watches: this.watches() as WatchedThread[], // deep-copied here: the snapshot's own
    });
  }

  /** The soonest time the engine will act, or null. */
  nextDueAt(): number | null {
    return this.core.schedule.nextDueAt();
  }

  /** A full pass over the daemon's loaded threads (also run every `resyncMs`): the Refresh command. */
  resync(): Promise<void> {
    return this.commands.refresh();
  }
}
