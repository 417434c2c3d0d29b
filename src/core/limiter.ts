// A global token bucket, so one outage over many threads does not stampede the
// provider: a burst of `burst` recoveries, then one every `intervalMs` (the shipped numbers and
// why: src/core/options.ts).

export interface LimiterPolicy {
  burst: number;
  intervalMs: number;
}

export class RecoveryLimiter {
  private tokens: number;
  /** When the tokens were last counted: any time will do at first, as the bucket starts full. */
  private updatedAt = 0;

  constructor(private readonly policy: LimiterPolicy) {
    this.tokens = policy.burst;
  }

  /**
   * Takes the next token: 0 when one is free at `now`; otherwise it is kept for the caller (the
   * bucket goes into debt) and the ms until it is due: each caller held gets a slot of its own, one
   * interval after the one before.
   */
  take(now: number): number {
    this.refill(now);
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil(-this.tokens * this.policy.intervalMs);
  }

  /** Gives back a token taken for a recovery that was not sent after all (the next take counts at most the burst). */
  giveBack(): void {
    this.tokens += 1;
  }

  private refill(now: number): void {
    // A wall clock that jumped back adds nothing: time counts on from the new reading.
    const elapsed = Math.max(0, now - this.updatedAt);
    this.tokens = Math.min(this.policy.burst, this.tokens + elapsed / this.policy.intervalMs);
    this.updatedAt = now;
  }
}
