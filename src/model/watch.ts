// What a watched thread is, and every state it can be in. The bottom layer: the engine, the stores
// and the views import it, it imports nothing of theirs. The zod schemas are the one definition:
// the TypeScript types are inferred from them, and the stores validate with them.
import * as z from '../util/zod';
import { noEntries, sharedState } from './sharedState';

export { describeErrorCode } from './errorCodeText';
export { formatAge, formatClock, formatDuration } from './timeText';

export const GOAL_STATUSES = ['active', 'paused', 'blocked', 'usageLimited', 'budgetLimited', 'complete'] as const;
export const GoalStatusSchema = z.enum(GOAL_STATUSES);
export type GoalStatus = z.infer<typeof GoalStatusSchema>;

/** The part of a Codex `ThreadGoal` the engine keeps. */
export const GoalSnapshotSchema = z.object({
  status: GoalStatusSchema,
  objective: z.string(),
  tokensUsed: z.number(),
  tokenBudget: z.nullable(z.number()),
  updatedAt: z.number(),
});
export type GoalSnapshot = z.infer<typeof GoalSnapshotSchema>;

/** A failed turn as the engine saw it: its id and what `codexErrorInfo` said. */
export const TurnFailureSchema = z.object({
  turnId: z.string(),
  message: z.string(),
  /** Short label of `codexErrorInfo`, e.g. `internalServerError`, `responseStreamDisconnected`. */
  code: z.string(),
  httpStatus: z.nullable(z.number()),
  at: z.number(),
  /**
   * When its recovery is (or was) due; null: not recovered. The one place a due time lives (kept
   * across unloads and restarts).
   */
  dueAt: z.nullable(z.number()),
  /**
   * Set on an outage's probe sent again half-way to its group's next step (src/core/outage.ts,
   * `halfStepDue`): when that step falls due (its turn failing again waits for it with its group).
   */
  stepDueAt: z.optional(z.number()),
});
export type TurnFailure = z.infer<typeof TurnFailureSchema>;

/** Blocked by a transient failure; the recovery is due at the failure's `dueAt` (see TurnFailure). */
const BackoffStateSchema = z.object({
  kind: z.literal('backoff'),
  attempt: z.number().check(z.int(), z.positive()),
  failedTurnId: z.string(),
});
/** The account hit its usage limit; resumed at the failure's `dueAt`: after the reset (if known) plus a margin. */
const UsageLimitedStateSchema = z.object({ kind: z.literal('usageLimited'), resetsAt: z.nullable(z.number()) });
/** A recovery scheduled at a due time: after a transient failure, or after a usage limit. */
export type ScheduledState = z.infer<typeof BackoffStateSchema> | z.infer<typeof UsageLimitedStateSchema>;

