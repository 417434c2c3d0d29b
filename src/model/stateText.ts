// A watch's state in words and numbers: the tree's tooltip, the status bar and the runner's
// `status` and `list` say it the same way.
import { describeErrorCode } from './errorCodeText';
import { formatAge, formatClock, formatDuration } from './timeText';
import { dueAt } from './queries';
import type { TurnFailure, Watch, WatchState, WatchStateKind } from './watch';

/** The states said in the same words whatever else the watch holds. */
const WORDS = {
  running: 'running',
  idle: 'idle',
  waitingApproval: 'waiting for approval',
  codexRetrying: 'Codex is retrying',
  turnEnding: 'stopped · waiting for its turn to end',
  recovering: 'recovering…',
  disarmed: 'disarmed',
  paused: 'paused',
  complete: 'complete',
  budgetLimited: 'budget limit reached',
  modelBlocked: 'blocked by the model',
  interrupted: 'interrupted',
  unloaded: 'not loaded in the daemon',
} as const satisfies Partial<Record<WatchStateKind, string>>;

/** A short description of a state, in words and numbers: the tree, the status bar and the CLI. */
export function describeState(w: Pick<Watch, 'state' | 'lastFailure'>, now: number, maxAttempts: number): string {
  const state = w.state;
  const due = dueAt(w) ?? now;
  switch (state.kind) {
    case 'backoff':
      // Past its due time only while something else holds it (the daemon away, the user's pause).
      return due > now
        ? `retry in ${formatDuration(due - now)} · attempt ${state.attempt}/${maxAttempts}`
        : `retry due · attempt ${state.attempt}/${maxAttempts}`;
    case 'waitingSlot':
      return `waiting for a recovery slot · next in ${formatDuration(Math.max(0, state.slotAt - now))}`;
    case 'waitingProbe':
      return `waiting for the probe · ${formatDuration(Math.max(0, now - due))} · attempt ${state.held.attempt}/${maxAttempts}`;
    case 'usageLimited':
      return `usage limit · resumes ${formatClock(due, now)}`;
    case 'userIntent':
      return state.requested === 'paused' ? 'paused by you' : `disarmed: you set it ${state.requested}`;
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
    case 'elsewhere':
      return describeElsewhere(state, w.lastFailure, now);
    default:
      return WORDS[state.kind];
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
