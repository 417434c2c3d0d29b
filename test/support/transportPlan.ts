// The plan of one transport-fault schedule (test/support/transportScenario.ts runs it): what each
// scripted thread does, the steps of fake time, the outage and the wire faults; the shipped
// options it runs with; and what a run reports (`Outcome`, the named cases `Reached`).
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import type { Fault } from './faultProxy';
/**
 * What a thread does during the schedule:
 * - transient:    active; its running turn fails with a transient error at each `failAt` step
 *                 (when a turn is running then). Must be recovered, once per failed turn, unless
 *                 the failures and rejected sets in a row exceed maxAttempts (then given up).
 * - usage:        like transient, but the failure is a usage limit (goal `usageLimited`).
 * - retrying:     like transient, but each failure is Codex retrying first: `error {willRetry:true}`,
 *                 the goal `blocked` while the turn still runs, for `holdMs` (past any due time),
 *                 then the turn's end. Never set before the end; recovered once after it.
 * - humanPause:   fails at `failAt[0]`; a person pauses the goal: at step `eventAt` (`pause:
 *                 'step'`), inside its backoff (`'backoff'`) or inside the prepared send, the
 *                 200 ms between the write-ahead and the due time (`'prepared'`). Never set after
 *                 the engine was told of the pause.
 * - approval:     an approval request on the goal (see `approval`); never answered, never a set
 *                 while it waits, recovered once when its turn failed and it was resolved.
 * - modelBlock:   the model calls `update_goal blocked` at `eventAt` (its turn then fails or
 *                 completes). Never set.
 * - terminal:     the goal becomes complete or budgetLimited at `eventAt` (its turn then fails or
 *                 completes). Never set.
 * - oldBlocked:   blocked by a failed turn before the engine started. Never adopted, never set.
 * - pausedBefore: paused by a person before the engine started. Never set.
 */
export const KINDS = [
  'transient',
  'usage',
  'retrying',
  'humanPause',
  'approval',
  'modelBlock',
  'terminal',
  'oldBlocked',
  'pausedBefore',
] as const;
export type Kind = (typeof KINDS)[number];

/**
 * The approval thread's story, from step `eventAt` on:
 * - stays:            requested while the turn runs, never resolved, the turn never ends.
 * - resolveThenFail:  requested; resolved by the person `holdMs` later; then the turn fails.
 * - failWhilePending: requested; the goal turns `blocked` (the turn still running) with the
 *                     approval pending for `holdMs`; then it is resolved and the turn ends failed.
 * - onBlocked:        the turn fails; within the backoff an approval request arrives on the blocked
 *                     goal (the seed's TestLiveActivity), pending for `holdMs`, then resolved.
 */
export const APPROVALS = ['stays', 'resolveThenFail', 'failWhilePending', 'onBlocked'] as const;
export type ApprovalStory = (typeof APPROVALS)[number];

/** codexErrorInfo values the engine must take as transient (docs/daemon-behaviour.md §a). */
export const TRANSIENT_INFOS: readonly unknown[] = [
  'internalServerError',
  'serverOverloaded',
  { responseTooManyFailedAttempts: { httpStatusCode: 429 } },
  { responseStreamDisconnected: { httpStatusCode: null } },
];

export interface ThreadPlan {
  kind: Kind;
  failAt: number[];
  eventAt: number;
  /** Codex's own retry (`error {willRetry:true}`) comes right before each failure. */
  retryFirst: boolean;
  /** Index into TRANSIENT_INFOS. */
  errorInfo: number;
  /** The goal is blocked this long (ms) before the turn's end is reported (0: all at once). */
  splitMs: number;
  endTurn: 'completed' | 'failed';
  terminal: 'complete' | 'budgetLimited';
  /** The daemon answers the first `rejects` automatic sets that reach it on this thread with an error. */
  rejects: number;
  /** retrying: how long Codex retries with the goal blocked; approval: how long the request waits. */
  holdMs: number;
  /** humanPause: where the pause lands. */
  pause: 'step' | 'backoff' | 'prepared';
  /** humanPause: where in the backoff (a fraction of it), or how far before the due time (of the 200 ms lead). */
  pauseFrac: number;
  approval: ApprovalStory;
  /** approval onBlocked: the thread shows `active:waitingOnApproval` (as in the seed) rather than `systemError`. */
  approvalActive: boolean;
}

export interface Schedule {
  threads: ThreadPlan[];
  /** Fake time (ms) that passes after each step's events. */
  steps: number[];
  /**
   * An outage: at step `at` every thread that can fail does, and `extra` more plain transient
   * threads with it (many recoveries due at once: the limiter's case); or null.
   */
  outage: { at: number; extra: number } | null;
  faults: Fault[];
  /** Seeds the engine's jitter. */
  seed: number;
}

