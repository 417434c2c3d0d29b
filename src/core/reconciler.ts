// Looking at a thread: the reads that gather the facts (goal, thread, newest turn, the
// rollout's markers), then the decision table (policy.ts) and carrying out its verdict. Also
// the first sight of a goal (adopt, arm) and the subscription to a thread's turn events.
import { newWatch, type Watch } from '../model/watch';
import { isDisarmed } from '../model/queries';
import { ConnectionLostError, type DaemonSession, type Resumed, RpcError, type ThreadGoal } from '../protocol/daemon';
import type { EngineCore } from './engineCore';
import { readMarkers } from './humanMarkers';
import { type LiveThread, resumeIsSafe } from './live';
import { adoptsFromElsewhere, type ElsewhereState, resumesRetry } from './elsewherePolicy';
import { adopts, decide, type Facts, keepsOnUnload, pendingOutcome, type Verdict } from './policy';
import {
  applyVerdict,
  armed,
  confirmRecovered,
  intentLost,
  notAdopted,
  takeOver,
  unloaded,
  usagePlanned,
} from './transitions';
import { applyThread, goalSnapshot, newestTurn, notMaterialized, readAll, sameGoal } from './reads';
import { errorText } from '../util/errorText';
import { findTurnRateLimits } from '../rollout/backwardLookups';
import type { RateLimitSnapshot } from '../protocol/schema';
import { type LimitReading, readLimit, untimedFromMessage } from './rateLimits';
import { resetFromMessage } from './usageReset';
import { usagePlan } from './usagePlan';
import { goalSeen, pendingIs } from './watchWrites';

export class Reconciler {
  /** Goals a notification showed active on threads not yet watched (adopted on evaluation). */
  readonly seenActive = new Map<string, ThreadGoal>();

  constructor(private readonly core: EngineCore) {}

  /** The facts the table decides on, as they are now. */
  facts(w: Watch, now = this.core.now()): Facts {
    const core = this.core;
    return {
      w,
      live: core.liveOf(w.threadId),
      disarmedAt: core.state.disarmed[w.threadId],
      options: core.options,
      now,
    };
  }

  async evaluate(session: DaemonSession, threadId: string): Promise<void> {
    const core = this.core;
    const w = core.state.watches[threadId];
    const live = core.liveOf(threadId);
    live.needsLook = false; // set again if this look fails
    if (!w) {
      // A goal became active on a thread the engine has not seen: adopt it. It was active when
      // the notification was sent, even if it is blocked by the time the engine looks.
      const seen = this.seenActive.get(threadId);
      this.seenActive.delete(threadId);
      const goal = await session.getGoal(threadId);
      if (goal && !core.state.watches[threadId]) await this.adopt(session, threadId, seen ?? goal, goal);
      return;
    }
    await this.lookAt(session, w, live);
    if (live.goalUnsure && live.loaded && core.state.watches[threadId] === w) await this.checkGoal(session, w, live);
  }

  private async lookAt(session: DaemonSession, w: Watch, live: LiveThread): Promise<void> {
    const core = this.core;
    const threadId = w.threadId;
    if (w.state.kind === 'elsewhere') return this.fromElsewhere(session, w, w.state);
    if (!live.loaded) return this.markUnloaded(w);
    if (w.goal === null) return this.decide(session, w); // a cleared goal: the table forgets the watch
    if (w.state.kind === 'notAdopted') {
      if (adopts(w.goal.status, core.options) && !core.state.disarmed[threadId]) await this.arm(session, w);
      else if (w.state.status !== w.goal.status) notAdopted(core, w, w.goal.status, true);
      return;
    }
    if (!isDisarmed(w.state) && !live.subscribed) await this.subscribe(session, threadId);
    await this.decide(session, w);
  }

  /**
   * After a look that a goal event with news asked for (events.ts), or a resync whose goal read an
   * event overtook: the goal as the daemon holds it now. An event's status may be older than one
   * before it (docs/daemon-behaviour.md (s): a resume's copy of the goal, read before a completion,
   * came after the completion's own event), and an overtaking event need not be about the goal; if
   * the goal differs, the engine looks again with it. Kept only if no event came while it was read
   * (that event's look checks again). Read after the look, not before: what the events told is
   * acted on at once, and the read adds no wait between an event and its decision.
   */
  private async checkGoal(session: DaemonSession, w: Watch, live: LiveThread): Promise<void> {
    const seq = live.seq;
    const goal = await session.getGoal(w.threadId);
    if (live.seq !== seq) return;
    live.goalUnsure = false;
    const now = goal ? goalSnapshot(goal) : null;
    const same = sameGoal(w.goal, now);
    goalSeen(w, now);
    if (!same) await this.lookAt(session, w, live);
  }

