// One outage, one probe (docs/architecture.md, "Outages"): the goals that the same kind of
// failure blocked on the same provider and model form a group. While one of them is out as the
// probe, the others' due recoveries wait for its verdict instead of each failing again: the
// provider answering (a response completed on any thread that runs on it) releases them at once,
// through the global limiter; the probe failing again moves them to its next backoff step. A
// goal alone in its group is recovered as it always was. Pure, like policy.ts: no I/O, no clock
// reads, no `await`; the schedule (schedule.ts) and the transitions (transitions.ts) carry it out.
import { type TurnFailure, type Watch, type WatchState } from '../model/watch';
import { dueAt, scheduledOf } from '../model/queries';
import { outageKind } from './classify';

/** The group of a goal whose failure is a provider's (`runsOn · kind`), or null: never grouped. */
export function outageGroup(w: Readonly<Pick<Watch, 'runsOn' | 'lastFailure'>>): string | null {
  if (w.runsOn === null || w.lastFailure === null) return null;
  const kind = outageKind(w.lastFailure.code);
  return kind === null ? null : `${w.runsOn} · ${kind}`;
}

/**
 * States in which a goal whose recovery went out has no verdict yet: its turn has not ended, or
 * has not started (measured: between the set's reply and `turn/started` the thread reads idle),
 * or the goal was marked complete, or reached its token budget, in that turn before the turn's
 * response completed (measured: the goal's update comes before `thread/tokenUsage/updated`).
 */
const AWAITING_VERDICT = new Set<WatchState['kind']>([
  'running',
  'idle',
  'codexRetrying',
  'turnEnding',
  'complete',
  'budgetLimited',
]);

/** What is known right now of a goal that may be out as a probe (none of it is on disk). */
export interface ProbeFacts {
  /** The last response completed on its provider (ms), null: none seen in this run. */
  readonly answeredAt: number | null;
  /** The turn its recovery started has ended (completed, failed, interrupted): null while not known yet. */
  readonly turnEnded: boolean | null;
  /**
   * A look at its thread is queued or under way: what its turn's end means (a failure counted, the
   * group's next step) is not decided yet, and until it is, the probe is out.
   */
  readonly looking: boolean;
  readonly now: number;
  /**
   * The longest a probe's verdict is waited for (the backoff cap): then the next due goal of its
   * group goes as the new probe.
   */
  readonly verdictWithinMs: number;
}

/**
 * The group a due recovery waits in, or null: it goes alone. A backoff's only (a usage limit waits
 * for its reset), and none once its provider answered (`answeredAt`) a request sent after its
 * failure: released, it waits for no probe.
 */
export function dueGroup(w: Watch, answeredAt: number | undefined): string | null {
  const f = w.lastFailure;
  if (scheduledOf(w.state)?.kind !== 'backoff' || f === null || (answeredAt ?? -Infinity) > f.at) return null;
  return outageGroup(w);
}

/**
 * The order in which a group's due goals go (the first is its probe): the sooner due time first;
 * at one due time (a group's step), the goal with the fewest recent recoveries, so the probe and
 * its half-step tries spread over the group's recovery budgets; then by thread id. Both scheduled.
 */
export function goesFirst(a: Watch, b: Watch): boolean {
  const d = dueAt(a)! - dueAt(b)! || a.recoveries.length - b.recoveries.length;
  return d < 0 || (d === 0 && a.threadId < b.threadId);
}

/**
 * The due goal of `group` that goes first (goesFirst), or null: none is due by `by` (now plus the
 * preparation lead). A goal whose attempt is under way is out already, not due.
 */
export function firstDue(
  scheduled: readonly Watch[],
  group: string,
  of: { readonly groupOf: (w: Watch) => string | null; readonly attempting: (threadId: string) => boolean },
  by: number,
): Watch | null {
  let first: Watch | null = null;
  for (const x of scheduled) {
    const d = dueAt(x);
    if (d === null || d > by || of.attempting(x.threadId) || of.groupOf(x) !== group) continue;
    if (first === null || goesFirst(x, first)) first = x;
  }
  return first;
}

/** What spans a due goal's group when its turn comes (the schedule reads it: probes.ts, limiter.ts). */
export interface GroupFacts {
  /** The goal out as the group's probe, or null: none is. */
  readonly probe: string | null;
  /**
   * The group's due goal that goes first when it is another (goesFirst), with the slot the global
   * limiter keeps for it (null: none kept); null when this goal goes first, or goes alone.
   */
  readonly first: { readonly threadId: string; readonly slotAt: number | null } | null;
}

