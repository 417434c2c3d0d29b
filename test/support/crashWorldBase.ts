// The state and the time of the crash world (test/support/crashWorld.ts): the daemon, the clock,
// what the world knows of each thread (`Facts`), what the engine's lives did, and time that runs
// timer by timer with the live engine reacting after each. Its lives (boot, crash, stall) are
// crashLives.ts's; the threads' events, the commands and the judge, crashWorld.ts's.
import type { Engine } from '../../src/core/engine';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import { type Lease, LEASE_MS } from '../../src/leader/lease';
import type { Decision } from '../../src/model/decision';
import type { EngineSnapshot } from '../../src/model/snapshot';
import type { PersistedState } from '../../src/model/watch';
import type { DurableStore, Gate, ScopedClock } from './crashProcess';
import { FakeClock } from './fakeClock';
import { FakeDaemon, type WireMessage } from './fakeDaemon';
import { immediate } from './wait';

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
export interface Life {
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

export interface Facts {
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

export abstract class CrashWorldBase {
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
  protected life!: Life;
  protected lives = 0;
  /** Timers fired that set something in motion (not a renewal): the driver lets the engine react to those. */
  protected readonly busy = { fired: 0 };
  /** What the live engine announced, with the world time it did. */
  get decisions(): Array<{ d: Decision; at: number }> {
    return this.life.decisions;
  }
  paused = false;
  /** When the person resumed auto-recovery, and when an engine restarted after a crash or took over. */
  protected readonly resumeTimes: number[] = [];
  /**
   * When a turn completed successfully (the provider answered): every goal here runs on the mock,
   * so a failure older than one may be recovered at once (src/core/outage.ts, `releasedBy`).
   */
  protected readonly answerTimes: number[] = [];
  /**
   * Turns that began on the mock after a failure, as a probe may (an automatic set, a person's
   * resume): a goal due meanwhile may wait for its verdict, at most the backoff cap.
   */
  protected readonly probeStarts: { threadId: string; at: number }[] = [];
  protected readonly restartTimes: number[] = [];
  /** Failed turns a stalled engine had due within its freeze (`threadId/turnId`): who recovers them. */
  protected readonly dueAtStall = new Set<string>();

  constructor(
    readonly dir: string,
    protected readonly random: () => number,
  ) {
    this.daemon = new FakeDaemon(dir);
    this.daemon.before = (m) => this.judge(m);
  }

  /**
   * What a frozen engine did all the same: a rollout read (real file I/O, which the freeze cannot
   * hold) that completed after the freeze lets it run on until its next held input. Counted
   * (kept rare by the freeze's wait); bound by the same rules: nothing after its lease ran out.
   */
  ranFrozen = 0;

  protected sinceRenewal(life: Life): string {
    return `${this.clock.elapsed() - life.renewedAt} ms after its last renewal (lease ${LEASE_MS} ms; ${life.stale ?? 'no takeover yet'})`;
  }

  /** The stalled life, from its freeze until it is dropped. */
  protected stalled: Life | null = null;

  /** Ends a life without stop(): its timers die, its connections close, its saves stop. */
  protected drop(life: Life, why: string): void {
    life.alive = false;
    life.scoped.kill();
    for (const g of life.gates) {
      g.c.close(why);
      g.open();
    }
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
        await immediate();
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
        await immediate();
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

  protected fact(id: string): Facts {
    const f = this.facts.get(id);
    if (!f) throw new Error(`no thread ${id}`);
    return f;
  }

  protected nextTurnId(id: string): string {
    const n = Number(this.daemon.thread(id).turn.id.split('-')[1] ?? '0');
    return `turn-${n + 1}`;
  }

  /** The first broken rule; the set is dropped unanswered, and the driver throws after the step. */
  protected fail(message: string): false {
    this.violation ??= new Error(`${message}\n  at +${this.at()} s; history:\n  ${this.log.join('\n  ')}`);
    // The refused request gets no answer: end the connections, so the engine is not left waiting.
    setImmediate(() => this.daemon.disconnect('the test judge refused a request'));
    return false;
  }

  /** Every automatic set, before the daemon applies it: false refuses it. */
  protected abstract judge(m: WireMessage): boolean;
}
