// The engine's tunables, with the defaults the product ships.

export interface EngineOptions {
  /** Backoff base: the first recovery waits between half and all of it. */
  baseDelayMs: number;
  /** Backoff cap. Also the wait for a usage limit whose reset time is unknown. */
  maxDelayMs: number;
  /** Consecutive failed recoveries before giving up ("needs attention"). */
  maxAttempts: number;
  /**
   * Automatic recoveries of one goal in a rolling 24 h before it waits for a person
   * (`budgetSpent`). Shipped: 12, twice what one outage can take with the shipped backoff (6
   * attempts, the last within 31.5 min of the failure): a goal gets through two outages that
   * outlast every attempt, or a dozen short ones, in a day; a provider that fails it all day long
   * costs at most 12 extra turns (12 times its context as input) per goal per day, not 6 an outage.
   */
  recoveryBudget: number;
  /**
   * Global limiter: this many recoveries at once, then one per `limiterIntervalMs`. Shipped: 3,
   * then one per 5 s. A stampede stays spread (100 goals blocked by one outage: 3 at once, then
   * one every 5 s, about 8 min for all), and the sustained rate (6 per 30 s) keeps up with a
   * provider that fails a few busy goals every 30 s (one per 10 s fell behind 4: test/bench/soak.ts).
   */
  limiterBurst: number;
  limiterIntervalMs: number;
  /** Slow resync that catches what notifications missed (e.g. after a daemon restart). */
  resyncMs: number;
  /** Added to a usage-limit reset time before the goal is resumed. */
  usageMarginMs: number;
  /** Resume `usageLimited` goals after the reset. */
  recoverUsageLimited: boolean;
  /**
   * Arm goals seen active. When false, a new goal is shown as `notAdopted` and never armed by the
   * engine; threads already watched stay armed (Disarm and Re-arm still apply to them).
   */
  autoArm: boolean;
  /**
   * A recovery is prepared this long before it is due: fresh reads, the checks and the
   * write-ahead save happen first, and the set goes out at the due time after a last check
   * that nothing happened to the thread meanwhile. 0: everything starts at the due time.
   */
  prepareMs: number;
  /**
   * One outage, one probe (src/core/outage.ts). Always on in the product: off only in the bench's
   * `outage-cost` baseline, which measures today's per-goal schedule beside it.
   */
  groupOutages: boolean;
  /** Reconnect backoff after the daemon's socket is missing or closes. */
  reconnectBaseMs: number;
  reconnectMaxMs: number;
}

export const DEFAULT_OPTIONS: EngineOptions = {
  baseDelayMs: 30_000,
  maxDelayMs: 30 * 60_000,
  maxAttempts: 6,
  recoveryBudget: 12,
  limiterBurst: 3,
  limiterIntervalMs: 5_000,
  resyncMs: 60_000,
  usageMarginMs: 60_000,
  recoverUsageLimited: true,
  autoArm: true,
  prepareMs: 200,
  groupOutages: true,
  reconnectBaseMs: 500,
  reconnectMaxMs: 30_000,
};

/**
 * The range of each policy number a person can set: the extension's settings (the manifest's
 * `minimum` and `maximum`, which a value outside is clamped into) and the runner's flags (a value
 * outside is a usage error) share it.
 */
export const POLICY_LIMITS = {
  baseDelaySeconds: { min: 0.1, max: 3_600 },
  maxDelaySeconds: { min: 0.1, max: 86_400 },
  maxAttempts: { min: 1, max: 100 },
  recoveryBudget: { min: 1, max: 200 },
  resyncIntervalSeconds: { min: 1, max: 3_600 },
} as const;
