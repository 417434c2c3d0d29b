// What one transport-fault run holds while it plays (test/support/transportScenario.ts): the fake
// daemon and clock, the threads, and the record the drive keeps of what happened, from the
// daemon's side (each set as it arrived) and from the engine's socket (what it was told), for
// the oracle (transportOracle.ts) to judge once everything settled.
import * as fs from 'node:fs';
import type { Engine } from '../../src/core/engine';
import type { Decision } from '../../src/model/decision';
import type { TurnRow } from './daemonJudge';
import { FakeClock } from './fakeClock';
import { FakeDaemon } from './fakeDaemon';
import type { FaultProxy } from './faultProxy';
import { type ApprovalStory, noneReached, type Plan, planThreads, type Reached, type Schedule } from './transportPlan';

export const APPROVAL_METHOD = 'item/commandExecution/requestApproval';

/** A `thread/goal/set` as it reached the daemon, with the daemon's state at that moment. */
export interface SetArrival {
  threadId: string;
  status: string;
  turnId: string;
  turnStatus: string;
  origin: unknown;
  at: number;
  accepted: boolean;
  approvalTold: boolean;
}

/** An approval request of the run, and the links (connections) on which it reached the engine. */
export interface Approval {
  threadId: string;
  id: string;
  story: ApprovalStory;
  since: number;
  resolvedAt: number | null;
  told: Set<number>;
}

/** An error reply to a set the daemon did not carry out, as it reached the engine. */
export interface Rejection {
  threadId: string;
  at: number;
}

/** When a failed turn failed (monotonic ms) and whether by a usage limit. */
export interface Failure {
  threadId: string;
  turnId: string;
  at: number;
  usage: boolean;
}

function taskStartedLine(turnId: string): string {
  return `${JSON.stringify({ type: 'event_msg', payload: { type: 'task_started', turn_id: turnId } })}\n`;
}

export class TransportRun {
  readonly broken: string[] = [];
  readonly log: string[] = [];
  readonly daemon: FakeDaemon;
  readonly clock = new FakeClock();
  readonly decisions: Decision[] = [];
  /** The engine's onChange calls. */
  changes = 0;
  readonly reached: Reached = noneReached();
  readonly plans: Plan[];
  /** Every turn of each thread, as the daemon had them (the fake keeps only the newest). */
  readonly turns = new Map<string, TurnRow[]>();
  /** Thread -> turns that failed, in order. */
  readonly failedTurns = new Map<string, string[]>();
  readonly failures: Failure[] = [];
  /** Threads whose goal is blocked while the turn still runs (its end is still to come). */
  readonly splitting = new Set<string>();
  /** Thread -> when a person paused it (monotonic ms). */
  readonly pausedByHuman = new Map<string, number>();
  /** Threads whose model block, terminal status or approval took place. */
  readonly applied = new Set<string>();
  /** Scenario timers not fired yet: time must run until they have. */
  ownTimers = 0;
  readonly approvals: Approval[] = [];
  readonly arrivals: SetArrival[] = [];
  readonly rejectedSoFar = new Map<string, number>();
  /** The link each set was sent on, by thread, for the arrival that follows (sets of a thread are one at a time). */
  readonly sentOn = new Map<string, number>();
  readonly toldPaused = new Set<string>();
  /** Threads the engine was told were active before any recovery of theirs: it saw them before they failed. */
  readonly sawActive = new Set<string>();
  /** Sets as they left the engine (monotonic ms), for the limiter. */
  readonly sent: { threadId: string; at: number }[] = [];
  readonly rejections: Rejection[] = [];
  /** Which failed turns' `error {willRetry:true}` reached the engine. */
  readonly retryTold = new Set<string>();
  /** Where the wire stood when each was told: the connection, faults fired, timeouts. */
  readonly retryToldAt = new Map<string, string>();
  /** Retries told to the engine that held the blocked goal past a due time. */
  readonly retryHeld = new Set<string>();
  retryShown = 0;
  readonly blockedSince = new Map<string, number>();
  /** humanPause threads whose pause was placed in the backoff or the prepared send. */
  readonly pauseAt = new Map<string, 'backoff' | 'prepared'>();
  proxy!: FaultProxy;
  engine!: Engine;

  constructor(schedule: Schedule, dir: string) {
    this.daemon = new FakeDaemon(dir);
    this.plans = planThreads(schedule);
  }

  plan(id: string): Plan {
    return this.plans.find((p) => p.id === id)!;
  }

  /** Notes the thread's newest turn (a new one gets its `task_started` line in the rollout). */
  noteTurn(id: string): void {
    const t = this.daemon.thread(id);
    const list = this.turns.get(id) ?? [];
    const row = list.find((r) => r.id === t.turn.id);
    if (row) row.status = t.turn.status;
    else {
      list.push({ id: t.turn.id, status: t.turn.status });
      fs.appendFileSync(t.path, taskStartedLine(t.turn.id));
    }
    this.turns.set(id, list);
  }

  /** A scenario timer on the fake clock. */
  later(fn: () => void, ms: number): void {
    this.ownTimers += 1;
    this.clock.setTimer(() => {
      this.ownTimers -= 1;
      fn();
    }, ms);
  }

  pendingApproval(threadId: string): Approval | undefined {
    return this.approvals.find((a) => a.threadId === threadId && a.resolvedAt === null);
  }

  /** The thread's turn runs on an active goal, with nothing in the way of a scripted event. */
  running(id: string): boolean {
    const t = this.daemon.thread(id);
    return (
      t.goal?.status === 'active' &&
      t.turn.status === 'inProgress' &&
      !this.splitting.has(id) &&
      this.pendingApproval(id) === undefined
    );
  }

  /** Where the wire stands: the connection, faults fired, timeouts. */
  wireMark(): string {
    return `${this.proxy.linkCount}/${this.proxy.fired.length}/${this.proxy.timeouts}`;
  }
}
