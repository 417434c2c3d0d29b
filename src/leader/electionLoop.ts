// Runs attempts until one decides, one election at a time.
//
// An election of a newer generation (a start after a stop) waits until the older one has wound
// down (it gives up at its next step); two calls for the same generation share one election.
// Between attempts it pauses (quick retries are bounded, then slow down); a stop cuts the pause
// short.
import { retryIn, type Outcome } from './attempt';
import type { Log } from './emitter';

export interface ElectionLoopOptions {
  /** Delay after an inconclusive attempt, and the pace once quick retries are used up. */
  retryMs: number;
  log: Log;
  /** The election of generation `gen` still has a reason to run (started and not superseded). */
  live(gen: number): boolean;
  attempt(gen: number): Promise<Outcome>;
}

export class ElectionLoop {
  private electing: Promise<void> | undefined;
  private electingGen = 0;
  /** Ends the current pause early (stop). */
  private wake: (() => void) | undefined;

  constructor(private readonly opts: ElectionLoopOptions) {}

  /** The election running now, if any. */
  get current(): Promise<void> | undefined {
    return this.electing;
  }

  /**
   * Runs attempts for generation `gen` until one decides; single flight per generation.
   * `throwErrors`: an attempt's error ends the election with that error (else it is logged and
   * tried again).
   */
  run(gen: number, throwErrors: boolean): Promise<void> {
    if (this.electing) {
      if (this.electingGen === gen) return this.electing;
      // One of an older generation is winding down (it gives up at its next step).
      const next = () => this.run(gen, throwErrors);
      return this.electing.then(next, next);
    }
    this.electingGen = gen;
    const run = this.elect(gen, throwErrors);
    this.electing = run;
    const clear = () => {
      if (this.electing === run) this.electing = undefined;
    };
    run.then(clear, clear);
    return run;
  }

  /** Ends the current pause now. */
  wakeUp(): void {
    this.wake?.();
  }

  private async elect(gen: number, throwErrors: boolean): Promise<void> {
    const { retryMs, log } = this.opts;
    let quick = 0;
    while (this.opts.live(gen)) {
      let outcome: Outcome;
      try {
        outcome = await this.opts.attempt(gen);
      } catch (e) {
        if (throwErrors) throw e;
        log(`leader election: attempt failed: ${(e as Error).message}; retrying in ${retryMs} ms`);
        outcome = retryIn(retryMs);
      }
      if (outcome.done) return;
      // Quick retries (lock busy, path changed under us) are bounded, then slow down.
      let delay = outcome.delayMs;
      if (delay < retryMs && ++quick > 50) delay = retryMs;
      await this.pause(delay);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
