// A global token bucket, so one outage over many threads does not stampede the
// provider: a burst of `burst` recoveries, then one every `intervalMs` (the shipped numbers and
// why: src/core/options.ts).
//
// The bucket counts sets as they go out (`spend`): that is the rule the provider and the daemon
// see. A recovery takes its token when its turn comes (`take`), before its reads and its saved
// intent: the tokens taken and not yet spent are owed, so the turns that come meanwhile see them
// gone, and one not spent after all is given back. Counted at the take instead, a token whose set
// went out late (its reads slow, its connection stalled) would let the bucket refill to its burst
// meanwhile, and the late set would go out on top of a full burst.

export interface LimiterPolicy {
  burst: number;
  intervalMs: number;
}

export class RecoveryLimiter {
  /** The bucket as the sets that went out left it. */
  private tokens: number;
  /** When the tokens were last counted: any time will do at first, as the bucket starts full. */
  private updatedAt = 0;
  /** The threads that took a token and have not spent it (their set not out yet) nor given it back. */
  private readonly owed = new Set<string>();

  constructor(private readonly policy: LimiterPolicy) {
    this.tokens = policy.burst;
  }

  /**
   * Takes the next token for `key`: 0 when one is free at `now`; otherwise it is kept for the caller
   * (the bucket goes into debt) and the ms until it is due: each caller held gets a slot of its own,
   * one interval after the one before.
   */
  take(now: number, key: string): number {
    this.refill(now);
    this.owed.add(key);
    const left = this.tokens - this.owed.size;
    return left >= 0 ? 0 : Math.ceil(-left * this.policy.intervalMs);
  }

  /**
   * The set of `key` goes out now: its token is spent, 0. Or the ms until the bucket holds one
   * (sets that took their tokens after this one went out before it): nothing is spent yet.
   */
  spend(now: number, key: string): number {
    this.refill(now);
    if (this.tokens < 1) return Math.ceil((1 - this.tokens) * this.policy.intervalMs);
    this.tokens -= 1;
    this.owed.delete(key);
    return 0;
  }

  /** Gives back the token `key` took for a recovery that will not be sent (none taken: nothing). */
  giveBack(key: string): void {
    this.owed.delete(key);
  }

  private refill(now: number): void {
    // A wall clock that jumped back adds nothing: time counts on from the new reading.
    const elapsed = Math.max(0, now - this.updatedAt);
    this.tokens = Math.min(this.policy.burst, this.tokens + elapsed / this.policy.intervalMs);
    this.updatedAt = now;
  }
}
