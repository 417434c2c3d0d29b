// BASELINE, for benchmarks only: the naive way to keep goals alive. Once a second it asks the
// daemon about every thread it knows (thread/goal/get, plus thread/turns/list when the goal is
// blocked), and sets a blocked goal active once its backoff is due. No events, no timers per
// thread, no write-ahead: what the engine is measured against.
import { jitteredDelay, type Random } from '../../../src/core/backoff';
import type { Clock, TimerHandle } from '../../../src/core/clock';
import type { DaemonSession, ThreadGoal, Turn } from '../../../src/protocol/daemon';
import { immediate } from '../../support/wait';

export interface PollingOptions {
  pollMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

interface Known {
  goal: ThreadGoal | null;
  turn: Turn | null;
  failures: number;
  /** The failed turn being waited on, and when its recovery is due. */
  failedTurnId: string | null;
  dueAt: number | null;
  recovered: Set<string>;
}

export interface PollingEvents {
  /** A failure was noticed and its recovery scheduled. */
  onScheduled?(threadId: string, failedTurnId: string, dueAt: number): void;
  /** About to send thread/goal/set for a due recovery. */
  onRecover?(threadId: string, failedTurnId: string, dueAt: number): void;
}

export class PollingReconciler {
  readonly known = new Map<string, Known>();
  rpcs = 0;
  private timer: TimerHandle | null = null;
  private running = false;
  private stopped = false;

  constructor(
    private readonly session: DaemonSession,
    private readonly clock: Clock,
    private readonly options: PollingOptions,
    private readonly random: Random,
    private readonly events: PollingEvents = {},
  ) {}

  /** Lists the loaded threads once, then polls every `pollMs`. */
  async start(): Promise<void> {
    this.rpcs += 1;
    for (const id of await this.session.listLoaded())
      this.known.set(id, {
        goal: null,
        turn: null,
        failures: 0,
        failedTurnId: null,
        dueAt: null,
        recovered: new Set(),
      });
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.clock.clearTimer(this.timer);
  }

  /** Resolves when the poll in progress (if any) is done. */
  async idle(): Promise<void> {
    while (this.running) await immediate();
  }

  /** Fixed rate: a tick every `pollMs`; a tick that finds the previous pass still running is skipped. */
  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimer(() => {
      this.schedule();
      void this.poll();
    }, this.options.pollMs);
  }

  /** One pass over every thread, one after the other. */
  async poll(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (const [id, k] of this.known) {
        this.rpcs += 1;
        k.goal = await this.session.getGoal(id);
        if (k.goal?.status !== 'blocked') continue;
        this.rpcs += 1;
        k.turn = await this.session.latestTurn(id);
        const turn = k.turn;
        if (!turn || turn.status !== 'failed' || k.recovered.has(turn.id)) continue;
        const now = this.clock.now();
        if (k.failedTurnId !== turn.id) {
          k.failures += 1;
          k.failedTurnId = turn.id;
          k.dueAt =
            now +
            jitteredDelay(
              { baseMs: this.options.baseDelayMs, capMs: this.options.maxDelayMs },
              k.failures,
              this.random,
            );
          this.events.onScheduled?.(id, turn.id, k.dueAt);
        }
        if (k.dueAt !== null && now >= k.dueAt) {
          this.events.onRecover?.(id, turn.id, k.dueAt);
          this.rpcs += 1;
          await this.session.setGoalActive(id);
          k.recovered.add(turn.id);
          k.dueAt = null;
        }
      }
    } finally {
      this.running = false;
    }
  }
}