/** A due recovery's turn: held for its group's probe, looked at again at `at`, or its group's first goal started. */
export type DueTurn =
  | { readonly kind: 'hold'; readonly probe: string }
  | { readonly kind: 'later'; readonly at: number }
  | { readonly kind: 'start'; readonly first: string | null };

/**
 * A due recovery's turn (the schedule's `due` job): one outage, one probe. While its group's probe
 * is out, it waits for the probe's verdict; else its group's first goal goes (the probe): this one,
 * or the other, which this one then waits for; unless the other waits for the slot the limiter
 * keeps for it, when this one looks again at that slot (the others wait for it there).
 */
export function dueTurn(g: GroupFacts, now: number): DueTurn {
  if (g.probe !== null) return { kind: 'hold', probe: g.probe };
  const slotAt = g.first?.slotAt ?? -Infinity;
  if (slotAt > now) return { kind: 'later', at: slotAt };
  return { kind: 'start', first: g.first?.threadId ?? null };
}

/** What, besides its watch, says when a scheduled recovery acts (the schedule's state, read now). */
export interface TimingFacts {
  /** Its attempt is under way, or prepared for its due time: it acts when that ends. */
  readonly attempting: boolean;
  /** The slot the limiter keeps for it in this run (wall clock), or null: none (after a restart). */
  readonly slotAt: number | null;
  /**
   * Held for its outage's probe, which is out (`stillHeld`): until when the probe's verdict is
   * waited for, or null while the probe's set is under way; undefined: not held.
   */
  readonly heldUntil?: number | null;
  /** How early a recovery is prepared (the schedule's preparation lead). */
  readonly lead: number;
}

/**
 * When a scheduled recovery's `due` job comes (wall clock), or null: not while its attempt runs.
 * Held for a slot: the slot (never ahead of it: the limiter counts when recoveries start); the one
 * shown after a restart. Held for a probe that is out: the verdict's bound plus the lead (not
 * prepared ahead: until then it waits). Else its due time less the lead (held for a probe out no
 * more: its turn lets it go).
 */
export function actsAt(w: Readonly<Pick<Watch, 'state' | 'lastFailure'>>, t: TimingFacts): number | null {
  if (t.attempting) return null;
  if (w.state.kind === 'waitingSlot') return t.slotAt ?? w.state.slotAt;
  if (t.heldUntil !== undefined) return t.heldUntil === null ? null : t.heldUntil + t.lead;
  const due = dueAt(w);
  return due === null ? null : due - t.lead;
}

/**
 * Whether the slot the limiter keeps for a goal's recovery stays its own as its state moves: while
 * the recovery is scheduled (held or not), or its failed turn is seen still ending (the same
 * recovery). Else it will not go (paused, disarmed, running again, given up): the slot is given back.
 */
export function keepsSlot(state: WatchState): boolean {
  return scheduledOf(state) !== null || state.kind === 'turnEnding';
}

/**
 * Whether this goal is out as a probe: its recovery is being sent, or went out after its failure
 * and took effect, and its turn has not ended (or a look has not decided yet what its end means),
 * and no response completed on its provider since,
 * for at most `verdictWithinMs`. Read from what is on disk (the failure, the recovery's count, the
 * recovered turns) and the turn the daemon shows, so a restarted engine knows its probe; the
 * provider's answer is known to this run alone (after a restart, the turn's end speaks instead).
 */
export function isProbing(w: Watch, p: ProbeFacts): boolean {
  const f = outageGroup(w) === null ? null : w.lastFailure;
  if (f === null || w.failures === 0) return false;
  if (w.state.kind === 'recovering') return true;
  const sentAt = w.recoveries.at(-1);
  if (sentAt === undefined || sentAt < f.at || !w.recovered.includes(f.turnId)) return false;
  if ((p.answeredAt ?? -Infinity) >= sentAt) return false;
  if ((p.turnEnded === true && !p.looking) || p.now - sentAt > p.verdictWithinMs) return false;
  return AWAITING_VERDICT.has(w.state.kind);
}

/**
 * Whether a move of this goal's state can change what the goals of its outage wait for: it may be
 * their probe only if it sent a set. Not its failure count: a probe whose turn just ended well has
 * none counted any more, and that end is what lets them go.
 */
export function mayHoldOthers(w: Readonly<Pick<Watch, 'recoveries'>>): boolean {
  return w.recoveries.length > 0;
}