/** Why a thread is, or is not, being recovered: every reason to hold back is a state of its own, never a boolean. */
export const WatchStateSchema = z.discriminatedUnion('kind', [
  /** Goal active and a turn is running, or about to. Nothing to do. */
  z.object({ kind: z.literal('running') }),
  /** Goal active, thread idle and no turn running (for example after a daemon restart). */
  z.object({ kind: z.literal('idle') }),
  /** The thread waits for a person: an approval or user input. Never competed with. */
  z.object({ kind: z.literal('waitingApproval') }),
  /** Codex is retrying the turn itself (`error` with `willRetry: true`). Never competed with. */
  z.object({ kind: z.literal('codexRetrying'), detail: z.string() }),
  BackoffStateSchema,
  /**
   * A recovery that is due, held back by the global limiter (a burst, then one per interval):
   * `slotAt` is when its turn to go out is expected. `held` is the recovery as scheduled.
   */
  z.object({
    kind: z.literal('waitingSlot'),
    slotAt: z.number(),
    held: z.discriminatedUnion('kind', [BackoffStateSchema, UsageLimitedStateSchema]),
  }),
  /**
   * A due recovery held back while another goal of its outage group (`probe`) is out as the probe
   * (src/core/outage.ts): the provider's answer releases it, the probe failing again moves it to
   * the probe's next step. `held` is the recovery as scheduled.
   */
  z.object({ kind: z.literal('waitingProbe'), probe: z.string(), held: BackoffStateSchema }),
  /** The goal is blocked but its newest turn has not ended yet (Codex blocks the goal first): its end decides. */
  z.object({ kind: z.literal('turnEnding') }),
  /** `thread/goal/set` sent (write-ahead intent persisted); waiting for the daemon to confirm. */
  z.object({
    kind: z.literal('recovering'),
    attempt: z.number().check(z.int(), z.positive()),
    failedTurnId: z.string(),
    sentAt: z.number(),
  }),
  UsageLimitedStateSchema,
  /** A human's goal marker in the rollout, newer than the arming, disarmed the thread. */
  z.object({ kind: z.literal('userIntent'), requested: GoalStatusSchema, at: z.number() }),
  /** The user disarmed the thread from the extension (an intent marker in the store). */
  /** `neverArmed`: disarmed while not adopted (Re-arm is then a first arming: `arm`, from now on). */
  z.object({ kind: z.literal('disarmed'), at: z.number(), neverArmed: z.optional(z.literal(true)) }),
  /** The goal is paused, but no user marker says who asked. Left alone. */
  z.object({ kind: z.literal('paused') }),
  z.object({ kind: z.literal('complete') }),
  z.object({ kind: z.literal('budgetLimited') }),
  /** The model itself blocked the goal (`update_goal blocked`): not a failure. */
  z.object({ kind: z.literal('modelBlocked') }),
  /** The user interrupted the turn: the goal stays active with no continuation. */
  z.object({ kind: z.literal('interrupted') }),
  /** A failure that re-activating cannot fix (context window full, 400/401, ...). */
  z.object({ kind: z.literal('needsAttention'), code: z.string(), message: z.string() }),
  /** `maxAttempts` consecutive recoveries failed again. */
  z.object({ kind: z.literal('gaveUp'), attempts: z.number().check(z.int()) }),
  /**
   * A recovery would be due, but `used` automatic recoveries in the rolling 24 h reached the budget
   * (`limit`): a person's Retry now (or re-arm) next. `until`: when the oldest counted one leaves the window.
   */
  z.object({ kind: z.literal('budgetSpent'), used: z.number().check(z.int()), limit: z.number(), until: z.number() }),
  /** Already blocked (or otherwise stopped) when the engine first saw it: never adopted. */
  z.object({ kind: z.literal('notAdopted'), status: GoalStatusSchema }),
  /**
   * Armed by a person (Watch this goal, `arm`) while a failure or a usage limit already stopped the
   * goal (`beforeArming`): never recovered; a person resumes it, and a later failure is recovered.
   */
  z.object({ kind: z.literal('failedBeforeArming'), code: z.string(), message: z.string() }),
  /** The thread is no longer loaded in the daemon; never resumed by the engine. */
  z.object({ kind: z.literal('unloaded') }),
  /**
   * The goal lives in a thread the daemon has not loaded and this engine never watched there:
   * another Codex app (the Codex VS Code extension, the desktop app, an embedded TUI) holds it, or
   * held it last. Shown, never set nor resumed by the engine (measured: a set from the daemon only
   * writes the state DB; a resume is refused while the other app holds the thread, and once it
   * succeeds the other app is locked out). `since`: first seen there; `goal`: its status there;
   * `seenActive`: seen active there (a later block is not an old one); `retryable`: stopped by a
   * transient failure or a usage limit, not recovered yet: "Retry now" loads it into the daemon and
   * recovers it once.
   */
  z.object({
    kind: z.literal('elsewhere'),
    since: z.number(),
    goal: GoalStatusSchema,
    seenActive: z.boolean(),
    retryable: z.boolean(),
    /**
     * The person's Retry now (for this failed turn), written before the daemon is asked to load the
     * thread: a restart that finds it loaded carries it out instead of leaving the goal unadopted.
     */
    retryAsked: z.optional(z.nullable(z.object({ at: z.number(), failedTurnId: z.string() }))),
  }),
]);
export type WatchState = z.infer<typeof WatchStateSchema>;
export type WatchStateKind = WatchState['kind'];

/** The write-ahead intent: persisted before `thread/goal/set` is sent. */
export const PendingRecoverySchema = z.object({
  failedTurnId: z.string(),
  attempt: z.number().check(z.int(), z.positive()),
  sentAt: z.number(),
  /** The daemon's error reply, once it refused the set: a read-back cut short leaves it to the next look. */
  rejected: z.optional(z.string()),
});
export type PendingRecovery = z.infer<typeof PendingRecoverySchema>;

export const OUTCOMES = ['recovered', 'failed-again', 'skipped', 'gave-up', 'rejected'] as const;
export const HistoryEntrySchema = z.object({
  at: z.number(),
  failedTurnId: z.string(),
  attempt: z.number().check(z.int()),
  error: z.string(),
  outcome: z.enum(OUTCOMES),
  detail: z.optional(z.string()),
});
export type HistoryEntry = z.infer<typeof HistoryEntrySchema>;

/** The last human goal marker found in the rollout, and where. */
export const MarkerSchema = z.object({ status: GoalStatusSchema, offset: z.number().check(z.int(), z.nonnegative()) });
export type Marker = z.infer<typeof MarkerSchema>;

/**
 * A watched thread. A field with a default (`_default`) may be left out of a stored record, which
 * then means that value (src/store/watchRecord.ts writes and reads records that way).
 */
