// What the engine knows of a thread right now, from the daemon's events and reads.
// Never persisted: after a restart or a reconnect it is read again.
import type { RateLimitSnapshot, RequestId, ThreadStatus, Turn } from '../protocol/daemon';

/** An `account/rateLimits/updated` and when it arrived (ms). */
export interface RateLimitNotice {
  snapshot: RateLimitSnapshot;
  at: number;
}

export interface LiveThread {
  /** Last known thread status, or null when not known on this connection. */
  status: ThreadStatus | null;
  /** The newest turn known (from turn events or `thread/turns/list`). */
  turn: Turn | null;
  /** Set while Codex retries the turn itself (`error` with `willRetry: true`). */
  retrying: string | null;
  /** Server requests (approvals, user input) waiting for the user's client; null until the first (most threads). */
  approvals: Set<RequestId> | null;
  /** Bumped by every event about the thread: a check that spans reads acts only if it is unchanged. */
  seq: number;
  /** Resumed (subscribed to turn events) on the current connection. */
  subscribed: boolean;
  /** A resume was refused on this connection because the thread has no rollout yet (reported once). */
  subscribeFailed: boolean;
  loaded: boolean;
  /** The last look at the thread failed part-way: the next resync looks again in full. */
  needsLook: boolean;
  /**
   * The goal the engine holds may not be the daemon's: told by a `thread/goal/updated`, whose status
   * may be older than one told before it (docs/daemon-behaviour.md (s)), or a resync's read of it
   * was overtaken by an event (which need not be about the goal). The look checks it (checkGoal).
   */
  goalUnsure: boolean;
  /**
   * `turn` came from a turn event on this connection: subscribed, the engine hears how every
   * later turn ends, so a blocked goal needs no re-read. A turn read before subscribing may be stale.
   */
  turnFromEvent: boolean;
  /**
   * The rate limits the daemon sent on this connection just before it told that the goal turned
   * `usageLimited` (`events.ts`): the evidence of when that limit resets. Null: none came.
   */
  limitNotice: RateLimitNotice | null;
  /**
   * The latest the request whose response completes next was sent: the turn's start, then each
   * response (the next request follows it). Null: not known (a turn that began before the engine
   * heard of it). A response proves the provider up only for failures older than this.
   */
  requestSince: number | null;
}

export function newLive(): LiveThread {
  return {
    status: null,
    turn: null,
    retrying: null,
    approvals: null,
    seq: 0,
    subscribed: false,
    subscribeFailed: false,
    loaded: true,
    needsLook: false,
    goalUnsure: false,
    turnFromEvent: false,
    limitNotice: null,
    requestSince: null,
  };
}

export function isThreadActive(status: ThreadStatus | null): boolean {
  return status?.type === 'active';
}

export function waitsForPerson(live: LiveThread): boolean {
  if (live.approvals !== null && live.approvals.size > 0) return true;
  const status = live.status;
  return status !== null && status.type === 'active' && 'activeFlags' in status && status.activeFlags.length > 0;
}

/** A turn runs: the thread is active, or its newest turn is in progress. */
export function turnRuns(live: Pick<LiveThread, 'status' | 'turn'>): boolean {
  return isThreadActive(live.status) || live.turn?.status === 'inProgress';
}

/**
 * Whether `thread/resume` may subscribe to the thread as it is known: measured with 0.169.0,
 * resuming an idle thread whose goal is active starts a turn, i.e. restarts work the user
 * interrupted. So a goal that is active is subscribed to only while a turn runs.
 */
export function resumeIsSafe(goalStatus: string | undefined, live: Pick<LiveThread, 'status' | 'turn'>): boolean {
  return goalStatus !== 'active' || turnRuns(live);
}
