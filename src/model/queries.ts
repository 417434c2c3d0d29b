// What a watch's state says (pure queries, no writes), asked by the engine, the views, the commands
// and `status`: whether a recovery is scheduled and when, which actions apply, who must act.
import type { ScheduledState, Watch, WatchState } from './watch';

/** The time the engine should next act on this thread, if any: its failure's due time while scheduled. */
export function dueAt(w: Pick<Watch, 'state' | 'lastFailure'>): number | null {
  return scheduledOf(w.state) ? (w.lastFailure?.dueAt ?? null) : null;
}

/** The recovery a state keeps scheduled (also while the limiter holds it), or null. */
export function scheduledOf(state: WatchState): ScheduledState | null {
  if (state.kind === 'backoff' || state.kind === 'usageLimited') return state;
  return state.kind === 'waitingSlot' || state.kind === 'waitingProbe' ? state.held : null;
}

/**
 * The failure's due time when it is a delay the engine chose (a backoff; a usage limit whose reset
 * is not known), which a wall-clock jump back moves with it, so it keeps the time it had left; else
 * null. A reset time the provider gave is a point in time: it stays. A recovered failure, or one
 * not counted yet, has none.
 */
export function delayDueAt(w: Pick<Watch, 'state' | 'lastFailure' | 'recovered'>): number | null {
  const f = w.lastFailure;
  if (!f || w.recovered.includes(f.turnId)) return null;
  const s = scheduledOf(w.state) ?? w.state;
  const ours =
    s.kind === 'usageLimited' ? s.resetsAt === null : s.kind === 'backoff' || f.code !== 'usageLimitExceeded';
  return ours ? f.dueAt : null;
}

/** Whether the engine is waiting to re-activate this thread's goal. */
export function isScheduled(state: WatchState): boolean {
  return scheduledOf(state) !== null;
}

/**
 * Whether "Retry now" applies: a recovery is scheduled, the engine gave up on a failure (or its
 * budget was spent when one fell due), or the daemon has not loaded a thread whose failure is not
 * recovered yet (after a daemon restart it loads none): the retry loads it first.
 */
export function canRetryNow(w: Watch): boolean {
  const k = w.state.kind;
  if (k === 'backoff' || k === 'usageLimited' || k === 'waitingSlot' || k === 'waitingProbe') return true;
  if (k === 'gaveUp' || k === 'budgetSpent') return w.lastFailure !== null;
  if (k === 'elsewhere') return w.state.retryable;
  return waitsForLoad(w);
}

/**
 * A goal stopped by a failure not recovered yet, on a thread the daemon has not loaded: it waits
 * for a client to open the thread, or for "Retry now" (which loads it).
 */
export function waitsForLoad(w: Watch): boolean {
  const f = w.lastFailure;
  const stopped = w.goal?.status === 'blocked' || w.goal?.status === 'usageLimited';
  return w.state.kind === 'unloaded' && f !== null && !w.recovered.includes(f.turnId) && stopped;
}

/** Whether "Pause goal" applies: the goal is active, or stopped by a failure or a usage limit. */
export function canPauseGoal(w: Watch): boolean {
  return w.goal?.status === 'active' || w.goal?.status === 'blocked' || w.goal?.status === 'usageLimited';
}

/** States in which the thread is out of the engine's hands until a person acts. */
export function isDisarmed(state: WatchState): boolean {
  return state.kind === 'userIntent' || state.kind === 'disarmed';
}

/**
 * Why a goal waits for a person, or null when it does not: the one answer for the view's badge,
 * the status bar, the tree's order, `status`'s exit code and Copy Diagnostics.
 * - `attention`: a failure re-activation cannot fix, a goal the engine gave up on, a spent budget;
 * - `beforeArming`: a failure older than the arming (resume it in Codex);
 * - `load`: a failed goal on a thread the daemon has not loaded (Retry now loads it);
 * - `elsewhere`: a goal stopped in another Codex app.
 */
export type PersonWait = 'attention' | 'beforeArming' | 'load' | 'elsewhere';

export function personWait(w: Watch): PersonWait | null {
  const s = w.state;
  switch (s.kind) {
    case 'needsAttention':
    case 'gaveUp':
    case 'budgetSpent':
      return 'attention';
    case 'failedBeforeArming':
      return 'beforeArming';
    case 'unloaded':
      return waitsForLoad(w) ? 'load' : null;
    case 'elsewhere':
      return s.goal === 'blocked' || s.goal === 'usageLimited' ? 'elsewhere' : null;
    default:
      return null;
  }
}

/** Whether the goal waits for a person (`personWait`). */
export function needsPerson(w: Watch): boolean {
  return personWait(w) !== null;
}
