// The schedule: one timer at the soonest due time (no polling), a recovery prepared a little
// ahead of it, the probe of an outage first (probes.ts), and the hand-off to the global limiter
// (a burst, then one per interval). A recovery that is due but held by the limiter shows as
// `waitingSlot`, with when its turn is expected, instead of a countdown stuck at zero; one held
// for its outage's probe shows as `waitingProbe`.
import { type Watch } from '../model/watch';
import { dueAt } from '../model/queries';
import type { TimerHandle } from './clock';
import type { EngineCore } from './engineCore';
import { RecoveryLimiter } from './limiter';
import type { EngineOptions } from './options';
import { Probes } from './probes';
import { unhold, waitForSlot } from './transitions';

/** However slow the store, a recovery is not prepared more than this early. */
export const MAX_PREPARE_MS = 2_000;

export class Schedule {
  private dueTimer: TimerHandle | null = null;
  private limiter: RecoveryLimiter;
  /** Monotonic time until which the global limiter holds recoveries back, or null. */
  private limitedUntil: number | null = null;
  /** The monotonic time the limiter was last asked about (never goes back). */
  private limiterAt = 0;
  /** The soonest due time, on the monotonic clock, when the due timer was set. */
  private dueNotBeforeMono = 0;
  /** One outage, one probe: the goals of a group wait for the one out first (outage.ts). */
  readonly probes: Probes;

  constructor(private readonly core: EngineCore) {
    this.limiter = newLimiter(core.options);
    this.probes = new Probes(core);
  }

  /** New settings: a new limiter if its policy changed; due times already set stay. */
  updateOptions(previous: EngineOptions): void {
    const o = this.core.options;
    if (o.limiterBurst !== previous.limiterBurst || o.limiterIntervalMs !== previous.limiterIntervalMs)
      this.limiter = newLimiter(o);
  }

  /** The soonest time the engine will act, or null. */
  nextDueAt(): number | null {
    return this.nextAction(0);
  }

  /** How early a recovery is prepared: `prepareMs`, or more when saves are slow (a large state, a busy disk). */
  prepareLead(): number {
    const prepareMs = this.core.options.prepareMs;
    if (prepareMs <= 0) return 0;
    return Math.max(prepareMs, Math.min(MAX_PREPARE_MS, 3 * this.core.saver.slowestMs()));
  }

  reschedule(): void {
    const core = this.core;
    const clock = core.deps.clock;
    if (this.dueTimer) clock.clearTimer(this.dueTimer);
    this.dueTimer = null;
    // Without a session nothing can be sent: a due timer would only fire and re-arm itself at
    // once (a busy loop while the daemon is away). Connecting reschedules.
    if (core.stopped || !core.session) return;
    this.probes.releaseOrphans();
    const now = core.now();
    const soonest = this.soonestDue(); // one pass over the scheduled watches
    const next = this.nextAction(this.prepareLead(), soonest);
    if (next === null || soonest === null) return;
    // The soonest due time on the monotonic clock: a prepared set never goes out before it,
    // even if the wall clock jumps forward meanwhile (that is not time that passed for a timer).
    this.dueNotBeforeMono = clock.elapsed() + Math.max(0, soonest - now);
    this.dueTimer = core.guard.timer(() => this.fire(), Math.max(0, next - now));
  }

  /**
   * A response completed on a thread, to a request sent no earlier than `since`: its provider
   * answers (an outage's probe, probes.ts).
   */
  answered(threadId: string, since: number): void {
    if (!this.probes.answered(threadId, since)) return;
    this.reschedule();
    this.core.saver.persistSoon();
  }

  giveBack(): void {
    this.limiter.giveBack();
  }

  stop(): void {
    if (this.dueTimer) this.core.deps.clock.clearTimer(this.dueTimer);
    this.dueTimer = null;
    this.release();
  }

  /**
   * Nothing is held for a slot or a probe any more (paused, stopping): each recovery shows as
   * scheduled (the next due pass holds again what still waits).
   */
  release(): void {
    let released = 0;
    for (const w of this.core.scheduledWatches()) if (unhold(this.core, w)) released += 1;
    if (released > 0) this.core.changed();
  }

