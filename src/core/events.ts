// The daemon event table: what each notification tells the engine about a thread. Every event
// bumps the thread's sequence number (an attempt whose reads saw one is called off: the
// notification barrier) and queues a look at the thread in its queue (jobs.ts); what an event decides is
// asked of the table (policy.ts: a completed turn ends the run of failures).
import type { DaemonListener, ThreadGoal } from '../protocol/daemon';
import { describeErrorInfo } from './classify';
import type { EngineCore } from './engineCore';
import type { LiveThread, RateLimitNotice } from './live';
import { endsFailureRun } from './policy';
import { limitEvidence } from './rateLimits';

import { goalSnapshot, sameGoal } from './reads';
import { failuresAre, goalSeen } from './watchWrites';

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
      live.limitNotice = limitEvidence(goal.status, live.limitNotice, latestLimits, core.now());
      const w = core.state.watches[threadId];
      const told = goalSnapshot(goal);
      // Something new may be stale (docs/daemon-behaviour.md (s)): the look checks the goal. A copy
      // of the goal known (a resume's, a token count's) changes no decision and is not checked.
      if (w && !sameGoal(w.goal, told)) live.goalUnsure = true;
      if (w) goalSeen(w, told);
      else if (goal.status === 'active') sinks.seenActive.set(threadId, goal); // it may block before the engine looks
      if (w || goal.status === 'active') core.touch(threadId);
    },
    goalCleared: (threadId) => {
      bump(threadId);
      const w = core.state.watches[threadId];
      if (w) goalSeen(w, null);
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
      if (w && endsFailureRun(turn.status)) failuresAre(w, 0);
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
  const guarded: Record<string, (...a: unknown[]) => unknown> = {};
  for (const [name, handler] of Object.entries(l) as [string, (...a: unknown[]) => void][])
    guarded[name] = (...a) => current() && handler(...a);
  return guarded as unknown as DaemonListener;
}