  /** One RPC for a thread the engine already knows and whose goal did not change (the resync). */
  async refresh(session: DaemonSession, threadId: string): Promise<void> {
    const core = this.core;
    const live = core.liveOf(threadId);
    live.loaded = true;
    const seq = live.seq;
    const goal = await session.getGoal(threadId);
    const w = core.state.watches[threadId];
    if (live.seq !== seq) {
      // Events won the race: trust them. The goal read active all the same: it was active while
      // this engine watched, so a block that follows is new (found by the transport property:
      // an event overtook the first read, the look after it saw the goal blocked by then and
      // left it unadopted).
      if (!w && goal?.status === 'active' && !this.seenActive.has(threadId)) this.seenActive.set(threadId, goal);
      // The event need not be about the goal (a status, a turn's end): the goal read is not kept,
      // and the look checks it again (found by daemonKilled: a status event during this read left
      // a goal that had completed while the engine was disconnected `active` until the next resync).
      live.goalUnsure = true;
      return this.evaluate(session, threadId);
    }
    if (!w) {
      if (goal) await this.adopt(session, threadId, goal);
      return;
    }
    const before = w.goal;
    live.goalUnsure = false;
    goalSeen(w, goal ? goalSnapshot(goal) : null);
    const unchanged = before !== null && sameGoal(before, w.goal);
    // Unchanged is not enough when the last look failed: an event may have updated the goal
    // and the look it started (reading the turn) never finished.
    if (unchanged && live.subscribed && w.state.kind !== 'unloaded' && w.pending === null && !live.needsLook) return;
    await this.evaluate(session, threadId);
  }

  /** Gathers what the table needs, asks it, and carries out its verdict. */
  async decide(session: DaemonSession, w: Watch): Promise<void> {
    const core = this.core;
    const threadId = w.threadId;
    const live = core.liveOf(threadId);
    const now = core.now();
    // Disarmed, or no goal: the table answers without reads.
    if (core.state.disarmed[threadId] !== undefined || !w.goal)
      return this.apply(session, w, decide(this.facts(w, now)));
    const stopped = w.goal.status === 'blocked' || w.goal.status === 'usageLimited';
    // Subscribed, the engine was told how the newest turn ended (events come in wire order, and
    // what it knew is forgotten on a reconnect): nothing to read again.
    const known = live.subscribed && live.turnFromEvent && live.turn !== null && live.turn.status !== 'inProgress';
    if ((stopped && !known) || w.rolloutPath === null || w.pending !== null) {
      // Codex marks the goal blocked before the turn completes, and an event may have been
      // missed (not subscribed yet, a reconnect, a restart with an intent pending): read the
      // thread (and its rollout's path) and how its newest turn ended, before the rollout is read.
      const seq = live.seq;
      const [thread, turn] = await readAll(
        session.readThread(threadId),
        session.latestTurn(threadId).catch(notMaterialized),
      );
      if (live.seq === seq) {
        live.status = thread.status;
        live.turn = turn;
        applyThread(w, thread);
      }
    }
    // Just armed, the goal active: the table settles an active goal without the rollout, and a
    // person's marker comes with a goal event of its own (paused, or active again), which brings
    // the next look. The first look at the rollout waits for a decision that can use it (a goal
    // stopped or paused, an intent pending): read then, back from the end to the goal's last
    // activation, it finds what a read now would have, less what a later activation overrode.
    // With 10,000 threads armed at once, this read was a fifth of the CPU the arming cost.
    const readLater = w.armOffset === null && w.goal.status === 'active' && w.pending === null;
    if (!readLater) await readMarkers(core, w);
    // A prepared set (a `send` job waiting for its due time) is not sent yet; a person's marker speaks first.
    if (w.pending && !core.work.has(threadId, 'send') && w.state.kind !== 'userIntent') this.resolvePending(w, live);
    await this.apply(session, w, decide(this.facts(w, now)));
  }