  private fire(): void {
    const core = this.core;
    const clock = core.deps.clock;
    this.dueTimer = null;
    const notBeforeMono = this.dueNotBeforeMono;
    const session = core.session;
    if (core.stopped || core.state.pausedAt !== null || !session) return;
    const now = core.now();
    const due = core
      .scheduledWatches()
      .filter((w) => {
        const d = dueAt(w);
        return d !== null && d <= now + this.prepareLead() && !core.attempting(w.threadId);
      })
      // At one due time (a group's step) the goal with the fewest recent recoveries first: the
      // outage's probe and its half-step tries are spread over the group's recovery budgets.
      .sort(
        (a, b) =>
          dueAt(a)! - dueAt(b)! || a.recoveries.length - b.recoveries.length || (a.threadId < b.threadId ? -1 : 1),
      );
    /** The probe of each group this pass started (or found out), and how many wait for it. */
    const probes = new Map<string, { probe: string; waiting: number }>();
    for (const [i, w] of due.entries()) {
      // One outage, one probe: a due recovery whose group has a probe out waits for its verdict,
      // without a limiter slot.
      const group = this.probes.groupOf(w);
      if (group !== null) {
        const out = probes.get(group) ?? this.found(probes, group);
        if (out !== null) {
          this.probes.hold(w, out.probe);
          out.waiting += 1;
          continue;
        }
      }
      // The limiter counts real elapsed time: a wall-clock jump neither refills nor empties it.
      // It counts sets when they go out: a recovery prepared ahead takes its slot at its due time.
      const mono = clock.elapsed();
      const sendsIn = Math.max(0, dueAt(w)! - now, notBeforeMono - mono);
      this.limiterAt = Math.max(this.limiterAt, mono + sendsIn);
      const wait = this.limiter.take(this.limiterAt);
      if (wait > 0) {
        this.limitedUntil = this.limiterAt + wait;
        core.emit({
          type: 'skipped',
          threadId: w.threadId,
          reason: 'global rate limit',
          detail: `next recovery slot in ${Math.ceil(wait / 1000)} s`,
        });
        this.hold(due.slice(i), now + (this.limitedUntil - mono));
        break;
      }
      this.limitedUntil = null;
      // Under way from here (core.attempting): not due again until its attempt ends.
      void core.work.add(w.threadId, { kind: 'attempt', session, notBeforeMono });
      if (group !== null) {
        probes.set(group, { probe: w.threadId, waiting: 0 });
        this.probes.started(w, group);
      }
    }
    if (probes.size > 0) core.changed();
    this.reschedule();
  }

  private probeBound(probe: string): number | null {
    const until = this.probes.waitedUntil(probe);
    return until === null ? null : until + this.prepareLead();
  }

  /** The probe a group has out already (none started this pass), noted for the rest of the pass. */
  private found(probes: Map<string, { probe: string; waiting: number }>, group: string) {
    const probe = this.probes.probeOf(group);
    if (probe === null) return null;
    const out = { probe, waiting: 0 };
    probes.set(group, out);
    return out;
  }

  /**
   * Due recoveries (due within the preparation lead) the limiter holds: each waits for a slot,
   * one per interval in due order after the next (`nextSlotAt`, wall clock), shown as such.
   * Rounded up to the second, so a countdown does not change at every refusal.
   */
  private hold(held: readonly Watch[], nextSlotAt: number): void {
    const interval = this.core.options.limiterIntervalMs;
    for (const [i, w] of held.entries())
      waitForSlot(this.core, w, Math.ceil((nextSlotAt + i * interval) / 1000) * 1000);
    this.core.changed();
  }

  /**
   * The soonest time a recovery must start to go out on time when it is prepared `leadMs` ahead
   * (0: the time it goes out), or null. A recovery held by the limiter starts when its slot
   * comes, never ahead of it: the limiter counts when recoveries start.
   */
  private nextAction(leadMs: number, soonest = this.soonestDue()): number | null {
    if (soonest === null) return null;
    const clock = this.core.deps.clock;
    const held = this.limitedUntil === null ? 0 : this.limitedUntil - clock.elapsed();
    return held > 0 ? Math.max(soonest - leadMs, clock.now() + held) : soonest - leadMs;
  }

  /** The soonest due time of a recovery not under way (wall clock), or null. */
  private soonestDue(): number | null {
    if (this.core.state.pausedAt !== null) return null;
    let soonest: number | null = null;
    for (const w of this.core.scheduledWatches()) {
      // Held for its outage's probe: due at the verdict, or when the probe is waited for no more
      // (not prepared ahead: until then it waits, and a timer early by the lead would find it so).
      const due = w.state.kind === 'waitingProbe' ? this.probeBound(w.state.probe) : dueAt(w);
      if (due !== null && !this.core.attempting(w.threadId) && (soonest === null || due < soonest)) soonest = due;
    }
    return soonest;
  }
}

function newLimiter(options: EngineOptions): RecoveryLimiter {
  return new RecoveryLimiter({ burst: options.limiterBurst, intervalMs: options.limiterIntervalMs });
}
