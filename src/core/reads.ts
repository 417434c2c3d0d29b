// Small pieces of reading the daemon: reads at once with one error naming each failure, a thread's
// moment (goal, thread, newest turn), a brand-new thread's missing turn, and what a goal and a
// thread read tell the watch.
import type { GoalSnapshot, Watch } from '../model/watch';
import {
  ConnectionLostError,
  type DaemonSession,
  type Resumed,
  RpcError,
  type Thread,
  type ThreadGoal,
  type Turn,
} from '../protocol/daemon';
import { errorText } from '../util/errorText';
import { threadRead } from './watchWrites';

/**
 * Reads in parallel. When any fails, one error that names every failure, so the log line for a
 * failed look names each call that failed. Only a lost connection alone stays a
 * `ConnectionLostError` (its own line says it, and the reconnect reads everything again).
 */
export async function readAll<T extends readonly unknown[]>(...reads: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(reads);
  const errors = settled.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  if (errors.length === 0) return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
  if (errors.length === 1 || errors.every((e) => e instanceof ConnectionLostError)) throw errors[0];
  throw new Error(errors.map(errorText).join('; '));
}

/**
 * The goal, the thread and its newest turn, read at once: one moment of the thread if no event
 * came while they were read (the caller compares the thread's event count before and after).
 */
export function readMoment(
  session: DaemonSession,
  threadId: string,
): Promise<[ThreadGoal | null, Thread, Turn | null]> {
  return readAll(
    session.getGoal(threadId),
    session.readThread(threadId),
    session.latestTurn(threadId).catch(notMaterialized),
  );
}

/**
 * A brand-new thread has no turn to list yet (-32600 "… is not materialized yet …"): that is no
 * turn, not an error. Any other error is one: taking it for "no turn" would leave a failed turn
 * unseen, and unlogged.
 */
export function notMaterialized(error: unknown): null {
  if (error instanceof RpcError && /not materialized/i.test(error.message)) return null;
  throw error;
}

/**
 * The newest turn once subscribed: the one the resume's reply gave (the same request), else read
 * (a daemon that gave no page; or `resumed` null: not subscribed by this look).
 */
export async function newestTurn(
  session: DaemonSession,
  threadId: string,
  resumed: Resumed | null,
): Promise<Turn | null> {
  if (resumed && resumed.turn !== undefined) return resumed.turn;
  return session.latestTurn(threadId).catch(notMaterialized);
}

/** The part of a goal the watch keeps. */
export function goalSnapshot(goal: ThreadGoal): GoalSnapshot {
  return {
    status: goal.status,
    objective: goal.objective,
    tokensUsed: goal.tokensUsed,
    tokenBudget: goal.tokenBudget,
    updatedAt: goal.updatedAt,
  };
}

/**
 * The same goal for a decision: its status and `updatedAt` (each activation, stop or completion
 * moves it). Its token count moves with every turn and decides nothing (the watch keeps it to show).
 */
export function sameGoal(a: GoalSnapshot | null, b: GoalSnapshot | null): boolean {
  return a?.status === b?.status && a?.updatedAt === b?.updatedAt;
}

/** A thread read tells the watch where its rollout is and what to call it. */
export function applyThread(w: Watch, thread: Thread): void {
  const title = thread.name || thread.preview || w.goal?.objective;
  threadRead(w, {
    rolloutPath: thread.path ?? null,
    runsOn: thread.modelProvider && thread.model ? `${thread.modelProvider}/${thread.model}` : null,
    title: title ? (title.length > 120 ? `${title.slice(0, 117)}…` : title) : null,
  });
}
