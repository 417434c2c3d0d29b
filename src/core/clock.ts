// Time, injected: the real clock in production, a fake one in unit tests and benchmarks.

export interface Clock {
  now(): number;
  setTimer(callback: () => void, delayMs: number): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

export type TimerHandle = { readonly id: unknown };

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(callback, delayMs) {
    const t = setTimeout(callback, Math.max(0, delayMs));
    t.unref?.();
    return { id: t };
  },
  clearTimer(handle) {
    clearTimeout(handle.id as NodeJS.Timeout);
  },
};
