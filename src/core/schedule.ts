// What the due jobs share across threads (each thread's recovery is its own delayed `due` job:
// engineCore.ts sets it from the watch, attempt.ts carries out its turn): when a scheduled recovery
// acts, the preparation lead, the global limiter (a burst, then one per interval: a recovery it
// holds shows as `waitingSlot`, with its slot, which is kept for it), the outage's probe
// (probes.ts) and a wall-clock jump's catching up.
import { type Watch } from '../model/watch';
import { dueAt, scheduledOf } from '../model/queries';
import type { EngineCore } from './engineCore';
import { RecoveryLimiter } from './limiter';
import type { EngineOptions } from './options';
import { actsAt, firstDue, type GroupFacts } from './outage';
import { Probes } from './probes';
import { unhold, waitForSlot } from './transitions';

/** However slow the store, a recovery is not prepared more than this early. */
export const MAX_PREPARE_MS = 2_000;

export class Schedule {
  private limiter: RecoveryLimiter;
  /** The monotonic time the limiter was last asked about (never goes back). */
  private limiterAt = 0;
  /** False from a wall-clock jump forward until the next due job: what fell due meanwhile goes with it. */
  private caughtUp = true;
  /** The slot the limiter keeps for each recovery it holds, on the monotonic clock (a wall-clock jump moves none). */
  private readonly slots = new Map<string, number>();
  /** One outage, one probe: the goals of a group wait for the one out first (outage.ts). */
  readonly probes: Probes;
  /** What firstDue asks of each scheduled goal: its group, and whether its attempt is under way. */
  private readonly group = {
    groupOf: (x: Watch) => this.probes.groupOf(x),
    attempting: (threadId: string) => this.core.attempting(threadId),
  };

  constructor(private readonly core: EngineCore) {
    this.limiter = newLimiter(core.options);
    this.probes = new Probes(core);
  }

  /** New settings: a new limiter if its policy changed (the slots it kept are given up). */
  updateOptions(previous: EngineOptions): void {
    const o = this.core.options;
    if (o.limiterBurst === previous.limiterBurst && o.limiterIntervalMs === previous.limiterIntervalMs) return;
    this.limiter = newLimiter(o);
    this.release();
  }

  /** The soonest time the engine will act, or null. */
  nextDueAt(): number | null {
    if (this.core.state.pausedAt !== null) return null;
    let soonest: number | null = null;
    for (const w of this.core.scheduledWatches()) {
      const acts = this.actsAt(w);
      // A recovery prepared ahead acts at its due time; a held one at its slot or its probe's bound.
      const at = acts === null || scheduledOf(w.state) !== w.state ? acts : acts + this.prepareLead();
      if (at !== null && (soonest === null || at < soonest)) soonest = at;
    }
    return soonest;
  }

  /** How early a recovery is prepared: `prepareMs`, or more when saves are slow (a large state, a busy disk). */
  prepareLead(): number {
    const prepareMs = this.core.options.prepareMs;
    if (prepareMs <= 0) return 0;
    return Math.max(prepareMs, Math.min(MAX_PREPARE_MS, 3 * this.core.saver.slowestMs()));
  }

  /**
   * A response completed on a thread, to a request sent no earlier than `since`: its provider
   * answers (an outage's probe, probes.ts).
   */
  answered(threadId: string, since: number): void {
    if (!this.probes.answered(threadId, since)) return;
    this.core.reschedule(); // a probe it held for may be out no more
    this.core.saver.persistSoon();
  }

  /**
   * The wall clock jumped forward (a suspend): time that passed. Nothing goes at once; the next due
   * job (at its own time) takes every recovery that fell due meanwhile with it, through the limiter.
   */
  jumpedForward(): void {
    this.caughtUp = false;
  }

  /** The first due job after a wall-clock jump forward (`w`'s): every other recovery due by now goes with it. */
  catchUp(w: Watch, notBeforeMono: number): void {
    if (this.caughtUp) return;
    this.caughtUp = true;
    for (const x of this.core.scheduledWatches())
      if (x !== w && (this.actsAt(x) ?? Infinity) <= this.core.now()) this.core.requeue(x, undefined, notBeforeMono);
  }

  /** The token the thread's attempt took given back: its set will not go out. */
  giveBack(threadId: string): void {
    this.limiter.giveBack(threadId);
  }

  /** The slot the limiter keeps for a recovery (if any) given back: it is not needed (held, gone). */
  giveSlotBack(threadId: string): void {
    if (this.slots.delete(threadId)) this.limiter.giveBack(threadId);
  }

