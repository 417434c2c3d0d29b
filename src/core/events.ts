// The daemon event table: what each notification tells the engine about a thread. Every event
// bumps the thread's sequence number (an attempt whose reads saw one is called off: the
// notification barrier) and queues a look at the thread in its queue (jobs.ts); what an event decides is
// asked of the table (policy.ts: a completed turn ends the run of failures).
import type { DaemonListener, ThreadGoal } from '../protocol/daemon';
import { describeErrorInfo } from './classify';
import type { EngineCore } from './engineCore';
import type { LiveThread, RateLimitNotice } from './live';
import { endsFailureRun } from './policy';

/**
 * How long before a goal's `usageLimited` update a rate-limit notification still counts as that
 * limit's evidence. The daemon sends it just before the goal update on the same connection
 * (measured: the frame right before it, in the same millisecond, docs/daemon-behaviour.md (o)),
 * and every 429 sends one (all fields null when the provider sent no headers), so the one right
 * before is the limit's own; the bound only keeps a notification from an older request, when
 * this one sent none to this connection (a thread it is not subscribed to), from counting.
 */
export const LIMIT_NOTICE_MS = 5_000;
import { goalSnapshot } from './reads';

export interface EventSinks {
  /** Goals a notification showed active on threads not yet watched (adopted on evaluation). */
  seenActive: Map<string, ThreadGoal>;
  /** The connection closed. */
  closed: (reason: string) => void;
}

/** The listener of one connection: events of an older connection (another generation) are dropped. */
export function daemonListener(core: EngineCore, generation: number, sinks: EventSinks): DaemonListener {
  /** The latest `account/rateLimits/updated` on this connection (a reconnect starts with none). */
  let latestLimits: RateLimitNotice | null = null;
  const bump = (threadId: string): LiveThread => {
    const live = core.liveOf(threadId);
    live.seq += 1;
    live.loaded = true;
    core.mark(threadId);
    return live;
  };
  const handlers: DaemonListener = {
    goalUpdated: (threadId, goal) => {
      const live = bump(threadId);
      // The limit's evidence: the notification right before this update. A later update of the
      // same limit (another client's resume re-sends the goal) keeps it; any other status drops it.
      if (goal.status !== 'usageLimited') live.limitNotice = null;
      else if (latestLimits !== null && core.now() - latestLimits.at <= LIMIT_NOTICE_MS)
        live.limitNotice = latestLimits;
      const w = core.state.watches[threadId];
      if (w) w.goal = goalSnapshot(goal);
      else if (goal.status === 'active') sinks.seenActive.set(threadId, goal); // it may block before the engine looks
      if (w || goal.status === 'active') core.touch(threadId);
    },
    goalCleared: (threadId) => {
      bump(threadId);
      const w = core.state.watches[threadId];
      if (w) w.goal = null;
      core.touch(threadId);
    },
    threadStatus: (threadId, status) => {
      const live = bump(threadId);
      live.status = status;
      if (status.type === 'notLoaded') {
        // Unloaded, the thread has no subscribers: loaded again, it is subscribed anew (as after thread/closed).
        live.loaded = false;
        live.subscribed = false;
      }
      core.touch(threadId);
    },
    threadStarted: (thread) => {
      const live = bump(thread.id);
      live.status = thread.status;
    },
    threadClosed: (threadId) => {
      const live = bump(threadId);
      live.loaded = false;
      live.subscribed = false;
      core.touch(threadId);
    },
    turnStarted: (threadId, turn) => {
      const live = bump(threadId);
      live.requestSince = core.now();
      live.turn = turn;
      live.turnFromEvent = true;
      live.retrying = null;
      core.touch(threadId);
    },
    turnCompleted: (threadId, turn) => {
      const live = bump(threadId);
      live.turn = turn;
      live.turnFromEvent = true;
      live.retrying = null;
      live.approvals = null;
      const w = core.state.watches[threadId];
      if (w && endsFailureRun(turn.status)) w.failures = 0;
      // Its last response said what it had to (a turn's end is no newer request of its own).
      live.requestSince = null;
      core.touch(threadId);
    },
    responseCompleted: (threadId) => {
      // The provider answered a request sent no earlier than `since` (a response that began
      // before an outage and ends after it proves nothing of the outage).
      const live = core.liveOf(threadId);
      const since = live.requestSince;
      live.requestSince = core.now();
      if (since !== null) core.schedule.answered(threadId, since);
    },
    error: (threadId, _turnId, error, willRetry) => {
      const live = bump(threadId);
      live.retrying = willRetry ? error.message || describeErrorInfo(error.codexErrorInfo).code : null;
      core.touch(threadId);
    },
    serverRequest: (threadId, requestId, method) => {
      if (threadId === null) return;
      const live = bump(threadId);
      (live.approvals ??= new Set()).add(requestId);
      core.emit({
        type: 'skipped',
        threadId,
        reason: 'waiting for the user',
        detail: `${method} left to the user's client`,
      });
      core.touch(threadId);
    },
    serverRequestResolved: (threadId, requestId) => {
      const live = bump(threadId);
      live.approvals?.delete(requestId);
      core.touch(threadId);
    },
    rateLimitsUpdated: (snapshot) => {
      latestLimits = { snapshot, at: core.now() };
    },
    protocolProblem: (message) => core.emit({ type: 'warning', message: `protocol: ${message}` }),
    closed: (reason) => sinks.closed(reason),
  };
  return onlyWhile(handlers, () => generation === core.generation && !core.stopped);
}

/** The listener, dropping every event once `current` says its connection is no longer the engine's. */
function onlyWhile(l: DaemonListener, current: () => boolean): DaemonListener {
  return {
    goalUpdated: (...a) => current() && l.goalUpdated(...a),
    goalCleared: (...a) => current() && l.goalCleared(...a),
    threadStatus: (...a) => current() && l.threadStatus(...a),
    threadStarted: (...a) => current() && l.threadStarted(...a),
    threadClosed: (...a) => current() && l.threadClosed(...a),
    turnStarted: (...a) => current() && l.turnStarted(...a),
    turnCompleted: (...a) => current() && l.turnCompleted(...a),
    error: (...a) => current() && l.error(...a),
    responseCompleted: (...a) => current() && l.responseCompleted(...a),
    serverRequest: (...a) => current() && l.serverRequest(...a),
    serverRequestResolved: (...a) => current() && l.serverRequestResolved(...a),
    rateLimitsUpdated: (...a) => current() && l.rateLimitsUpdated(...a),
    protocolProblem: (...a) => current() && l.protocolProblem(...a),
    closed: (...a) => current() && l.closed(...a),
  };
}