/** The cases the property names, each counted when it actually happened (see `runSchedule`). */
export interface Reached {
  /**
   * An approval reached the engine and stayed pending ≥ HOLD_MIN_MS while the daemon's goal was blocked and its turn
   * failed.
   */
  approvalOnFailedTurn: number;
  /** Likewise, with the goal blocked and its turn still running (it then failed). */
  approvalWhileBlocking: number;
  /** A failed turn of an approval thread recovered by a set that arrived after its approval was resolved. */
  recoveredAfterApproval: number;
  /** `error {willRetry:true}` reached the engine, then the goal stayed blocked with its turn running ≥ HOLD_MIN_MS. */
  retryOnBlocked: number;
  /** …and that failed turn was then recovered (one set, after the turn's end). */
  recoveredAfterRetry: number;
  /** A retry on a blocked goal checked against the engine's state (told, on the same connection, no fault since). */
  retryShown: number;
  /** A person paused while the engine was in backoff for the failed turn (goal blocked, no set yet). */
  pauseInBackoff: number;
  /** A person paused after the write-ahead, before the set was sent (the prepared send). */
  pauseInPrepared: number;
  /** Error replies to a set that the daemon itself gave, delivered to the engine. */
  rejectedByDaemon: number;
  /** Threads whose failures and rejections in a row exceed maxAttempts: the engine must give up. */
  mustGiveUp: number;
  /** Sets whose time the limiter check can know exactly (no frame held back around it). */
  limiterChecked: number;
  /** Sets that left the limiter's bucket below half a token: the limiter was at its limit. */
  limiterAtLimit: number;
}

export interface Outcome {
  /** Broken invariants; empty when the engine behaved. */
  broken: string[];
  stats: {
    sets: number;
    recovered: number;
    fired: number;
    drops: number;
    delays: number;
    errors: number;
    timeouts: number;
    races: number;
    notSeen: number;
    decisions: number;
    fakeMinutes: number;
  };
  reached: Reached;
  log: string[];
}

/** The shipped defaults: the scenario tests the product as it ships. */
export const OPTIONS: EngineOptions = { ...DEFAULT_OPTIONS };

/** A hold (a retry, an approval) this long outlasts the first due time of any backoff (base 30 s). */
export const HOLD_MIN_MS = DEFAULT_OPTIONS.baseDelayMs + 1_000;

/** The kinds whose goals the engine must never set. */
export const FORBIDDEN: ReadonlySet<Kind> = new Set(['modelBlock', 'terminal', 'oldBlocked', 'pausedBefore']);
/** The kinds on which the daemon may reject a set (`ThreadPlan.rejects`). */
export const REJECTABLE: ReadonlySet<Kind> = new Set(['transient', 'retrying', 'humanPause', 'approval']);

/** A thread of the run: its plan, with the outage's failure merged in, and its id. */
export type Plan = ThreadPlan & { id: string };

/** The schedule's threads and the outage's crowd of plain transient threads, each with its id. */
export function planThreads(schedule: Schedule): Plan[] {
  const outage = schedule.outage;
  const crowd: ThreadPlan[] = Array.from({ length: outage?.extra ?? 0 }, () => ({
    kind: 'transient',
    failAt: [outage!.at],
    eventAt: 0,
    retryFirst: false,
    errorInfo: 0,
    splitMs: 0,
    endTurn: 'failed',
    terminal: 'complete',
    rejects: 0,
    holdMs: HOLD_MIN_MS,
    pause: 'step',
    pauseFrac: 0,
    approval: 'stays',
    approvalActive: false,
  }));
  return [...schedule.threads, ...crowd].map((p, i) => {
    const failAt =
      outage !== null && p.kind !== 'humanPause'
        ? [...new Set([...p.failAt, outage.at])].sort((a, b) => a - b)
        : p.failAt;
    return { ...p, failAt, id: `t${i + 1}-${p.kind}` };
  });
}

/** No named case reached yet. */
export function noneReached(): Reached {
  return {
    approvalOnFailedTurn: 0,
    approvalWhileBlocking: 0,
    recoveredAfterApproval: 0,
    retryOnBlocked: 0,
    recoveredAfterRetry: 0,
    retryShown: 0,
    pauseInBackoff: 0,
    pauseInPrepared: 0,
    rejectedByDaemon: 0,
    mustGiveUp: 0,
    limiterChecked: 0,
    limiterAtLimit: 0,
  };
}
