// What the leader sends a follower of an older release (protocol below PROBE_BUDGET_VERSION,
// messages.ts). A window not reloaded since the extension was updated keeps its old extension
// host, and a runner installed from npm may be older than the extension: such a follower checks
// every snapshot against its own schema and ignores a whole snapshot that holds one state it does
// not know (its tree would freeze for a whole outage), and each decision of a type it does not
// know. So it is sent each newer state as the nearest state it knows, and none of the newer
// decisions. Pure: the leader's server calls it once per broadcast, for all its older followers.
import type { DecisionType } from '../model/decision';
import type { EngineSnapshot } from '../model/snapshot';
import { isRecord, type WatchState, type WatchStateKind } from '../model/watch';

type Older<K extends WatchStateKind> = ((state: Extract<WatchState, { kind: K }>) => WatchState) | 'same';

/**
 * Every state kind, and what an older follower is shown instead ('same': it knows the kind). A
 * record over every kind: a new kind does not compile until it says what older followers see.
 */
const OLDER_STATE: { [K in WatchStateKind]: Older<K> } = {
  running: 'same',
  idle: 'same',
  waitingApproval: 'same',
  codexRetrying: 'same',
  backoff: 'same',
  waitingSlot: 'same',
  // The goal backs off, as it did before the probe: its held backoff is the recovery as scheduled.
  waitingProbe: (s) => s.held,
  turnEnding: 'same',
  recovering: 'same',
  usageLimited: 'same',
  userIntent: 'same',
  disarmed: 'same',
  paused: 'same',
  complete: 'same',
  budgetLimited: 'same',
  modelBlocked: 'same',
  interrupted: 'same',
  needsAttention: 'same',
  gaveUp: 'same',
  // Not needsAttention: an older window offers Retry now (its menu, its notification, the runner's
  // `retry`) on a goal it gave up on that has a failure, exactly as this release does on a spent
  // budget, and never on needsAttention. The recoveries counted are the tries it gave up after.
  budgetSpent: (s) => ({ kind: 'gaveUp', attempts: s.used }),
  notAdopted: 'same',
  failedBeforeArming: 'same',
  unloaded: 'same',
  elsewhere: 'same',
};

/**
 * Whether an older follower knows each decision type. A record over every type: a new type does
 * not compile until it says. Withheld ones have no equivalent: what they tell (a probe picked, a
 * goal released) an older follower sees in the state, and a decision that needs a person
 * (`attention`, `gave-up`) is of a type it knows.
 */
const OLDER_KNOWS: Record<DecisionType, boolean> = {
  armed: true,
  backoff: true,
  recovering: true,
  recovered: true,
  skipped: true,
  disarmed: true,
  rearmed: true,
  loaded: true,
  probe: false,
  released: false,
  'gave-up': true,
  attention: true,
  elsewhere: true,
  connection: true,
  warning: true,
};

/** The state an older follower is shown for `state` (the same object when it knows the kind). */
export function olderState(state: WatchState): WatchState {
  const older = OLDER_STATE[state.kind] as Older<WatchStateKind>;
  return older === 'same' ? state : older(state);
}

/**
 * `snapshot` as an older follower can read it: the same object when nothing in it is new to one
 * (the server then sends the line it already has), else a copy with each newer state translated.
 */
export function olderSnapshot(snapshot: EngineSnapshot): EngineSnapshot {
  const watches = snapshot.watches.map((w) => {
    const state = olderState(w.state);
    return state === w.state ? w : { ...w, state };
  });
  return watches.some((w, i) => w !== snapshot.watches[i]) ? { ...snapshot, watches } : snapshot;
}

/**
 * The server's entry: it broadcasts whatever it is given (a test's value, say), and only a value
 * shaped like a snapshot is translated. Checks the shape alone: the leader's engine made it.
 */
export function olderSnapshotOf(value: unknown): unknown {
  if (!isRecord(value) || !Array.isArray(value.watches)) return value;
  const watches: unknown[] = value.watches;
  const ours = watches.every((w) => isRecord(w) && isRecord(w.state) && isKey(OLDER_STATE, w.state.kind));
  return ours ? olderSnapshot(value as EngineSnapshot) : value;
}

/** Whether a decision goes to an older follower: a type it knows (or not one of ours: sent as it is). */
export function olderKnows(decision: unknown): boolean {
  return !isRecord(decision) || !isKey(OLDER_KNOWS, decision.type) || OLDER_KNOWS[decision.type];
}

function isKey<T extends object>(table: T, key: unknown): key is keyof T {
  return typeof key === 'string' && Object.hasOwn(table, key);
}
