// Backoff per goal: nominal min(cap, base·2^(n−1)) for the n-th consecutive failure,
// with equal jitter (between half and all of it).

export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
}

/** A number in [0, 1): injectable so tests and benchmarks are repeatable. */
export type Random = () => number;

export function nominalDelay(policy: BackoffPolicy, failure: number): number {
  const n = Math.max(1, failure);
  // 2^(n-1) overflows to Infinity long before it matters; min() keeps it at the cap.
  return Math.min(policy.capMs, policy.baseMs * 2 ** (n - 1));
}

/** Equal jitter: half the nominal delay, plus a random part of the other half. */
export function jitteredDelay(policy: BackoffPolicy, failure: number, random: Random): number {
  const nominal = nominalDelay(policy, failure);
  const half = nominal / 2;
  return Math.round(half + half * clamp01(random()));
}

function clamp01(x: number): number {
  return Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 1;
}
