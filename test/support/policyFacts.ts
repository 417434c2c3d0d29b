// What the decision table (src/core/policy.ts) is asked about, for its unit tests: a watch of
// thread `T` armed a minute before `NOW`, its goal blocked unless a case says otherwise, the
// thread idle, the shipped options (DEFAULT_OPTIONS). A case names only what differs.
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import { type LiveThread, newLive } from '../../src/core/live';
import type { Facts } from '../../src/core/policy';
import { newWatch, type GoalStatus, type WatchedThread } from '../../src/model/watch';
import type { Turn } from '../../src/protocol/daemon';

export const NOW = 1_800_000_000_000;
export const T = 'thread-1';

export const failed = (id: string, codexErrorInfo: unknown = 'internalServerError', message = 'boom'): Turn => ({
  id,
  status: 'failed',
  error: { message, codexErrorInfo, additionalDetails: null } as Turn['error'],
});
export const turn = (id: string, status: string): Turn => ({ id, status, error: null });

/** What differs from the usual case. `goal: null`: the goal was cleared. */
export interface Situation {
  goal?: GoalStatus | null;
  watch?: Partial<WatchedThread>;
  live?: Partial<LiveThread>;
  disarmedAt?: number;
  options?: Partial<EngineOptions>;
}

export function facts(row: Situation): Facts {
  const w = newWatch(T, NOW - 60_000);
  w.goal =
    row.goal === null
      ? null
      : { status: row.goal ?? 'blocked', objective: 'o', tokensUsed: 0, tokenBudget: null, updatedAt: 1 };
  Object.assign(w, row.watch);
  const live = { ...newLive(), status: { type: 'idle' } as LiveThread['status'], ...row.live };
  return { w, live, disarmedAt: row.disarmedAt, options: { ...DEFAULT_OPTIONS, ...row.options }, now: NOW };
}

/** A failure of `turnId` counted once, its recovery due at `dueAt`. */
export const counted = (turnId: string, dueAt: number | null = NOW + 5_000) => ({
  failures: 1,
  lastFailure: { turnId, message: 'boom', code: 'internalServerError', httpStatus: null, at: NOW - 1, dueAt },
});

/** The shipped budget's worth of automatic recoveries, one a minute up to `last`. */
export const spentBudget = (last = NOW - 60_000): number[] =>
  Array.from({ length: DEFAULT_OPTIONS.recoveryBudget }, (_, i) => last - i * 60_000).reverse();
