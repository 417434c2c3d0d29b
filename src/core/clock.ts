// Time, injected: the real clock in production, a fake one in unit tests and benchmarks.

export interface Clock {
  /** The wall clock (ms since the epoch): what is stored and shown. It can jump, forward or back. */
  now(): number;
  /** Monotonic ms from an arbitrary origin: never jumps. What timers count, and what rates are measured on. */
  elapsed(): number;
  setTimer(callback: () => void, delayMs: number): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

export type TimerHandle = { readonly id: unknown };

export const systemClock: Clock = {
  now: () => Date.now(),
  elapsed: () => performance.now(),
  setTimer(callback, delayMs) {
    const t = setTimeout(callback, Math.max(0, delayMs));
    t.unref?.();
    return { id: t };
  },
  clearTimer(handle) {
    clearTimeout(handle.id as NodeJS.Timeout);
  },
};
