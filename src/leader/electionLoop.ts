// Runs attempts until one decides, one election at a time.
//
// Elections run on one Serial (src/util/serial.ts): one of a newer generation (a start after a
// stop) waits until the older one has wound down (it gives up at its next step); two calls for
// the same generation share one election. Between attempts it pauses as the attempt asked, but
// once QUICK_RETRIES quick retries (asked for sooner than `retryMs`) were made, each further quick
// one waits `retryMs`; a stop cuts the pause short.
import { Serial } from '../util/serial';
import { retryIn, type Outcome } from './electionAttempt';
import type { Log } from './emitter';

/**
 * After this many quick retries (sooner than `retryMs`), an election's quick retries wait `retryMs`.
 * Slow retries (a busy leader's) do not count: a takeover after a long busy spell is still quick.
 */
export const QUICK_RETRIES = 50;

/** `G`: a generation, compared for identity only (generation.ts). */
export interface ElectionLoopOptions<G> {
  /** Delay after an inconclusive attempt, and the pace once quick retries are used up. */
  retryMs: number;
  log: Log;
  /** The election of generation `gen` still has a reason to run (started and not superseded). */
  live(gen: G): boolean;
  attempt(gen: G): Promise<Outcome>;
}

export class ElectionLoop<G> {
  private readonly elections = new Serial();
  /** The election of the newest generation asked for, until it settles. */
  private latest: { gen: G; done: Promise<void> } | undefined;
  /** Ends the current pause early (stop). */
  private wake: (() => void) | undefined;

  constructor(private readonly opts: ElectionLoopOptions<G>) {}

  /** Nothing runs and nothing waits. */
  get idle(): boolean {
    return this.elections.idle;
  }

  /**
   * Runs attempts for generation `gen` until one decides; single flight per generation.
   * `throwErrors`: an attempt's error ends the election with that error (else it is logged and
   * tried again).
   */
  run(gen: G, throwErrors: boolean): Promise<void> {
    if (this.latest?.gen === gen) return this.latest.done;
    const done = this.elections.run(() => this.elect(gen, throwErrors));
    const entry = { gen, done };
    this.latest = entry;
    const clear = () => {
      if (this.latest === entry) this.latest = undefined;
    };
    done.then(clear, clear);
    return done;
  }

  /** Resolves once every election asked for so far has settled. */
  drained(): Promise<void> {
    return this.elections.drained();
  }

  /** Ends the current pause now. */
  wakeUp(): void {
    this.wake?.();
  }

  private async elect(gen: G, throwErrors: boolean): Promise<void> {
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
      const slowDown = outcome.delayMs < retryMs && ++quick > QUICK_RETRIES;
      await this.pause(slowDown ? retryMs : outcome.delayMs);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      // Left in `wake` once over: calling it again does nothing.
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