/**
 * Whether a goal held for a probe (`waitingProbe`) still waits for it: the probe is watched, of
 * its group, and out (`isOut`: isProbing, or its recovery under way). Else it is scheduled again,
 * and its next turn picks a new probe.
 */
export function stillHeld(
  w: Watch,
  watchOf: (threadId: string) => Watch | undefined,
  isOut: (probe: Watch) => boolean,
): boolean {
  if (w.state.kind !== 'waitingProbe') return false;
  const probe = watchOf(w.state.probe);
  return probe !== undefined && outageGroup(probe) === outageGroup(w) && isOut(probe);
}

/**
 * Whether the provider's answer, to a request sent no earlier than `since`, brings this goal's
 * recovery forward to `now`: a recovery scheduled (not a usage limit's: that waits for its reset)
 * for a provider's failure on the provider that answered, older than that request, and not due
 * yet or waiting for a probe.
 */
export function releasedBy(w: Watch, runsOn: string, since: number, now: number): boolean {
  const scheduled = scheduledOf(w.state);
  const f = w.lastFailure;
  if (scheduled?.kind !== 'backoff' || f === null || f.dueAt === null) return false;
  if (w.runsOn !== runsOn || outageGroup(w) === null || f.at >= since) return false;
  return f.dueAt > now || w.state.kind === 'waitingProbe';
}

/**
 * The goals that follow `probe`, whose turn the provider failed again: every goal whose recovery is
 * scheduled for a failure of that kind on that provider older than the probe's set, waiting for it
 * or not due yet (the outage failed them together), each with its failed turn. Found before any
 * state moves (a move looks again at who still waits). None when the probe never went out.
 */
export function probeFollowers(probe: Watch, scheduled: readonly Watch[]): [Watch, string][] {
  const sentAt = probe.recoveries.at(-1);
  const group = outageGroup(probe);
  if (sentAt === undefined || group === null) return [];
  const followers: [Watch, string][] = [];
  for (const w of scheduled) {
    const held = scheduledOf(w.state);
    if (w === probe || held?.kind !== 'backoff' || w.lastFailure === null || w.lastFailure.at > sentAt) continue;
    if (outageGroup(w) === group) followers.push([w, held.failedTurnId]);
  }
  return followers;
}

/**
 * A goal that waited for a probe whose turn the provider failed again (its next recovery due at
 * `probeDueAt`): the failure counts for it too, one step, and it is tried again with the probe,
 * never sooner than its own due time. A group that failed together counts alike, so it gives up
 * together; a probe's count that a refused set raised is not passed on.
 */
export function followProbe(w: Watch, probeDueAt: number): { failures: number; dueAt: number } {
  return {
    failures: w.failures + 1,
    dueAt: Math.max(w.lastFailure?.dueAt ?? probeDueAt, probeDueAt),
  };
}

/**
 * The probe's cadence: a probe that failed again, its group moved to the step due at `stepDueAt`,
 * goes again half-way there, alone, when that step is at least two bases away (from the second
 * step's wait on: the first ones are short). Two tries per step for the whole group instead of
 * one per goal: at 10 goals at least 5× fewer turns in an outage, and a provider that heals
 * waits at most half a step for a try instead of the whole one (a goal alone in the per-goal
 * schedule waits its whole step; one shared step would make the group's wait one draw of it).
 * Null: no half-step try.
 */
export function halfStepDue(failedAt: number, stepDueAt: number, baseMs: number): number | null {
  const wait = stepDueAt - failedAt;
  return wait >= 2 * baseMs ? failedAt + Math.round(wait / 2) : null;
}

/**
 * A new failed turn after `previous`: when `previous` was a half-step try (its recovery went out
 * and took effect), the step its group waits for: the goal waits for it with them, its count
 * unchanged (a try, not a step; its set is counted against the recovery budget). Null: an ordinary
 * failure, counted; so is the try's failure when its group's step is nearer than the shortest
 * backoff (`baseMs` / 2), or passed while its turn ran: a failure is never retried sooner than that.
 */
export function halfStepFailed(
  previous: Readonly<TurnFailure> | null,
  recovered: readonly string[],
  now: number,
  baseMs: number,
): number | null {
  if (previous?.stepDueAt === undefined || !recovered.includes(previous.turnId)) return null;
  return previous.stepDueAt - now >= baseMs / 2 ? previous.stepDueAt : null;
}
