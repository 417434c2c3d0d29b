// The clock guard. Every engine timer goes through here, so each firing first checks the wall
// clock against the monotonic one. A jump forward (or a suspend) is taken as time that passed:
// what fell due is due, and the limiter, which counts monotonic time, spreads it. A jump back
// would otherwise postpone every scheduled recovery by the size of the jump: it is undone
// instead (docs/reliability.md, "The clock").
import { formatDuration, type EngineState } from '../model/watch';
import { delayDueAt, scheduledOf } from '../model/queries';
import type { TimerHandle } from './clock';
import type { EngineCore } from './engineCore';
import { dueAtIs } from './watchWrites';

/** Wall-clock vs monotonic drift below this is NTP slewing or timer slack, not a jump. */
const CLOCK_JUMP_TOLERANCE_MS = 2_000;

/**
 * The longest delay a timer is given. Node keeps none over 2^31-1 ms (about 24.8 days): it fires
 * such a timer after 1 ms, so a recovery due later (a usage reset weeks out, a large backoff cap)
 * re-armed its timer every millisecond. Clamped, it fires early, finds nothing due and is set
 * again for what is left.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class ClockGuard {
  /** Both clocks read together at the last look: a wall-clock jump shows as a difference of their deltas. */
  private ref: { wall: number; mono: number } | null = null;

  constructor(private readonly core: EngineCore) {}

  /** A timer of the engine's: the clock is checked before `callback` runs; never longer than Node keeps. */
  setTimer(callback: () => void, delayMs: number): TimerHandle {
    return this.core.deps.clock.setTimer(
      () => {
        this.check();
        callback();
      },
      Math.min(delayMs, MAX_TIMER_MS),
    );
  }

  clearTimer(handle: TimerHandle): void {
    this.core.deps.clock.clearTimer(handle);
  }

  /** At start: a time this engine stored is in the future when the wall clock went back while it was stopped. */
  started(): void {
    const behind = latestRecorded(this.core.state) - this.core.now();
    if (behind > CLOCK_JUMP_TOLERANCE_MS) this.wentBack(behind, 'since the state was saved');
    const clock = this.core.deps.clock;
    this.ref = { wall: clock.now(), mono: clock.elapsed() };
  }

  private check(): void {
    const clock = this.core.deps.clock;
    const wall = clock.now();
    const mono = clock.elapsed();
    const ref = this.ref;
    this.ref = { wall, mono };
    if (!ref || this.core.stopped) return;
    const skew = wall - ref.wall - (mono - ref.mono);
    if (skew < -CLOCK_JUMP_TOLERANCE_MS) this.wentBack(-skew, 'while running');
    // Forward (a suspend): time that passed; what fell due goes with the next due job.
    else if (skew > CLOCK_JUMP_TOLERANCE_MS) this.core.schedule.jumpedForward();
  }

  /**
   * The wall clock went back by `ms`: move every delay the engine chose (backoffs, and a usage
   * limit whose reset time is unknown) back with it, so each keeps the real time it had left.
   * A reset time the provider gave is a point in time, not a delay: it stays.
   */
  private wentBack(ms: number, when: string): void {
    const core = this.core;
    let moved = 0;
    for (const w of core.watches()) {
      const dueAt = delayDueAt(w);
      if (dueAt === null) continue;
      dueAtIs(w, dueAt - ms);
      core.mark(w.threadId);
      if (scheduledOf(w.state)) moved += 1;
    }
    core.emit({
      type: 'warning',
      message: `the wall clock went back by ${formatDuration(ms)} ${when}; ${moved} scheduled ${moved === 1 ? 'recovery keeps' : 'recoveries keep'} the time it had left`,
    });
    core.reschedule();
    core.changed();
    void core.persist();
  }
}

/** The newest wall-clock time this engine wrote into the state. */
function latestRecorded(state: EngineState): number {
  let latest = state.pausedAt ?? 0;
  for (const at of Object.values(state.disarmed)) latest = Math.max(latest, at);
  for (const w of Object.values(state.watches)) {
    latest = Math.max(
      latest,
      w.armedAt,
      w.updatedAt,
      w.lastFailure?.at ?? 0,
      w.pending?.sentAt ?? 0,
      w.history.at(-1)?.at ?? 0,
    );
  }
  return latest;
}
