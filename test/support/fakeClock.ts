// A clock for unit tests: time moves only when the test says so.
import type { Clock, TimerHandle } from '../../src/core/clock';

interface Pending { id: number; at: number; callback: () => void }

export class FakeClock implements Clock {
  private timers: Pending[] = [];
  private nextId = 1;

  constructor(private current = Date.UTC(2026, 10, 30, 12, 0, 0)) {}

  now(): number {
    return this.current;
  }

  setTimer(callback: () => void, delayMs: number): TimerHandle {
    const id = this.nextId++;
    this.timers.push({ id, at: this.current + Math.max(0, delayMs), callback });
    return { id };
  }

  clearTimer(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== handle.id);
  }

  /** Timers not yet fired, soonest first. */
  pending(): number[] {
    return this.timers.map((t) => t.at).sort((a, b) => a - b);
  }

  /** Moves time forward, firing every timer that falls due on the way, in order. */
  advance(ms: number): void {
    const end = this.current + ms;
    for (;;) {
      const next = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.at);
      next.callback();
    }
    this.current = end;
  }

  /** Sets the wall clock without firing anything (a jump, a suspend). */
  jump(ms: number): void {
    this.current += ms;
  }
}
