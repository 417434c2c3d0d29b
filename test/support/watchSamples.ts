// Watches as the engine writes them, and random corruptions of them: the faster load path
// (src/store/fastCheck.ts) and the stored record form (src/store/watchRecord.ts) are checked
// against zod on both.
import { newWatch, type WatchedThread, type WatchState, type WatchStateKind } from '../../src/model/watch';

/** Watches as the engine writes them: fresh, failed and scheduled, recovered, held, elsewhere. */
export function samples(): WatchedThread[] {
  const fresh = newWatch('t-fresh', 1_000);
  const failed = newWatch('t-failed', 1_000);
  failed.goal = { status: 'blocked', objective: 'ship', tokensUsed: 10, tokenBudget: null, updatedAt: 5 };
  failed.rolloutPath = '/tmp/rollout.jsonl';
  failed.armOffset = 0;
  failed.rolloutOffset = 260;
  failed.failures = 1;
  failed.lastFailure = {
    turnId: 'turn-1',
    message: 'boom',
    code: 'internalServerError',
    httpStatus: 500,
    at: 2_000,
    dueAt: 4_000,
  };
  failed.state = { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' };
  const recovered: WatchedThread = structuredClone(failed);
  recovered.threadId = 't-recovered';
  recovered.state = { kind: 'running' };
  recovered.recovered = ['turn-1'];
  recovered.history = [
    { at: 4_000, failedTurnId: 'turn-1', attempt: 1, error: 'internalServerError', outcome: 'recovered', detail: 'ok' },
    { at: 3_000, failedTurnId: 'turn-0', attempt: 2, error: 'other', outcome: 'failed-again' },
  ];
  recovered.lastMarker = { status: 'paused', offset: 12 };
  recovered.pending = { failedTurnId: 'turn-1', attempt: 1, sentAt: 3_900 };
  const held: WatchedThread = structuredClone(failed);
  held.threadId = 't-held';
  held.state = { kind: 'waitingSlot', slotAt: 9_000, held: { kind: 'usageLimited', resetsAt: null } };
  const elsewhere = newWatch('t-elsewhere', 1_000);
  elsewhere.state = {
    kind: 'elsewhere',
    since: 1,
    goal: 'blocked',
    seenActive: true,
    retryable: true,
    retryAsked: { at: 2, failedTurnId: 'turn-1' },
  };
  const disarmed = newWatch('t-disarmed', 1_000);
  disarmed.state = { kind: 'disarmed', at: 5, neverArmed: true };
  return [fresh, failed, recovered, held, elsewhere, disarmed];
}

const ODD: unknown[] = [
  undefined,
  null,
  0,
  -1,
  1.5,
  2 ** 60,
  NaN,
  Infinity,
  '',
  'x',
  'active',
  'backoff',
  'recovered',
  true,
  false,
  [],
  ['x'],
  [1],
  {},
  { kind: 'running' },
  { kind: 'backoff', attempt: 0, failedTurnId: 't' },
  { status: 'paused', offset: -1 },
];

/** Every path to a value inside `v`. */
function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [at];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...paths(x, [...at, i])));
  else if (typeof v === 'object' && v !== null)
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) out.push(...paths(x, [...at, k]));
  return out;
}

export function corrupt(v: unknown, random: () => number): unknown {
  const copy: unknown = JSON.parse(JSON.stringify(v));
  const all = paths(copy).filter((p) => p.length > 0);
  const path = all[Math.floor(random() * all.length)];
  let parent = copy as Record<string | number, unknown>;
  for (const k of path.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
  const key = path[path.length - 1];
  const r = random();
  if (r < 0.15) delete parent[key];
  else if (r < 0.25 && typeof parent === 'object' && !Array.isArray(parent)) parent.unknownKey = 1;
  else parent[key] = structuredClone(ODD[Math.floor(random() * ODD.length)]);
  return copy;
}

const held = { kind: 'backoff', attempt: 2, failedTurnId: 'turn-1' } as const;

/** One state of every kind this release has (a record: a new kind does not compile without one). */
export const EVERY_STATE: { [K in WatchStateKind]: Extract<WatchState, { kind: K }> } = {
  running: { kind: 'running' },
  idle: { kind: 'idle' },
  waitingApproval: { kind: 'waitingApproval' },
  codexRetrying: { kind: 'codexRetrying', detail: 'reconnecting 1/5' },
  backoff: { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' },
  waitingSlot: { kind: 'waitingSlot', slotAt: 9_000, held: { kind: 'usageLimited', resetsAt: null } },
  waitingProbe: { kind: 'waitingProbe', probe: 'probe-thread', held },
  turnEnding: { kind: 'turnEnding' },
  recovering: { kind: 'recovering', attempt: 1, failedTurnId: 'turn-1', sentAt: 3_000 },
  usageLimited: { kind: 'usageLimited', resetsAt: 8_000 },
  userIntent: { kind: 'userIntent', requested: 'paused', at: 2_000 },
  disarmed: { kind: 'disarmed', at: 2_000 },
  paused: { kind: 'paused' },
  complete: { kind: 'complete' },
  budgetLimited: { kind: 'budgetLimited' },
  modelBlocked: { kind: 'modelBlocked' },
  interrupted: { kind: 'interrupted' },
  needsAttention: { kind: 'needsAttention', code: 'contextWindowExceeded', message: 'context window full' },
  gaveUp: { kind: 'gaveUp', attempts: 6 },
  budgetSpent: { kind: 'budgetSpent', used: 12, limit: 12, until: 90_000 },
  notAdopted: { kind: 'notAdopted', status: 'blocked' },
  failedBeforeArming: { kind: 'failedBeforeArming', code: 'internalServerError', message: 'boom' },
  unloaded: { kind: 'unloaded' },
  elsewhere: { kind: 'elsewhere', since: 1, goal: 'blocked', seenActive: true, retryable: true },
};
