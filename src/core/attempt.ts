// A recovery's `due` job (engineCore.ts sets it from the watch): its turn (its outage's probe
// first, then the global limiter: schedule.ts), then the attempt: fresh reads, the veto (the
// decision table asked again), the write-ahead intent saved, `thread/goal/set` at the due time,
// and the outcome read from the daemon's state, never from the reply alone (docs/architecture.md,
// "A recovery, step by step").
import type { Watch } from '../model/watch';
import { dueAt, scheduledOf } from '../model/queries';
import { ConnectionLostError, type DaemonSession } from '../protocol/daemon';
import type { EngineCore } from './engineCore';
import { readMarkers } from './humanMarkers';
import type { Prepared } from './jobs';
import type { LiveThread } from './live';
import { dueTurn, outageGroup } from './outage';
import type { Reconciler } from './reconciler';
import type { Schedule } from './schedule';
import { confirmRecovered, dueNotBefore, recovering, setWithdrawn, unhold } from './transitions';
import { setTookEffect, veto } from './policy';
import { applyThread, goalSnapshot, readMoment } from './reads';
import { errorText } from '../util/errorText';
import { goalSeen, pendingIs, recoveryCounted, recoveryUncounted } from './watchWrites';

/** Why an attempt was called off just before the set: data, logged as `skipped`. */
class Abort extends Error {}
/** The write-ahead save failed: the set is not sent, and the recovery waits `SAVE_RETRY_MS`. */
class SaveFailed extends Abort {}
const SAVE_RETRY_MS = 5_000;

export class Attempts {
  constructor(
    private readonly core: EngineCore,
    private readonly reconciler: Reconciler,
    private readonly schedule: Schedule,
  ) {}

  /**
   * Stopping: every prepared set still waiting for its due time is withdrawn (not sent: due again
   * at the next start). A `send` job already due calls itself off when it runs (`check`: stopping);
   * a set already on the wire keeps its intent and its count, and its reply decides.
   */
  withdrawAll(): void {
    const core = this.core;
    for (const { job } of core.work.takeBack('send')) this.withdraw(job.prepared);
  }

  /**
   * A set that never went out: its intent is withdrawn, whatever state a look moved the watch to
   * meanwhile (a newer failed turn, counted while this attempt waited: a stale intent would later
   * take that turn for this set's effect, and confirm a recovery that never happened over it), its
   * count given back to the budget, and its limiter token to the others.
   */
  private withdraw(p: Prepared): void {
    if (p.w.pending?.failedTurnId === p.failedTurnId) pendingIs(p.w, null);
    if (p.sentAt !== null) recoveryUncounted(p.w, p.sentAt);
    setWithdrawn(this.core, p.w, p.scheduled);
    this.schedule.giveBack(p.w.threadId);
  }

  /**
   * The thread's `due` job: its recovery's turn; its slot taken, the attempt runs in this same job,
   * and when it ends (sent, called off, or prepared for its due time) the thread may fall due again.
   */
  async due(threadId: string, notBeforeMono: number): Promise<void> {
    const session = this.turn(threadId, notBeforeMono);
    if (session === null) return;
    try {
      await this.run(session, threadId, notBeforeMono);
    } finally {
      this.core.attemptEnded(threadId);
    }
  }

  /**
   * A due recovery's turn came (or its timer fired early: set again). Held for its outage's probe,
   * or for a limiter slot; or its group's first goal goes (this one, or the other, which this one
   * then waits for): its slot taken, it is under way (core.attempting), and its `due` job (this one,
   * or one queued for the other) runs its attempt on the session returned.
   */
  private turn(threadId: string, notBeforeMono: number): DaemonSession | null {
    const { core, schedule } = this;
    const started = core.underway.get(threadId); // its group's turn started it
    if (started) return started;
    const w = core.state.watches[threadId];
    const session = core.session;
    if (!w || core.stopped || core.state.pausedAt !== null || !session || core.attempting(threadId)) return null;
    // Held for a probe that is out no more (its recovery called off, a person's pause, its budget
    // spent, a restart that lost the provider's answer): as scheduled again, so this turn picks a new probe.
    if (w.state.kind === 'waitingProbe' && !schedule.probes.holds(w) && unhold(core, w)) core.changed();
    const at = schedule.actsAt(w);
    if (at === null) return null;
    if (at > core.now()) {
      core.requeue(w, at);
      return null;
    }
    schedule.catchUp(w, notBeforeMono);
    const turn = dueTurn(schedule.groupFacts(w), core.now());
    switch (turn.kind) {
      case 'hold':
        schedule.giveSlotBack(w.threadId);
        schedule.probes.hold(w, turn.probe);
        core.changed();
        break;
      case 'later':
        core.requeue(w, turn.at);
        return null;
      case 'start': {
        const first = turn.first === null ? w : core.state.watches[turn.first];
        if (!this.start(first, first === w ? notBeforeMono : schedule.notBefore(first), session)) break;
        if (first === w) return session;
        schedule.probes.hold(w, first.threadId);
        void core.work.add(first.threadId, { kind: 'due', notBeforeMono: schedule.notBefore(first) });
        break;
      }
    }
    core.requeue(w);
    return null;
  }

