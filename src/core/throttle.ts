// Calls `fn` at most once per `ms`, and always after the last poke. Counted on the monotonic
// clock: the wall clock set back (by a person, by NTP) must not hold the views and the
// broadcasts back for as long as it jumped.
import { performance } from 'node:perf_hooks';

export class Throttle {
  private timer: NodeJS.Timeout | null = null;
  /** When `fn` last ran (monotonic ms), or never. */
  private last = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly ms: number,
    private readonly fn: () => void,
    private readonly monotonic: () => number = () => performance.now(),
  ) {}

  poke(): void {
    if (this.timer) return;
    const wait = Math.min(this.ms, Math.max(0, this.last + this.ms - this.monotonic()));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.last = this.monotonic();
      this.fn();
    }, wait);
  }

  dispose(): void {
    clearTimeout(this.timer ?? undefined);
    this.timer = null;
  }
}