  /**
   * The thread's set goes out now, its token spent: 0. Or the ms until the bucket holds one (sets
   * that took their tokens later went out first, this one's reads being slow): it waits, and spends.
   */
  spend(threadId: string): number {
    this.limiterAt = Math.max(this.limiterAt, this.core.deps.clock.elapsed());
    return this.limiter.spend(this.limiterAt, threadId);
  }

  stop(): void {
    this.core.work.takeBack('due');
    this.release();
  }

  /**
   * Nothing is held for a slot or a probe any more (paused, stopping, a new limiter): each recovery
   * shows as scheduled (its next turn holds again what still waits); the slots kept are given back.
   */
  release(): void {
    let released = 0;
    for (const threadId of [...this.slots.keys()]) this.giveSlotBack(threadId);
    for (const w of this.core.scheduledWatches()) if (unhold(this.core, w)) released += 1;
    if (released > 0) this.core.changed();
  }

  /**
   * What spans the group of a due recovery (outage.ts dueTurn): its probe out, or else its due goal
   * with the fewest recent recoveries, which goes first (the outage's probe and its half-step tries
   * spread over the group's recovery budgets), and the slot the limiter keeps for it.
   */
  groupFacts(w: Watch): GroupFacts {
    const core = this.core;
    const group = this.probes.groupOf(w);
    const probe = group === null ? null : this.probes.probeOf(group);
    const first =
      group === null || probe !== null
        ? null
        : firstDue(core.scheduledWatches(), group, this.group, core.now() + this.prepareLead());
    if (first === null || first === w) return { probe, first: null };
    const slotAt = first.state.kind === 'waitingSlot' ? this.actsAt(first) : null;
    return { probe, first: { threadId: first.threadId, slotAt } };
  }

  /**
   * A due recovery's limiter token, at its turn: true, taken (it goes now); else it waits for the
   * next slot, kept for it (`waitingSlot`; a slot kept already is its own), false.
   */
  take(w: Watch, notBeforeMono: number): boolean {
    const core = this.core;
    const mono = core.deps.clock.elapsed();
    // The limiter counts real elapsed time: a wall-clock jump neither refills nor empties it.
    // It counts sets when they go out: a recovery prepared ahead takes its slot at its due time.
    this.limiterAt = Math.max(this.limiterAt, notBeforeMono, mono);
    // A slot kept for it stays its own whatever a look showed meanwhile (its failed turn not ended
    // yet, say): it keeps its place, and the limiter does not count it twice.
    const kept = this.slots.get(w.threadId);
    const wait =
      w.state.kind === 'waitingSlot'
        ? 0
        : kept !== undefined
          ? Math.max(0, kept - this.limiterAt)
          : this.limiter.take(this.limiterAt, w.threadId);
    if (wait === 0) {
      this.slots.delete(w.threadId);
      return true;
    }
    if (kept === undefined)
      core.emit({
        type: 'skipped',
        threadId: w.threadId,
        reason: 'global rate limit',
        detail: `next recovery slot in ${Math.ceil(wait / 1000)} s`,
      });
    this.slots.set(w.threadId, this.limiterAt + wait);
    // Shown rounded up to the second, so a countdown does not change at every refusal.
    waitForSlot(core, w, Math.ceil((core.now() + (this.limiterAt - mono) + wait) / 1000) * 1000);
    return false;
  }

  /**
   * The monotonic time before which `w`'s set never goes out: its due time, even if the wall clock
   * jumps forward meanwhile (that is not time that passed for a timer).
   */
  notBefore(w: Watch): number {
    const now = this.core.now();
    return this.core.deps.clock.elapsed() + Math.max(0, (dueAt(w) ?? now) - now);
  }

  /** When a scheduled recovery's due job comes, from the schedule's state now (outage.ts actsAt). */
  actsAt(w: Watch): number | null {
    const core = this.core;
    const attempting = core.attempting(w.threadId);
    const slot = this.slots.get(w.threadId);
    const held = !attempting && w.state.kind === 'waitingProbe' && this.probes.holds(w);
    return actsAt(w, {
      attempting,
      slotAt: slot === undefined ? null : core.now() + slot - core.deps.clock.elapsed(),
      ...(held && { heldUntil: this.probes.waitedUntil(w.state.probe) }),
      lead: this.prepareLead(),
    });
  }
}

function newLimiter(options: EngineOptions): RecoveryLimiter {
  return new RecoveryLimiter({ burst: options.limiterBurst, intervalMs: options.limiterIntervalMs });
}