export const WatchedThreadSchema = z.pipe(
  z.transform(dueFromOldState),
  z.object({
    threadId: z.string().check(z.minLength(1)),
    title: z.string(),
    /** When the engine armed the thread (saw its goal active), ms since the epoch. */
    armedAt: z.number(),
    /** Rollout size when armed: a user marker at or past this offset is newer than the arming. */
    armOffset: z._default(z.nullable(z.number().check(z.int(), z.nonnegative())), null),
    rolloutPath: z._default(z.nullable(z.string()), null),
    /** What the thread runs on, as the daemon names it (`modelProvider/model`): its outage group. */
    runsOn: z._default(z.nullable(z.string()), null),
    /** Bytes of the rollout already scanned for markers; the next look reads only what follows. */
    rolloutOffset: z._default(z.number().check(z.int(), z.nonnegative()), 0),
    lastMarker: z._default(z.nullable(MarkerSchema), null),
    /**
     * Rollout offset of the model's own `update_goal {status: "blocked"}` since the goal was last set
     * active: a block the model chose, even if its turn then failed. Never recovered.
     */
    modelBlockOffset: z._default(z.nullable(z.number().check(z.int(), z.nonnegative())), null),
    /**
     * What stopped the goal when a person armed it (Watch this goal, `arm`): its failed turn, or
     * its usage limit's key. Older than the arming: never recovered. Null: nothing had.
     */
    beforeArming: z._default(z.nullable(z.string()), null),
    goal: z._default(z.nullable(GoalSnapshotSchema), null),
    /** Consecutive failed turns; a turn that completes successfully resets it. */
    failures: z._default(z.number().check(z.int(), z.nonnegative()), 0),
    lastFailure: z._default(z.nullable(TurnFailureSchema), null),
    state: WatchStateSchema,
    pending: z._default(z.nullable(PendingRecoverySchema), null),
    /** Failed turns already recovered: at most one effective recovery per failed turn, ever. */
    recovered: z._default(z.array(z.string()), []),
    history: z._default(z.array(HistoryEntrySchema), []),
    /** When each automatic set went out (its write-ahead), the last 24 h of them: the recovery budget. */
    recoveries: z._default(z.array(z.number()), []),
    updatedAt: z.number(),
  }),
);
/** A watch as its one writer (src/core/watchWrites.ts) and the stores' loads hold it. */
export type WatchedThread = z.infer<typeof WatchedThreadSchema>;

/** Read-only all the way down: a write through it does not compile. */
export type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** A watch as every part but its writer holds it: an assignment through it does not compile. */
export type Watch = DeepReadonly<WatchedThread>;

/** 2: watch records leave out the fields that hold their default (version 1's records read as they are). */
export const STATE_VERSION = 2;
export const PersistedStateSchema = z.object({
  version: z.literal(STATE_VERSION),
  /** The user paused auto-recovery for every thread (the extension's global intent marker). */
  pausedAt: z.nullable(z.number()),
  watches: z.record(z.string(), WatchedThreadSchema),
  /** Threads the user disarmed from the extension, with the time: survive restarts. */
  disarmed: z.record(z.string(), z.number()),
});
export type PersistedState = z.infer<typeof PersistedStateSchema>;

/** The engine's state: its watches read-only (written by src/core/watchWrites.ts alone). */
export type EngineState = Omit<PersistedState, 'watches'> & { watches: Record<string, Watch> };

export const HISTORY_LIMIT = 50;
export const RECOVERED_LIMIT = 64;

export function emptyState(): PersistedState {
  return { version: STATE_VERSION, pausedAt: null, watches: {}, disarmed: {} };
}

export function newWatch(threadId: string, now: number): WatchedThread {
  return {
    threadId,
    title: threadId,
    armedAt: now,
    armOffset: null,
    rolloutPath: null,
    runsOn: null,
    rolloutOffset: 0,
    lastMarker: null,
    modelBlockOffset: null,
    beforeArming: null,
    goal: null,
    failures: 0,
    lastFailure: null,
    state: sharedState({ kind: 'running' }),
    pending: null,
    // Most watches never fail: one frozen empty list for all, replaced by its own at the first entry.
    recovered: noEntries(),
    history: noEntries(),
    recoveries: noEntries(),
    updatedAt: now,
  };
}

/**
 * State files written before the due time lived in one place kept it in the state as well
 * (`backoff.dueAt`, `usageLimited.dueAt`): that copy is taken as the failure's due time.
 */
function dueFromOldState(value: unknown): unknown {
  if (!isRecord(value) || !isRecord(value.state) || !isRecord(value.lastFailure)) return value;
  const state = value.state.kind === 'waitingSlot' && isRecord(value.state.held) ? value.state.held : value.state;
  if (typeof state.dueAt !== 'number' || (state.kind !== 'backoff' && state.kind !== 'usageLimited')) return value;
  return { ...value, lastFailure: { ...value.lastFailure, dueAt: state.dueAt } };
}

/** Whether `value` is a plain object (not null, not an array), as JSON.parse makes one. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The history with `entry` added, the oldest dropped past HISTORY_LIMIT. */
export function withHistory(history: readonly HistoryEntry[], entry: HistoryEntry): HistoryEntry[] {
  return [...history, entry].slice(-HISTORY_LIMIT);
}

/** The recovered turns with `failedTurnId` added, the oldest dropped past RECOVERED_LIMIT. */
export function withRecovered(recovered: readonly string[], failedTurnId: string): string[] {
  return [...recovered, failedTurnId].slice(-RECOVERED_LIMIT);
}
