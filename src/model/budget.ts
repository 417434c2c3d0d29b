// The recovery budget: at most `recoveryBudget` automatic recoveries of one goal in a rolling 24 h.
// A watch keeps when each of its automatic sets went out (`recoveries`, with the write-ahead
// intent), pruned to the window and bounded; src/core/policy.ts reads how many fall in it now.

/** What the budget reads and writes of a watch: when its automatic sets went out. */
interface Recoveries {
  readonly recoveries: readonly number[];
}

/** The rolling window the budget counts in. */
export const BUDGET_WINDOW_MS = 24 * 60 * 60_000;
/**
 * At most this many times are kept (the newest): more than the largest budget a setting allows
 * (200), so a count that reached it is past any budget, while a watch's record stays bounded.
 */
export const RECOVERIES_KEPT = 256;

/** The automatic recoveries of a watch in the window ending at `now`, oldest first. */
export function recoveriesIn(w: Readonly<Recoveries>, now: number): number[] {
  return w.recoveries.filter((at) => at > now - BUDGET_WINDOW_MS);
}

/** How much of the budget is used at `now`, and when the oldest counted recovery leaves the window. */
export function budgetUse(w: Readonly<Recoveries>, now: number): { used: number; until: number | null } {
  const times = recoveriesIn(w, now);
  return { used: times.length, until: times.length > 0 ? Math.min(...times) + BUDGET_WINDOW_MS : null };
}

/** An automatic set goes out at `at` (its write-ahead): counted, the window pruned, the record bounded. */
export function countedAt(w: Readonly<Recoveries>, at: number): number[] {
  return [...recoveriesIn(w, at), at].slice(-RECOVERIES_KEPT);
}

/** A set withdrawn before it went out (called off after its write-ahead): its count is taken back. */
export function uncountedAt(w: Readonly<Recoveries>, at: number): number[] {
  const i = w.recoveries.lastIndexOf(at);
  return i < 0 ? [...w.recoveries] : [...w.recoveries.slice(0, i), ...w.recoveries.slice(i + 1)];
}
