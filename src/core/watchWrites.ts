// The one writer of a watch. Everywhere else a watch is a `Watch`, read-only all the way down
// (model/watch.ts), so an assignment anywhere but here does not compile. Each write is named for
// what happened and writes only the fields it names; what to write is decided elsewhere (the
// table, transitions.ts, the parts that read the daemon and the rollout). Lists are replaced,
// never changed in place (new watches share one frozen empty list).
import { countedAt, uncountedAt } from '../model/budget';
import { sharedState } from '../model/sharedState';
import {
  type GoalSnapshot,
  type HistoryEntry,
  type Marker,
  type PendingRecovery,
  type TurnFailure,
  type Watch,
  type WatchedThread,
  type WatchState,
  withHistory,
  withRecovered,
} from '../model/watch';

function writable(w: Watch): WatchedThread {
  return w as WatchedThread;
}

/** The state, with `updatedAt` moved to `now` (never back): engineCore's `setState` alone calls it. */
export function writeState(w: Watch, state: WatchState, now: number): void {
  const m = writable(w);
  m.state = sharedState(state);
  m.updatedAt = Math.max(m.updatedAt, now);
}

/** The goal as the daemon has it now (null: cleared); `title`: what to call the thread, if it changes. */
export function goalSeen(w: Watch, goal: GoalSnapshot | null, title?: string): void {
  const m = writable(w);
  m.goal = goal;
  if (title !== undefined) m.title = title;
}

/**
 * A thread read: its rollout (a new file is read from its start, unless the arming's offset is set),
 * what it runs on, its title.
 */
export function threadRead(
  w: Watch,
  read: { rolloutPath: string | null; runsOn: string | null; title: string | null },
): void {
  const m = writable(w);
  if (read.rolloutPath && read.rolloutPath !== m.rolloutPath) {
    m.rolloutPath = read.rolloutPath;
    if (m.armOffset === null) m.rolloutOffset = 0;
  }
  if (read.runsOn) m.runsOn = read.runsOn;
  if (read.title) m.title = read.title;
}

/** How far the rollout was read, and the arming's offset, where it was found (the first read after an arming). */
export function rolloutRead(w: Watch, nextOffset: number, armOffset: number): void {
  const m = writable(w);
  m.rolloutOffset = nextOffset;
  m.armOffset = armOffset;
}

/** The model's own block seen in the rollout (null: a later activation lifted it). */
export function modelBlockSeen(w: Watch, offset: number | null): void {
  writable(w).modelBlockOffset = offset;
}

/** The newest person's marker read in the rollout. */
export function markerSeen(w: Watch, marker: Marker): void {
  writable(w).lastMarker = marker;
}

/**
 * Armed (again) at `now`: the next look reads the rollout back from the goal's last activation, so
 * what it finds there (markers, a model's block) is found afresh. `armOffset`: the arming's place
 * when it is known already (a person's marker setting the goal active).
 */
export function armedAt(w: Watch, now: number, armOffset: number | null = null): void {
  const m = writable(w);
  m.armedAt = now;
  m.armOffset = armOffset;
  if (armOffset !== null) return;
  m.rolloutOffset = 0;
  m.lastMarker = null;
  m.modelBlockOffset = null;
}

/** Armed at `now` with nothing counted: no failure, no set under way. */
export function armedAfresh(w: Watch, now: number): void {
  armedAt(w, now);
  const m = writable(w);
  m.failures = 0;
  m.lastFailure = null;
  m.pending = null;
}

/** Consecutive failures counted. */
export function failuresAre(w: Watch, failures: number): void {
  writable(w).failures = failures;
}

/** The failure the watch tells of (null: none), its recovery's due time with it. */
export function failureIs(w: Watch, failure: TurnFailure | null): void {
  writable(w).lastFailure = failure;
}

/** The failure's recovery due at `dueAt`; `stepDueAt`: its group's next step, behind a half-step try. */
export function dueAtIs(w: Watch, dueAt: number | null, stepDueAt?: number): void {
  const f = writable(w).lastFailure;
  if (!f) return;
  f.dueAt = dueAt;
  if (stepDueAt !== undefined) f.stepDueAt = stepDueAt;
}

/** The write-ahead intent of a set under way (null: none). */
export function pendingIs(w: Watch, pending: PendingRecovery | null): void {
  writable(w).pending = pending;
}

/** What stopped the goal when a person armed it (null: nothing). */
export function beforeArmingIs(w: Watch, failure: string | null): void {
  writable(w).beforeArming = failure;
}

export function historyAdded(w: Watch, entry: HistoryEntry): void {
  const m = writable(w);
  m.history = withHistory(m.history, entry);
}

/** At most one effective recovery per failed turn, ever: this one took effect. */
export function recoveredAdded(w: Watch, failedTurnId: string): void {
  const m = writable(w);
  if (!m.recovered.includes(failedTurnId)) m.recovered = withRecovered(m.recovered, failedTurnId);
}

/** An automatic set went out at `at` (counted against the recovery budget). */
export function recoveryCounted(w: Watch, at: number): void {
  writable(w).recoveries = countedAt(w, at);
}

/** A set withdrawn before it went out: its count taken back. */
export function recoveryUncounted(w: Watch, at: number): void {
  writable(w).recoveries = uncountedAt(w, at);
}

/** The recovery budget afresh (a person armed or set the goal active again). */
export function recoveriesCleared(w: Watch): void {
  writable(w).recoveries = [];
}
