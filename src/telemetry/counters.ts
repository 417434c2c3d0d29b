// The export's counters, kept from the decisions this engine announced (pure: the time is given).
//  - recoveries: `recovered` decisions (a set that took: the engine read the goal active again, or
//    a newer turn);
//  - give-ups: `gave-up` decisions;
//  - wasted turns: recoveries whose turn failed again. The engine's own notion (src/core/reconciler.ts,
//    the history's `failed-again`): a new failure counted on a goal whose last counted failure was
//    recovered. Told by decisions: after a `recovered`, the next `backoff` or `gave-up` of that
//    thread that names another failed turn (a backoff of the same turn is a set the daemon refused,
//    which ran no turn; a goal of an outage's group that follows its probe names its own turn,
//    never recovered). The outage-cost bench counts the same from the daemon's record (automatic
//    activations less the one that completed the goal: test/bench/outageLab.ts);
//  - time in backoff: from a goal's `backoff` (when it was decided) until the decision that ends the wait (its recovery
//    going out, given up, disarmed, needing attention, re-armed by a person…). A goal still waiting
//    counts up to now, so a reading grows while an outage lasts.
import type { Decision } from '../model/decision';

export interface Counts {
  recoveries: number;
  giveUps: number;
  wastedTurns: number;
  backoffSeconds: number;
}

/** Decisions after which a goal is no longer waiting for its backoff. */
const ENDS_BACKOFF: ReadonlySet<Decision['type']> = new Set([
  'recovering',
  'recovered',
  'gave-up',
  'disarmed',
  'rearmed',
  'attention',
  'elsewhere',
]);

export class DecisionCounters {
  private readonly n = { recoveries: 0, giveUps: 0, wastedTurns: 0 };
  private backoffMs = 0;
  /** Per thread: the failed turn its last recovery recovered, until its next failure is counted. */
  private readonly recovered = new Map<string, string>();
  /** Per thread waiting in backoff: since when. */
  private readonly waiting = new Map<string, number>();

  observe(d: Decision, nowMs: number): void {
    if (!('threadId' in d) || d.threadId === undefined || d.threadId === '*') return;
    const id = d.threadId;
    if (d.type === 'backoff' || d.type === 'gave-up') {
      const last = this.recovered.get(id);
      if (last !== undefined && last !== d.failedTurnId) {
        this.n.wastedTurns += 1;
        this.recovered.delete(id);
      }
    }
    if (d.type === 'backoff') {
      // The wait began when the engine decided it (its due time less its delay), not when the
      // export heard of it: the decision is announced after the save that holds it, and a slow
      // save must not shorten the time counted.
      const since = Math.min(nowMs, d.dueAt - d.delayMs);
      this.endWait(id, since);
      this.waiting.set(id, since);
    } else if (ENDS_BACKOFF.has(d.type)) this.endWait(id, nowMs);
    if (d.type === 'recovered') {
      this.n.recoveries += 1;
      this.recovered.set(id, d.failedTurnId);
    } else if (d.type === 'gave-up') this.n.giveUps += 1;
  }

  /** The counts at `nowMs` (the waits still under way counted up to then). */
  counts(nowMs: number): Counts {
    let ms = this.backoffMs;
    for (const since of this.waiting.values()) ms += Math.max(0, nowMs - since);
    return { ...this.n, backoffSeconds: ms / 1000 };
  }

  /** Whether a goal waits in backoff now (its time grows: the counters change with the clock). */
  waitingNow(): boolean {
    return this.waiting.size > 0;
  }

  private endWait(threadId: string, nowMs: number): void {
    const since = this.waiting.get(threadId);
    if (since === undefined) return;
    this.backoffMs += Math.max(0, nowMs - since);
    this.waiting.delete(threadId);
  }
}