  /**
   * A due recovery under way, true (the goal out as its group's probe, if grouped); or held for the
   * next limiter slot, kept for it, false.
   */
  private start(w: Watch, notBeforeMono: number, session: DaemonSession): boolean {
    const { core, schedule } = this;
    const goes = schedule.take(w, notBeforeMono);
    if (goes) {
      // Under way from here (core.attempting): not due again until its attempt ends.
      core.underway.set(w.threadId, session);
      const group = schedule.probes.groupOf(w);
      if (group !== null) schedule.probes.started(w, group);
    }
    core.changed();
    return goes;
  }

  /**
   * The attempt of a due recovery (in its thread's `due` job): re-reads everything, vetoes,
   * persists the intent, then sends the set: at once when it is due, else as a `send` job delayed
   * to the due time (the thread's queue is free meanwhile, and any event for the thread calls the
   * send off).
   */
  private async run(session: DaemonSession, threadId: string, notBeforeMono: number): Promise<void> {
    const core = this.core;
    const w = core.state.watches[threadId];
    if (!w) return;
    const scheduled = scheduledOf(w.state);
    const due = dueAt(w);
    if (!scheduled || due === null || due > core.now() + this.schedule.prepareLead()) return;
    unhold(core, w); // its slot came: no longer held
    const backoff = scheduled.kind === 'backoff';
    const live = core.liveOf(threadId);
    const p: Prepared = {
      session,
      w,
      live,
      seq: live.seq,
      scheduled,
      failedTurnId: backoff ? scheduled.failedTurnId : (w.lastFailure?.turnId ?? ''),
      expectedStatus: backoff ? 'blocked' : 'usageLimited',
      attempt: backoff ? scheduled.attempt : 1,
      sentAt: null,
    };
    try {
      const seq = p.seq;
      const [goal, thread, turn] = await readMoment(session, threadId);
      this.unchanged(live, seq, 'an event arrived while the thread was read');
      goalSeen(w, goal ? goalSnapshot(goal) : null);
      live.status = thread.status;
      applyThread(w, thread);
      live.turn = turn;
      await readMarkers(core, w);
      await this.groupLooked(w);
      // Rescheduled while it read (its outage's probe failed again: the group's next step): that
      // schedule decides now, not the one this attempt set out for.
      if (scheduledOf(w.state) !== p.scheduled) throw new Abort('its recovery was rescheduled meanwhile');
      this.check(p);
      // Write-ahead: the intent is on disk before the set can take effect. The set is counted
      // against the recovery budget with it, before anyone knows whether it takes effect: a set
      // whose reply is lost, or that a crash cuts short, may have started a turn all the same
      // (and cost it), so counting only confirmed recoveries could let a flapping goal past its
      // budget; a crash cannot lose the count, which is on disk with the intent. A set called off
      // before it went out gives its count back (`calledOff`, `withdrawAll`).
      p.sentAt = core.now();
      pendingIs(w, { failedTurnId: p.failedTurnId, attempt: p.attempt, sentAt: p.sentAt });
      recoveryCounted(w, p.sentAt);
      recovering(core, w, p.attempt, p.failedTurnId, p.sentAt);
      if (!(await core.persist()))
        throw new SaveFailed(
          `the intent could not be saved to ${core.deps.store.location}; the recovery waits ${SAVE_RETRY_MS / 1000} s and tries again`,
        );
      this.unchanged(live, seq, 'an event arrived while the intent was saved');
      this.check(p);
    } catch (error) {
      return this.calledOff(p, error);
    }
    const early = Math.max(due - core.now(), notBeforeMono - core.deps.clock.elapsed());
    if (early <= 0) return this.send(p);
    // Prepared ahead: the set goes out at the due time, if nothing happened meanwhile.
    core.work.addAfter(threadId, { kind: 'send', prepared: p }, early);
  }

  /**
   * The looks an event queued for the other goals of its outage's group (its probe's turn failed
   * again, say), finished first: a verdict on its way moves this recovery with its group whether
   * the event or this attempt's reads came first. A goal whose own attempt is under way is not
   * waited for: its look comes after that attempt, which may be waiting for this one's group.
   */
  private async groupLooked(w: Watch): Promise<void> {
    const core = this.core;
    const group = outageGroup(w);
    if (group === null) return;
    // Only threads with a look queued: with 10,000 watches, a pass over all of them per attempt
    // made each recovery late (bench: timer-precision).
    const looks = [...core.work.keysWith('look')]
      .map((id) => core.state.watches[id])
      .filter((x) => x && x !== w && !core.attempting(x.threadId) && outageGroup(x) === group)
      .map((x) => core.work.add(x.threadId, { kind: 'look' }).catch(() => undefined));
    await Promise.all(looks);
  }

