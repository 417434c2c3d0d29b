// BASELINE for the end-to-end benchmark (test/bench/endToEnd.ts), not product code: the naive
// way to keep goals alive against the real Codex daemon. Every second it asks the daemon for the
// goal of every watched thread (`thread/goal/get`, one request each) and, when a goal is blocked
// and its due time has passed, sends `thread/goal/set {status: "active"}`. No notifications, no
// subscription, no check of why the goal is blocked: it only knows what it polls.
//
// It talks through the same DaemonSession (the product's JSON-RPC client) that the engine uses,
// so the comparison is between scheduling strategies (polling vs. events + a due-time timer),
// not between two JSON-RPC implementations.
import type { DaemonSession } from '../../../src/protocol/daemon';

export interface PollingReconcilerOptions {
  /** How often every watched thread is polled (default 1000 ms). */
  intervalMs?: number;
  /** Called when the reconciler has sent the set for a thread (after the daemon's reply). */
  onRecovered?: (threadId: string, sentAt: number) => void;
  /** Called when a poll or a set fails (the poll goes on). */
  onError?: (threadId: string, error: unknown) => void;
}

interface Watched {
  /** ms since the epoch; null until the bench says when the recovery is due. */
  dueAt: number | null;
  done: boolean;
}

export class PollingDaemonReconciler {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;
  private readonly intervalMs: number;

  constructor(
    private readonly session: Pick<DaemonSession, 'getGoal' | 'setGoalActive'>,
    private readonly options: PollingReconcilerOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 1000;
  }

  /** Starts polling this thread (from now until its goal has been set active once). */
  watch(threadId: string): void {
    if (!this.watched.has(threadId)) this.watched.set(threadId, { dueAt: null, done: false });
  }

  /** The moment the thread's blocked goal may be re-activated. */
  setDue(threadId: string, dueAt: number): void {
    const w = this.watched.get(threadId);
    if (w) w.dueAt = dueAt;
    else this.watched.set(threadId, { dueAt, done: false });
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.pollAll(), this.intervalMs);
    void this.pollAll();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One pass: a goal/get per watched thread, a set for each blocked one that is due. */
  private async pollAll(): Promise<void> {
    if (this.polling) return; // the previous pass is still waiting for replies: skip this tick
    this.polling = true;
    try {
      const open = [...this.watched.entries()].filter(([, w]) => !w.done);
      await Promise.all(open.map(([threadId, w]) => this.pollOne(threadId, w)));
    } finally {
      this.polling = false;
    }
  }

  private async pollOne(threadId: string, w: Watched): Promise<void> {
    try {
      const goal = await this.session.getGoal(threadId);
      if (goal?.status !== 'blocked' || w.dueAt === null || Date.now() < w.dueAt) return;
      w.done = true;
      await this.session.setGoalActive(threadId);
      this.options.onRecovered?.(threadId, Date.now());
    } catch (error) {
      this.options.onError?.(threadId, error);
    }
  }
}
