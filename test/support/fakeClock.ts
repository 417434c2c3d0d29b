// A clock for unit tests: time moves only when the test says so.
//
// Two times, like a real machine: the wall clock (`now()`, what `Date.now()` says) and the
// monotonic time that timers count (what `setTimeout` waits on). `advance` moves both;
// `jump` moves only the wall clock (a clock change, or a suspend where the monotonic clock
// stops, as on Linux); `suspend` moves both without firing anything, so every timer that fell
// due during the sleep fires late, at once, on the next `advance` (as on macOS and Windows).
import type { Clock, TimerHandle } from '../../src/core/clock';

interface Pending { id: number; at: number; callback: () => void }

export class FakeClock implements Clock {
  private timers: Pending[] = [];
  private nextId = 1;
  /** Monotonic time (ms): what timers count. */
  private mono = 0;

  constructor(private current = Date.UTC(2026, 10, 30, 12, 0, 0)) {}

  now(): number {
    return this.current;
  }

  setTimer(callback: () => void, delayMs: number): TimerHandle {
    const id = this.nextId++;
    this.timers.push({ id, at: this.mono + Math.max(0, delayMs), callback });
    return { id };
  }

  clearTimer(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle.id);
  }

  /** Monotonic ms since the clock was made: what timers count, unaffected by `jump`. */
  elapsed(): number {
    return this.mono;
  }

  /** Ms (monotonic) until the soonest timer fires, or null when none is set. */
  nextIn(): number | null {
    if (this.timers.length === 0) return null;
    return Math.max(0, Math.min(...this.timers.map((t) => t.at)) - this.mono);
  }

  /** Timers not yet fired, soonest first, as the wall-clock times they will fire at. */
  pending(): number[] {
    return this.timers.map((t) => Math.max(t.at, this.mono) - this.mono + this.current).sort((a, b) => a - b);
  }

  /** Moves time forward, firing every timer that falls due on the way, in order. */
  advance(ms: number): void {
    const end = this.mono + Math.max(0, ms);
    for (;;) {
      const next = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      if (next.at > this.mono) {
        this.current += next.at - this.mono;
        this.mono = next.at;
      }
      next.callback();
    }
    this.current += end - this.mono;
    this.mono = end;
  }

  /** Sets the wall clock (forward or back) without firing anything; timers keep their remaining time. */
  jump(ms: number): void {
    this.current += ms;
  }

  /** A machine asleep for `ms`: both clocks move, nothing fires; what fell due fires on the next `advance`. */
  suspend(ms: number): void {
    this.current += ms;
    this.mono += ms;
  }
}
