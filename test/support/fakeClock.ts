// A clock for unit tests: time moves only when the test says so.
//
// Two times, like a real machine: the wall clock (`now()`, what `Date.now()` says) and the
// monotonic time that timers count (what `setTimeout` waits on). `advance` moves both;
// `jump` moves only the wall clock (a clock change, or a suspend where the monotonic clock
// stops, as on Linux); `suspend` moves both without firing anything, so every timer that fell
// due during the sleep fires late, on the next `advance` (as on macOS and Windows).
//
// Real time, not compressed time: `advance` fires one timer at a time and, after each, waits
// for what that timer set in motion (`react`: the in-memory streams deliver, the engine works
// until it is idle) before it looks for the next timer. A timer the engine sets in reaction to an
// earlier one, due before the end, fires within the same advance, at its own time: second-order
// reactions are seen. Await it.
//
// Like Node, the clock keeps no delay it cannot keep: Node fires a timer of more than 2^31-1 ms
// (about 24.8 days) after 1 ms, so such a delay (or one that is not a number) is refused here
// with a thrown RangeError: the product must clamp it and re-arm.
import type { Clock, TimerHandle } from '../../src/core/clock';
import { turns } from './wait';

interface Pending {
  id: number;
  at: number;
  callback: () => void;
}

/** The longest delay Node's `setTimeout` keeps (ms). */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** A timer firing this many times within one `advance` is a spin, not time passing. */
const SPIN_LIMIT = 100_000;

export class FakeClock implements Clock {
  private timers: Pending[] = [];
  private nextId = 1;
  /** Monotonic time (ms): what timers count. */
  private mono = 0;
  /** What runs after each timer `advance` fires (see `onReact`). */
  private readonly reactors = new Set<() => Promise<void>>();

  constructor(private current = Date.UTC(2026, 10, 30, 12, 0, 0)) {}

  now(): number {
    return this.current;
  }

  setTimer(callback: () => void, delayMs: number): TimerHandle {
    if (!(delayMs <= MAX_TIMER_DELAY_MS)) {
      // NaN fails the comparison too: Node takes it for 1 ms as well.
      throw new RangeError(
        `a timer of ${delayMs} ms: Node cannot keep a delay over ${MAX_TIMER_DELAY_MS} ms (it fires after 1 ms)`,
      );
    }
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

  /**
   * What `advance` waits for after each timer it fires (e.g. a harness: streams deliver, its
   * engine is idle). Several may be registered (engines sharing the clock); all run. Returns the
   * unregistration. With none, `advance` waits a few turns of the event loop.
   */
  onReact(reactor: () => Promise<void>): () => void {
    this.reactors.add(reactor);
    return () => this.reactors.delete(reactor);
  }

  /**
   * Moves time forward by `ms`, one timer at a time: the soonest timer due by the end fires (time
   * moves to it first), then the reactors run, then the next one is looked for — including those
   * set meanwhile. The first timer fires before this returns; the rest as the promise runs: await it.
   */
  async advance(ms: number): Promise<void> {
    const end = this.mono + Math.max(0, ms);
    // Before the first await: runs within the call. A callback's throw rejects the promise.
    if (!this.fireNext(end)) return;
    let fired = 1;
    do {
      await this.react();
      if (++fired > SPIN_LIMIT)
        throw new Error(
          `over ${SPIN_LIMIT} timers fired within one advance of ${ms} ms: a timer that re-arms itself without time passing (a spin)`,
        );
    } while (this.fireNext(end));
  }

  /**
   * Fires the soonest timer that is due now (none: false). For a harness's settle loop: a timer
   * set with no delay fires as soon as the loop turns, as a real one would.
   */
  fireDue(): boolean {
    return this.fireNext(this.mono);
  }

  /**
   * One step of time, synchronously: the soonest timer due within `ms` fires (time moves to it
   * first), or, with none, time moves by `ms`. True when a timer fired. For a driver that lets the
   * engine react its own way after each timer (test/support/crashWorld.ts).
   */
  step(ms: number): boolean {
    return this.fireNext(this.mono + Math.max(0, ms));
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

  /** Fires the soonest timer due by `end`, moving time to it; with none, moves time to `end`. */
  private fireNext(end: number): boolean {
    let next: Pending | undefined;
    for (const t of this.timers)
      if (t.at <= end && (!next || t.at < next.at || (t.at === next.at && t.id < next.id))) next = t;
    if (!next) {
      // Never back: another advance may have moved time further meanwhile.
      if (end > this.mono) {
        this.current += end - this.mono;
        this.mono = end;
      }
      return false;
    }
    this.timers = this.timers.filter((t) => t !== next);
    if (next.at > this.mono) {
      this.current += next.at - this.mono;
      this.mono = next.at;
    }
    next.callback();
    return true;
  }

  private async react(): Promise<void> {
    if (this.reactors.size === 0) return turns(10);
    for (const r of [...this.reactors]) await r();
  }
}