  private async apply(session: DaemonSession, w: Watch, verdict: Verdict): Promise<void> {
    if (verdict.act === 'readReset') return this.usageLimit(session, w, verdict.key);
    applyVerdict(this.core, w, verdict);
  }

  /**
   * A new usage limit: resumed after its reset plus a margin, the reset from the best source
   * (the rate limits in the thread's rollout, else the daemon's rate-limit update that came with
   * it, the account's read, the message's minute), or, when a source says no reset clears it, a
   * person's call (`usagePlan`). The update names no thread: when several threads hit their limits
   * at once, the latest may be another's; the rollout's line is the turn's own, so when there is
   * one (even one that tells nothing: no headers) the update is not read.
   */
  private async usageLimit(session: DaemonSession, w: Watch, key: string): Promise<void> {
    const core = this.core;
    const live = core.liveOf(w.threadId);
    const own = await this.rolloutLimits(w);
    const rollout = own && readLimit([own], core.now());
    const notice = !own && live.limitNotice ? readLimit([live.limitNotice.snapshot], live.limitNotice.at) : null;
    let read: LimitReading | null = null;
    if (rollout === null && notice === null) read = await this.readLimits(session, w.threadId);
    const now = core.now();
    const text = live.turn?.error?.message ?? null;
    const message = text !== null ? resetFromMessage(text, now) : null;
    const messageLimit = text !== null ? untimedFromMessage(text) : null;
    usagePlanned(core, w, key, usagePlan({ rollout, notice, read, message, messageLimit }, now, core.options));
  }

  /** The failed turn's rate limits in its rollout (daemon-behaviour (r)), or null (none, or unreadable: said). */
  private async rolloutLimits(w: Watch): Promise<RateLimitSnapshot | null> {
    const path = w.rolloutPath;
    if (path === null) return null;
    const onRead = this.core.deps.onRolloutRead;
    try {
      return await findTurnRateLimits(path, {
        minOffset: w.armOffset ?? 0, // the goal's activation: nothing before it is this turn's
        ...(onRead && { onRead: (position: number, length: number) => onRead(path, position, length) }),
      });
    } catch (error) {
      this.core.emit({
        type: 'warning',
        threadId: w.threadId,
        message: `could not read the rollout: ${errorText(error)}`,
      });
      return null;
    }
  }

  /** `account/rateLimits/read` (fails without a Codex account: said, and the message is used). */
  private async readLimits(session: DaemonSession, threadId: string): Promise<LimitReading | null> {
    try {
      return readLimit(await session.readRateLimits(), this.core.now());
    } catch (error) {
      if (error instanceof ConnectionLostError) throw error;
      this.core.emit({
        type: 'warning',
        threadId,
        message: `could not read the rate limits (${errorText(error)}); using the reset time in the error message, if any`,
      });
      return null;
    }
  }

  /** After a crash, a reconnect or an error reply: did the set take effect? The daemon's state says. */
  private resolvePending(w: Watch, live: LiveThread): void {
    const core = this.core;
    const pending = w.pending;
    if (!pending) return;
    switch (pendingOutcome(w, live)) {
      case 'undecided':
        return;
      case 'recovered':
        return confirmRecovered(core, w, pending.failedTurnId, pending.attempt, 'confirmed from the daemon state');
      case 'moot':
        pendingIs(w, null);
        core.mark(w.threadId);
        return;
      case 'lost':
      case 'rejected':
        return intentLost(core, w);
    }
  }

  /**
   * First sight of a thread with a goal: arm it only if the goal is active (and `autoArm` is on).
   * `seen`: the goal as first seen (a notification may show it active); `current`: as it is now.
   */
  async adopt(session: DaemonSession, threadId: string, seen: ThreadGoal, current: ThreadGoal = seen): Promise<void> {
    const core = this.core;
    const w = newWatch(threadId, core.now());
    goalSeen(w, goalSnapshot(current), current.objective || threadId);
    core.state.watches[threadId] = w;
    core.mark(threadId);
    if (!adopts(seen.status, core.options)) {
      notAdopted(core, w, current.status, true);
      core.changed();
      return;
    }
    await this.arm(session, w);
  }