  private unchanged(live: LiveThread, seq: number, reason: string): void {
    if (live.seq !== seq) throw new Abort(reason);
  }

  /** The veto on fresh reads: the decision table must still keep this very recovery due. */
  private check(p: Prepared): void {
    const core = this.core;
    if (core.stopped) throw new Abort('stopping');
    const facts = this.reconciler.facts(p.w);
    const reason = veto(facts, p.expectedStatus, p.failedTurnId, core.state.pausedAt !== null);
    if (reason === null) return;
    if (p.live.status?.type === 'notLoaded') p.live.loaded = false; // until some client loads it again
    throw new Abort(reason);
  }

  /** The attempt stops before the set: the intent is withdrawn and the thread decided again. */
  private async calledOff(p: Prepared, error: unknown): Promise<void> {
    const core = this.core;
    const { w, failedTurnId } = p;
    this.withdraw(p);
    // Never sent without its intent on disk; and not at once again, against a failing disk.
    if (error instanceof SaveFailed) dueNotBefore(core, w, failedTurnId, core.now() + SAVE_RETRY_MS);
    if (!(error instanceof Abort)) throw error;
    core.emit({ type: 'skipped', threadId: w.threadId, reason: error.message });
    if (core.session === p.session && !core.stopped) {
      // Until some client loads it again, an unloaded thread waits as such.
      if (!core.liveOf(w.threadId).loaded) this.reconciler.markUnloaded(w);
      else await this.reconciler.decide(p.session, w);
      core.saver.persistSoon();
    } else await core.persist();
  }

  /**
   * Sends the set of a prepared attempt, after a last check: at once from `run` when it is due, or
   * as its thread's `send` job at its due time.
   */
  async send(p: Prepared): Promise<void> {
    const core = this.core;
    const { session, w, live, failedTurnId, attempt } = p;
    const threadId = w.threadId;
    try {
      if (core.session !== session || core.liveOf(threadId) !== live)
        throw new Abort('the connection changed while the recovery waited for its due time');
      this.unchanged(live, p.seq, 'an event arrived while the recovery waited for its due time');
      this.check(p);
    } catch (error) {
      await this.calledOff(p, error);
      return;
    }
    // A leader stopped or blocked past its lease sends nothing: another engine may have recovered
    // this very turn meanwhile. It is stepping down; the intent on disk is resolved from the
    // daemon's state by whichever engine looks next. Checked with no `await` before the set.
    if (core.fence() !== null) return;
    // Never past the limiter: sets that took their tokens after this one may have gone out first.
    const wait = this.schedule.spend(threadId);
    if (wait > 0) return core.work.addAfter(threadId, { kind: 'send', prepared: p }, wait);
    // What it announces is on disk already (the write-ahead: `recovering`, the intent): the set
    // goes out at once, and the line follows with the next save (waiting for one here would put
    // every save under way between the due time and the set).
    core.emit({ type: 'recovering', threadId, attempt, failedTurnId });
    try {
      const result = await session.setGoalActive(threadId);
      if (result) goalSeen(w, goalSnapshot(result));
      if (setTookEffect(result?.status, live.turn, failedTurnId))
        confirmRecovered(core, w, failedTurnId, attempt, 'thread/goal/set accepted');
    } catch (error) {
      if (error instanceof ConnectionLostError) {
        // Lost reply: the intent stays on disk; the state after reconnecting decides.
        core.emit({
          type: 'warning',
          threadId,
          message: `${error.message}; the outcome is read back after reconnecting`,
        });
        await core.persist();
        throw error;
      }
      core.emit({
        type: 'warning',
        threadId,
        message: `${errorText(error)}; reading the daemon's state to see whether it took effect`,
      });
      // Refused, unless the daemon's state says otherwise (events that show the goal active, or a
      // newer turn): the intent keeps the refusal, on disk before the next look, with a fresh read
      // of the newest turn, settles it (pendingOutcome: recovered, or a failed try,
      // TestResetSetError); after reconnecting, or restarting, if the connection drops or the
      // engine dies first (a lost refusal would read as a lost set: the same try sent again).
      const sentAt = w.pending?.sentAt ?? core.now();
      pendingIs(w, { failedTurnId, attempt, sentAt, rejected: errorText(error) });
      await core.persist();
      core.touch(threadId);
      return;
    }
    await this.reconciler.decide(session, w);
    core.saver.persistSoon();
  }
}
