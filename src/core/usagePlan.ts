// When a new usage limit is resumed, or that it never is on a timer: the decision table's row
// for a usage limit not scheduled yet (`decide` answers `readReset`; the engine gathers the
// sources, then asks here). Pure, like policy.ts: no I/O, no clock reads, no `await`.
import type { EngineOptions } from './options';
import { usageDue } from './stepRules';
import { type LimitReading, windowWords } from './rateLimits';

/** What the engine found out about a new usage limit, best source first. */
export interface UsageSources {
  /**
   * The rate limits the thread's rollout holds for the failed turn (null: no such line, or it told
   * nothing). Its own, unlike the notice; the engine passes no notice when the rollout has the line.
   */
  readonly rollout?: LimitReading | null;
  /** `account/rateLimits/updated`, sent just before the goal turned `usageLimited` (null: none, or it told nothing). */
  readonly notice: LimitReading | null;
  /** `account/rateLimits/read` (null: not read, failed, or it told nothing). */
  readonly read: LimitReading | null;
  /** The latest the reset named in the turn's error message can be (`resetFromMessage`). */
  readonly message: number | null;
  /** A limit no reset clears, as the error message alone names it (`untimedFromMessage`), or null. */
  readonly messageLimit?: LimitReading | null;
}

export type UsagePlan =
  /** Resume at `dueAt`: the reset (`resetsAt`, null: unknown) plus the margin; `source` says whence. */
  | { act: 'resume'; dueAt: number; resetsAt: number | null; source: string }
  /** A limit no reset clears: never scheduled, a person's call. */
  | { act: 'attention'; code: string; message: string };

/**
 * When a new usage limit is resumed: from the first source that knows (the thread's rollout, the
 * notification, then the read, then the message's minute); a reached type no timer clears (credits depleted, a
 * spend cap, one not known) is never scheduled. A reset already past tells nothing.
 */
export function usagePlan(s: UsageSources, now: number, options: Readonly<EngineOptions>): UsagePlan {
  for (const [reading, from] of [
    [s.rollout ?? null, "the thread's rollout"],
    [s.notice, "the daemon's rate-limit update"],
    [s.read, "the account's rate limits"],
  ] as const) {
    if (reading?.kind === 'untimed') return { act: 'attention', code: reading.code, message: reading.message };
    if (reading?.kind === 'reset' && reading.at > now)
      return {
        act: 'resume',
        dueAt: usageDue(now, reading.at, options),
        resetsAt: reading.at,
        source: `${from} (${windowWords(reading.windowMins)} window)`,
      };
  }
  if (s.messageLimit?.kind === 'untimed')
    return { act: 'attention', code: s.messageLimit.code, message: s.messageLimit.message };
  // No reset named (null) reads as 0: long past.
  if (Number(s.message) > now)
    return {
      act: 'resume',
      dueAt: usageDue(now, s.message, options),
      resetsAt: s.message,
      source: 'the error message (the end of the minute it names)',
    };
  return { act: 'resume', dueAt: usageDue(now, null, options), resetsAt: null, source: 'no reset known' };
}