  /**
   * The arming is the goal's last activation in the rollout (Codex writes a goal event for every
   * thread/goal/set): the model may block it, or the user pause it, before the engine has read
   * anything. The first look at the rollout finds that offset.
   */
  private async arm(session: DaemonSession, w: Watch): Promise<void> {
    const core = this.core;
    const resumed = await this.subscribe(session, w.threadId);
    armed(core, w);
    const live = core.liveOf(w.threadId);
    const seq = live.seq;
    // The newest turn as of the subscription (a turn may end between an earlier read and it,
    // unseen). A brand-new thread has no turn to list yet ("not materialized"): its events tell.
    const turn = await newestTurn(session, w.threadId, resumed);
    if (live.seq === seq) {
      if (resumed) live.status = resumed.thread.status;
      live.turn = turn;
    }
    await this.decide(session, w);
  }

  /** `thread/resume` on a loaded thread, once per connection: turn and error events follow. */
  async subscribe(session: DaemonSession, threadId: string): Promise<Resumed | null> {
    const core = this.core;
    const live = core.liveOf(threadId);
    if (live.subscribed || !live.loaded) return null;
    const w = core.state.watches[threadId];
    if (w && !resumeIsSafe(w.goal?.status, live)) {
      // Not as known: the thread's status is read (unless the resync's page of statuses, or an
      // event since, says a turn runs), and only when no turn runs by it, its newest turn too.
      const seq = live.seq;
      const thread = await session.readThread(threadId);
      if (live.seq !== seq) return null; // something happened meanwhile: decide again on its event
      live.status = thread.status;
      applyThread(w, thread);
      if (!resumeIsSafe(w.goal?.status, live)) {
        const turn = await session.latestTurn(threadId).catch(notMaterialized);
        if (live.seq !== seq) return null;
        live.turn = turn;
        if (!resumeIsSafe(w.goal?.status, live)) return null;
      }
    }
    let resumed: Resumed;
    if (core.fence() !== null) return null; // a stale leader writes nothing to the daemon
    try {
      resumed = await session.resume(threadId);
    } catch (error) {
      // e.g. a brand-new thread whose rollout does not exist yet: try again on its next event.
      if (!(error instanceof RpcError)) throw error;
      // A thread whose rollout does not exist yet is refused on every event until it does: say
      // so once. Any other refusal is an error of its own, logged each time.
      const notYet = /no rollout found/i.test(error.message);
      if (!notYet || !live.subscribeFailed)
        core.emit({ type: 'warning', threadId, message: `not subscribed yet: ${error.message}` });
      if (notYet) live.subscribeFailed = true;
      return null;
    }
    live.subscribed = true;
    const watched = core.state.watches[threadId];
    if (watched) applyThread(watched, resumed.thread);
    return resumed;
  }

  /**
   * A goal shown `elsewhere`, looked at because the daemon told of it or listed it loaded: if
   * the daemon has loaded it now (a person opened it in one of its clients), the daemon's rows
   * take over, armed or not by `adoptsFromElsewhere`; if not, the home scan keeps showing it.
   */
  private async fromElsewhere(session: DaemonSession, w: Watch, state: ElsewhereState): Promise<void> {
    const core = this.core;
    const live = core.liveOf(w.threadId);
    const [thread, goal] = await readAll(session.readThread(w.threadId), session.getGoal(w.threadId));
    live.status = thread.status;
    live.loaded = thread.status.type !== 'notLoaded';
    if (!live.loaded) return;
    applyThread(w, thread);
    if (!goal) return core.forget(w.threadId, 'goal cleared');
    goalSeen(w, goalSnapshot(goal));
    if (resumesRetry(state, goal.status, w.lastFailure?.turnId ?? null)) {
      core.emit({
        type: 'loaded',
        threadId: w.threadId,
        reason: 'the Retry now asked before a restart loaded the thread: carried out',
      });
      takeOver(core, w, goal.status);
      const resumed = await this.subscribe(session, w.threadId); // a blocked goal's resume starts no turn (measured)
      live.turn = await newestTurn(session, w.threadId, resumed);
      return this.decide(session, w);
    }
    core.emit({ type: 'loaded', threadId: w.threadId, reason: 'a goal from another Codex app is in the daemon now' });
    if (adoptsFromElsewhere(state, goal.status, core.options) && core.state.disarmed[w.threadId] === undefined)
      return this.arm(session, w);
    notAdopted(core, w, goal.status);
  }

  /** The daemon no longer has the thread loaded: what waited for it says so. */
  markUnloaded(w: Watch): void {
    if (!keepsOnUnload(w.state)) unloaded(this.core, w);
  }
}
