// What the daemon's rate-limit snapshots say about a usage limit: when it resets, or that no
// reset clears it. Pure. The snapshots come from `account/rateLimits/updated` (sent just before
// the goal turns `usageLimited`, on the connections subscribed to the thread, when the provider's
// 429 carried the `x-codex-*` rate-limit headers: docs/daemon-behaviour.md (o)) or from
// `account/rateLimits/read` (needs a Codex account).
import type { GoalStatus } from '../model/watch';
import type { RateLimitSnapshot, RateLimitWindow } from '../protocol/schema';

/**
 * How long before a goal's `usageLimited` update a rate-limit notification still counts as that
 * limit's evidence. The daemon sends it just before the goal update on the same connection
 * (measured: the frame right before it, in the same millisecond, docs/daemon-behaviour.md (o)),
 * and every 429 sends one (all fields null when the provider sent no headers), so the one right
 * before is the limit's own; the bound only keeps a notification from an older request, when
 * this one sent none to this connection (a thread it is not subscribed to), from counting.
 */
export const LIMIT_NOTICE_MS = 5_000;

/**
 * A usage limit's evidence when the goal's status is told (`thread/goal/updated`): for a
 * `usageLimited` goal, the notice right before the update (within LIMIT_NOTICE_MS); a later update
 * of the same limit (another client's resume re-sends the goal) keeps what it had; any other
 * status drops it.
 */
export function limitEvidence<N extends { readonly at: number }>(
  status: GoalStatus,
  kept: N | null,
  latest: N | null,
  now: number,
): N | null {
  if (status !== 'usageLimited') return null;
  return latest !== null && now - latest.at <= LIMIT_NOTICE_MS ? latest : kept;
}

/** What a reading tells: the reset to wait for, or a limit that no timer clears. */
export type LimitReading =
  { kind: 'reset'; at: number; windowMins: number | null } | { kind: 'untimed'; code: UntimedCode; message: string };

/** Limits no reset time clears: a person must act (add credits, raise the cap). */
export const UNTIMED_CODES = ['creditsDepleted', 'spendCapReached', 'unknownUsageLimit'] as const;
export type UntimedCode = (typeof UNTIMED_CODES)[number];

export function isUntimedCode(code: string): code is UntimedCode {
  return (UNTIMED_CODES as readonly string[]).includes(code);
}

/** The one `rateLimitReachedType` a reset clears; every other (and any unknown one) does not. */
const TIMED_TYPE = 'rate_limit_reached';

/**
 * The reading of some snapshots received at `arrivedAt` (ms), or null when they tell nothing
 * (no exhausted window, or one whose reset is unknown and unbounded). A reached type other than
 * `rate_limit_reached`, or a spend control reached, wins: it never clears on a timer. A window's
 * slot says nothing (some accounts carry the weekly window as `primary`, or have no `secondary`):
 * among exhausted windows (used >= 100 %), of any slot and snapshot, the latest reset wins, the
 * same window read twice included; an exhausted window with no reset is bounded by its length.
 */
export function readLimit(snapshots: readonly RateLimitSnapshot[], arrivedAt: number): LimitReading | null {
  for (const s of snapshots) {
    const type = s.rateLimitReachedType ?? null;
    if (type !== null && type !== TIMED_TYPE) return untimed(type);
    if (s.spendControlReached === true) return untimed('spend_control_reached');
  }
  let best: { at: number; mins: number | null } | null = null;
  for (const s of snapshots) {
    for (const w of [s.primary, s.secondary]) {
      if (!w || w.usedPercent < 100) continue;
      const at = resetOf(w, arrivedAt);
      if (at === null) return null; // an exhausted window whose reset is unknown: not this source's to say
      // The latest reset wins; at the same instant, the first window read names it.
      if (best === null || at > best.at) best = { at, mins: w.windowDurationMins ?? null };
    }
  }
  return best && { kind: 'reset', at: best.at, windowMins: best.mins };
}

/** An exhausted window's reset (ms): its `resetsAt`, else at most its length after the snapshot. */
function resetOf(w: RateLimitWindow, arrivedAt: number): number | null {
  if (w.resetsAt != null) return w.resetsAt * 1000;
  return w.windowDurationMins != null ? arrivedAt + w.windowDurationMins * 60_000 : null;
}

function untimed(type: string): LimitReading {
  if (/credits_depleted/.test(type))
    return {
      kind: 'untimed',
      code: 'creditsDepleted',
      message: `out of credits (${type}): no reset clears it; add credits, then resume the goal`,
    };
  if (/usage_limit_reached|spend_control/.test(type))
    return {
      kind: 'untimed',
      code: 'spendCapReached',
      message: `spend cap reached (${type}): no reset clears it; raise the cap, then resume the goal`,
    };
  return {
    kind: 'untimed',
    code: 'unknownUsageLimit',
    message: `usage limit of a kind no reset is known to clear (${type}): resume the goal when it is lifted`,
  };
}

/**
 * What the turn's error message alone says of a limit no reset clears, for when no rate-limit
 * snapshot reached the engine (it was not subscribed to the thread yet: the update goes only to
 * subscribed connections). The texts are Codex's own (0.169.0 and 0.171.0, docs/daemon-behaviour.md
 * (o)): "Your workspace is out of credits. …", "You hit your spend cap set … ". Null otherwise.
 */
export function untimedFromMessage(message: string): LimitReading | null {
  if (/\bout of credits\b/i.test(message))
    return {
      kind: 'untimed',
      code: 'creditsDepleted',
      message: 'out of credits: no reset clears it; add credits, then resume the goal',
    };
  if (/\bspend cap\b/i.test(message))
    return {
      kind: 'untimed',
      code: 'spendCapReached',
      message: 'spend cap reached: no reset clears it; raise the cap, then resume the goal',
    };
  return null;
}

/** A window's length in words: "5-hour", "weekly", "90-minute". */
export function windowWords(mins: number | null): string {
  if (mins === null) return 'rate-limit';
  if (mins === 10_080) return 'weekly';
  if (mins % 1440 === 0) return `${mins / 1440}-day`;
  return mins % 60 === 0 ? `${mins / 60}-hour` : `${mins}-minute`;
}
