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

  /** Takes a token if one is free at `now` and returns 0; otherwise the ms until one is. */
  take(now: number): number {
    this.refill(now);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - this.tokens) * this.policy.intervalMs);
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
