// The decision table's rows for a goal outside the daemon (docs/architecture.md, "Goals in other
// Codex apps"): shown, never set or resumed by the engine; pure functions, as in policy.ts.
import { describeErrorCode, type GoalStatus, type TurnFailure, type WatchState } from '../model/watch';
import { classifyFailure, describeErrorInfo } from './classify';
import type { LiveThread } from './live';
import type { EngineOptions } from './options';
import { turnUnended } from './policy';

/** The state of a goal outside the daemon (`elsewhere`). */
export type ElsewhereState = Extract<WatchState, { kind: 'elsewhere' }>;

/** What the look at the Codex home knows of a goal in a thread the daemon has not loaded. */
export interface ElsewhereFacts {
  /** The watch's state, if the engine knows the thread already. */
  readonly previous: Readonly<WatchState> | null;
  readonly goal: GoalStatus;
  /** Its newest turn: read only for a stopped goal (null: none read, or none yet). */
  readonly turn: Readonly<LiveThread['turn']>;
  /** The thread's status as listed (`notLoaded`, mostly): whether the turn read has ended, as in the daemon's rows. */
  readonly status: LiveThread['status'];
  /** The failed turn the watch already knows (and told about), if any. */
  readonly knownFailure: string | null;
  /** Failed turns recovered already. */
  readonly recovered: readonly string[];
  readonly now: number;
}

export type ElsewhereVerdict =
  /** The engine watches the thread in the daemon: its own rows decide, not these. */
  | { act: 'leave'; why: string }
  /** Nothing to show any more (paused, complete, over budget there): the watch goes. */
  | { act: 'forget'; why: string }
  /**
   * Show it `elsewhere`. `failure`: the failed turn that stopped it (undefined: unchanged);
   * `announce`: a failed turn not told about yet (said once, per the notifications setting).
   */
  | { act: 'show'; state: ElsewhereState; failure?: TurnFailure | null; announce: boolean; why: string };

/**
 * A goal in a thread another Codex app holds (measured, docs/daemon-behaviour.md (k)): the
 * daemon reads it but cannot run it, a set from the daemon only writes the state DB, and a
 * resume is refused while that app holds the thread. So it is shown, never set or resumed;
 * a stopped goal says why, and a failure a retry can get past offers "Retry now", which loads
 * the thread into the daemon when the other app has let go.
 */
export function elsewhere(f: ElsewhereFacts): ElsewhereVerdict {
  const prev = f.previous;
  if (prev && prev.kind !== 'elsewhere') return { act: 'leave', why: 'watched in the daemon' };
  const since = prev?.since ?? f.now;
  const seenActive = (prev?.seenActive ?? false) || f.goal === 'active';
  const retryAsked = prev?.retryAsked ?? null;
  const state = (retryable: boolean): ElsewhereState => ({
    kind: 'elsewhere',
    since,
    goal: f.goal,
    seenActive,
    retryable,
    ...(retryAsked ? { retryAsked } : {}),
  });
  switch (f.goal) {
    case 'paused':
    case 'complete':
    case 'budgetLimited':
      return { act: 'forget', why: `the goal is ${f.goal} in another Codex app` };
    case 'active':
      return { act: 'show', state: state(false), failure: null, announce: false, why: 'running in another Codex app' };
  }
  // Blocked or usage-limited: its newest turn tells why.
  const turn = f.turn;
  // Codex blocks the goal before its turn ends: the end decides (at the next look).
  if (!turn || turnUnended(turn, f.status))
    return { act: 'show', state: state(false), announce: false, why: 'the failed turn has not ended yet' };
  if (turn.status !== 'failed')
    return {
      act: 'show',
      state: state(false),
      failure: null,
      announce: false,
      why: `stopped there after a ${turn.status} turn (not a failure)`,
    };
  const info = turn.error?.codexErrorInfo ?? null;
  const message = turn.error?.message ?? 'turn failed';
  const { code, httpStatus } = describeErrorInfo(info);
  const kind = classifyFailure(info, message).kind;
  const retryable = kind !== 'permanent' && !f.recovered.includes(turn.id);
  const failure: TurnFailure = { turnId: turn.id, message, code, httpStatus, at: f.now, dueAt: null };
  const known = f.knownFailure === turn.id;
  return {
    act: 'show',
    state: state(retryable),
    ...(known ? {} : { failure }),
    announce: !known,
    why: `${describeErrorCode(code)} in another Codex app (${message})`,
  };
}

/**
 * A thread shown `elsewhere` is now loaded in the daemon (a person opened it in a client of the
 * daemon): the daemon's rows take over. Armed if its goal is active, or if it was seen active
 * there before it stopped (the block is not an old one: the usual adoption rule); else left
 * unadopted, as an old block (TestOldBlocked).
 */
export function adoptsFromElsewhere(
  state: ElsewhereState,
  goal: GoalStatus,
  options: Readonly<EngineOptions>,
): boolean {
  if (!options.autoArm) return false;
  return goal === 'active' || (state.seenActive && (goal === 'blocked' || goal === 'usageLimited'));
}

/**
 * A goal shown `elsewhere`, loaded in the daemon now, for which the person pressed Retry now and
 * the engine stopped before it saved the takeover (the load took effect): the takeover is carried
 * out, for the very failed turn the person retried, if the goal is still stopped by it.
 */
export function resumesRetry(
  state: ElsewhereState,
  goal: GoalStatus,
  failedTurnId: string | null,
): goal is 'blocked' | 'usageLimited' {
  const asked = state.retryAsked;
  if (!asked || failedTurnId !== asked.failedTurnId) return false;
  return goal === 'blocked' || goal === 'usageLimited';
}
