// A watch's state in words and numbers: the tree's tooltip, the status bar and the runner's
// `status` and `list` say it the same way.
import { describeErrorCode } from './errorCodeText';
import { formatAge, formatClock, formatDuration } from './timeText';
import { dueAt } from './queries';
import type { TurnFailure, Watch, WatchState } from './watch';

/** A short description of a state, in words and numbers: the tree, the status bar and the CLI. */
export function describeState(w: Pick<Watch, 'state' | 'lastFailure'>, now: number, maxAttempts: number): string {
  const state = w.state;
  const due = dueAt(w) ?? now;
  switch (state.kind) {
    case 'running':
      return 'running';
    case 'idle':
      return 'idle';
    case 'waitingApproval':
      return 'waiting for approval';
    case 'codexRetrying':
      return 'Codex is retrying';
    case 'backoff':
      // Past its due time only while something else holds it (the daemon away, the user's pause).
      return due > now
        ? `retry in ${formatDuration(due - now)} · attempt ${state.attempt}/${maxAttempts}`
        : `retry due · attempt ${state.attempt}/${maxAttempts}`;
    case 'waitingSlot':
      return `waiting for a recovery slot · next in ${formatDuration(Math.max(0, state.slotAt - now))}`;
    case 'waitingProbe':
      return `waiting for the probe · ${formatDuration(Math.max(0, now - due))} · attempt ${state.held.attempt}/${maxAttempts}`;
    case 'turnEnding':
      return 'stopped · waiting for its turn to end';
    case 'recovering':
      return 'recovering…';
    case 'usageLimited':
      return `usage limit · resumes ${formatClock(due, now)}`;
    case 'userIntent':
      return state.requested === 'paused' ? 'paused by you' : `disarmed: you set it ${state.requested}`;
    case 'disarmed':
      return 'disarmed';
    case 'paused':
      return 'paused';
    case 'complete':
      return 'complete';
    case 'budgetLimited':
      return 'budget limit reached';
    case 'modelBlocked':
      return 'blocked by the model';
    case 'interrupted':
      return 'interrupted';
    case 'needsAttention':
      return `needs attention: ${describeErrorCode(state.code)}`;
    case 'gaveUp':
      return `gave up after ${state.attempts} tries`;
    case 'budgetSpent':
      return `recovery budget spent: ${state.used} of ${state.limit} in 24 h · next allowed ${formatClock(state.until, now)}`;
    case 'notAdopted':
      return `not adopted (already ${state.status} when first seen)`;
    case 'failedBeforeArming':
      return `stopped before you armed it: ${describeErrorCode(state.code)} · not recovered`;
    case 'unloaded':
      return 'not loaded in the daemon';
    case 'elsewhere':
      return describeElsewhere(state, w.lastFailure, now);
  }
}

/** A goal in another Codex app: what it does there, and for a stopped one, why and since when. */
function describeElsewhere(
  state: Extract<WatchState, { kind: 'elsewhere' }>,
  failure: TurnFailure | null,
  now: number,
): string {
  if (state.goal === 'active') return 'running in another Codex app';
  const what = state.goal === 'usageLimited' ? 'usage limit' : 'blocked';
  if (!failure) return `${what} in another Codex app`;
  return `${what} in another Codex app · ${describeErrorCode(failure.code)}, ${formatAge(now - failure.at)} ago`;
}
