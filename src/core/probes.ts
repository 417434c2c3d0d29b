// The probe of an outage, carried out (the rules are outage.ts's): which goal of a group is out
// as the probe, holding the others' due recoveries for it, and the provider's answer that
// releases them. The probe's failure moves them on in transitions.ts (`followTheProbe`), where every
// failure is counted.
import { type EngineState, type Watch } from '../model/watch';
import type { EngineCore } from './engineCore';
import { dueGroup, isProbing, outageGroup, releasedBy, stillHeld } from './outage';
import { dueBy, unhold, waitForProbe } from './transitions';

export class Probes {
  /**
   * Threads that may be out as a probe (a superset, checked on use): each whose recovery started
   * in this run, and after a load every goal with a failure counted, as a probe's recovery may
   * have gone out before the engine stopped or crashed (read back from what is on disk).
   */
  private readonly candidates = new Set<string>();
  private seededFor: EngineState | null = null;
  /** When a response last completed on each provider, in this run (`runsOn` → ms). */
  private readonly answeredAt = new Map<string, number>();

  constructor(private readonly core: EngineCore) {}

  /** The group a due recovery waits in, or null: it goes alone (outage.ts dueGroup). */
  groupOf(w: Watch): string | null {
    return this.core.options.groupOutages ? dueGroup(w, this.answeredAt.get(w.runsOn ?? '')) : null;
  }

  /**
   * A grouped recovery started: its goal is out as its group's probe until a verdict. Said when
   * others of the group have a recovery scheduled (they will wait for it).
   */
  started(w: Watch, group: string): void {
    this.candidates.add(w.threadId);
    let others = 0;
    for (const x of this.core.scheduledWatches()) if (x !== w && this.groupOf(x) === group) others += 1;
    if (others > 0) this.core.emit({ type: 'probe', threadId: w.threadId, group, others });
  }

  /** The goal out as this group's probe, or null: none is. */
  probeOf(group: string): string | null {
    this.seed();
    for (const threadId of this.candidates) {
      const w = this.core.state.watches[threadId];
      if (!w || !this.isOut(w)) {
        if (!this.core.attempting(threadId)) this.candidates.delete(threadId);
        continue;
      }
      if (outageGroup(w) === group) return threadId;
    }
    return null;
  }

  /** Holds a due recovery for its group's probe (said once: the state says it from then on). */
  hold(w: Watch, probe: string): void {
    if (!waitForProbe(this.core, w, probe)) return;
    this.core.emit({ type: 'skipped', threadId: w.threadId, reason: 'waiting for the probe', detail: probe });
  }

  /** A recovery held for a probe (`waitingProbe`) that is still out, of its group. */
  holds(w: Watch): boolean {
    return stillHeld(
      w,
      (id) => this.core.state.watches[id],
      (probe) => this.isOut(probe),
    );
  }

  /**
   * A response completed on a thread (`thread/tokenUsage/updated`), to a
   * request sent no earlier than `since`: its provider answers. Every recovery scheduled for a
   * provider's failure there older than that request is due now (saved: a restart keeps it),
   * through the global limiter. True when any was.
   */
  answered(threadId: string, since: number): boolean {
    const runsOn = this.core.state.watches[threadId]?.runsOn;
    if (!this.core.options.groupOutages || runsOn == null) return false;
    const now = this.core.now();
    this.answeredAt.set(runsOn, Math.max(this.answeredAt.get(runsOn) ?? since, since));
    let released = 0;
    for (const w of this.core.scheduledWatches()) {
      if (!releasedBy(w, runsOn, since, now) || w.lastFailure === null) continue;
      dueBy(this.core, w, now);
      if (w.state.kind === 'waitingProbe') unhold(this.core, w);
      this.core.emit({
        type: 'released',
        threadId: w.threadId,
        by: threadId,
        reason: `the provider (${runsOn}) answered on another goal: recovered now, not at its backoff`,
      });
      released += 1;
    }
    if (released > 0) this.core.changed();
    return released > 0;
  }

  /**
   * Until when a probe's verdict is waited for (its set plus the backoff cap), or null: its set is
   * under way (its end reschedules), or none is known.
   */
  waitedUntil(probe: string): number | null {
    const w = this.core.state.watches[probe];
    const sentAt = w?.recoveries.at(-1);
    if (!w || sentAt === undefined || this.core.attempting(probe) || w.state.kind === 'recovering') return null;
    return sentAt + this.core.options.maxDelayMs + 1;
  }

  private isOut(w: Watch): boolean {
    if (this.core.attempting(w.threadId)) return true;
    // The turn the recovery started: not known yet while the newest known is the failed one.
    const turn = this.core.live.get(w.threadId)?.turn ?? null;
    const recovered = turn !== null && turn.id !== w.lastFailure?.turnId ? turn : null;
    return isProbing(w, {
      answeredAt: w.runsOn === null ? null : (this.answeredAt.get(w.runsOn) ?? null),
      turnEnded: recovered === null ? null : recovered.status !== 'inProgress',
      looking: this.core.work.has(w.threadId, 'look'),
      now: this.core.now(),
      verdictWithinMs: this.core.options.maxDelayMs,
    });
  }

  private seed(): void {
    const state = this.core.state;
    if (this.seededFor === state) return;
    this.seededFor = state;
    for (const w of Object.values(state.watches)) if (w.failures > 0 && w.lastFailure) this.candidates.add(w.threadId);
  }
}
