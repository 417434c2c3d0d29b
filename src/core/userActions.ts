// What a person asks of the engine: pause and resume auto-recovery, arm a goal the engine did not
// adopt ("Watch this goal"), disarm and re-arm a thread, "Retry now", "Pause goal", and forgetting
// everything. Each is recorded (durably) as the user's intent; none is ever done on the engine's
// own initiative.
import { emptyState, type Watch } from '../model/watch';
import { canRetryNow, isDisarmed } from '../model/queries';
import { type DaemonSession, RpcError, type Resumed } from '../protocol/daemon';
import type { Connection } from './connection';
import type { EngineCore } from './engineCore';
import type { HomeScan } from './homeScan';
import type { Reconciler } from './reconciler';
import { failureAtArming, personArms } from './arming';
import { decide } from './policy';
import { applyThread, goalSnapshot, newestTurn, readMoment } from './reads';
import {
  applyVerdict,
  armedByPerson,
  dueBy,
  elsewhereRetry,
  rearmedByPerson,
  retriedNow,
  takeOver,
} from './transitions';
import { goalSeen } from './watchWrites';

/** The daemon's refusal to load a thread another process holds (measured on 0.169.0 and 0.171.0). */
const ACTIVE_WRITER = /already has an active writer/i;

export class UserActions {
  constructor(
    private readonly core: EngineCore,
    private readonly reconciler: Reconciler,
    private readonly connection: Connection,
    private readonly home: HomeScan,
  ) {}

  async pauseAll(): Promise<void> {
    const core = this.core;
    core.state.pausedAt = core.now();
    core.emit({ type: 'skipped', threadId: '*', reason: 'auto-recovery paused by the user' });
    core.schedule.release();
    core.changed();
    await core.persist();
  }

  async resumeAll(): Promise<void> {
    const core = this.core;
    core.state.pausedAt = null;
    core.emit({ type: 'rearmed', threadId: '*', reason: 'auto-recovery resumed by the user' });
    core.reschedule();
    core.changed();
    await core.persist();
  }

  /**
   * A person's choice to watch a goal the engine did not adopt ("Watch this goal", `arm THREAD`):
   * armed from now on. What stopped the goal by then (a failed turn, a usage limit) is read first
   * and kept in `beforeArming`: older than the arming, it is never recovered. The arming is saved
   * before the engine subscribes to the thread or says it armed it. A disarm of the user's is
   * cleared: arming it is a choice made again. Already watched: a no-op, said in the log.
   */
  async arm(threadId: string): Promise<void> {
    const core = this.core;
    const first = personArms(core.state.watches[threadId], core.state.disarmed[threadId]);
    if (first.act === 'refuse') throw new Error(`arm ${threadId}: ${first.why}`);
    if (first.act === 'noop') return this.armNoop(threadId, first.why);
    const session = this.session(`arm ${threadId}: `);
    const outcome: { armed: boolean; refused: string | null; noop: string | null } = {
      armed: false,
      refused: null,
      noop: null,
    };
    await core.run(threadId, async () => {
      const w = core.state.watches[threadId];
      const verdict = personArms(w, core.state.disarmed[threadId]); // decided again: something may have come first
      if (verdict.act === 'refuse') return void (outcome.refused = verdict.why);
      if (verdict.act === 'noop') return void (outcome.noop = verdict.why);
      if (!w) return;
      const live = core.liveOf(threadId);
      // The goal, the thread and its newest turn as one moment: read again if an event came between.
      for (let tries = 1; ; tries++) {
        const seq = live.seq;
        const [goal, thread, turn] = await readMoment(session, threadId);
        if (live.seq !== seq && tries < 5) continue;
        if (live.seq !== seq) return void (outcome.refused = 'the thread kept changing while it was read; try again');
        if (!goal) {
          core.forget(threadId, 'goal cleared');
          return void (outcome.refused = 'its goal was cleared');
        }
        goalSeen(w, goalSnapshot(goal));
        live.status = thread.status;
        live.loaded = thread.status.type !== 'notLoaded';
        live.turn = turn;
        applyThread(w, thread);
        break;
      }
      // Armed as at a first arming (from the goal's last activation in the rollout: the first look
      // reads back to it), but what stopped the goal by now stays the person's to resume.
      delete core.state.disarmed[threadId];
      armedByPerson(core, w, failureAtArming(w, live)); // the recovery budget starts afresh
      await core.persist(); // durable before acted on, and before it is said
      outcome.armed = true;
      core.emit({ type: 'armed', threadId, title: w.title });
      if (!live.loaded) this.reconciler.markUnloaded(w);
      else {
        await this.reconciler.subscribe(session, threadId);
        await this.reconciler.decide(session, w);
      }
      core.changed();
    });
    await core.persist();
    if (outcome.noop) return this.armNoop(threadId, outcome.noop);
    if (outcome.refused) throw new Error(`arm ${threadId}: ${outcome.refused}`);
    if (!outcome.armed) throw new Error(`arm ${threadId}: the thread could not be read (see the log); try again`);
  }

  private async armNoop(threadId: string, why: string): Promise<void> {
    this.core.emit({ type: 'skipped', threadId, reason: `arm: ${why}` });
    await this.core.persist();
  }

  /** The user's disarm: recorded once, in `disarmed` (it survives the watch); the state follows from it. */
  async disarm(threadId: string): Promise<void> {
    const core = this.core;
    const now = core.now();
    core.state.disarmed[threadId] = now;
    // The state follows from that record, by the table (its first row).
    const w = core.state.watches[threadId];
    const verdict = w ? decide(this.reconciler.facts(w, now)) : null;
    if (w && verdict?.act === 'settle') applyVerdict(core, w, verdict);
    core.emit({ type: 'disarmed', threadId, reason: 'disarmed by the user' });
    core.changed();
    await core.persist();
  }

  async rearm(threadId: string): Promise<void> {
    const core = this.core;
    const w = core.state.watches[threadId];
    // Never armed (disarmed while not adopted): re-arming it is a person's first arming, from now
    // on; a failure older than that is never recovered.
    if (w?.state.kind === 'disarmed' && w.state.neverArmed) return this.arm(threadId);
    delete core.state.disarmed[threadId];
    if (w && isDisarmed(w.state)) {
      // Armed again as at its first arming: from the goal's last activation in the rollout (the
      // next look reads back to it). What happened since still counts: a block the model chose
      // while the thread was disarmed (never read then) is not taken for a failure to recover,
      // and a person's marker since the activation still speaks for them.
      rearmedByPerson(core, w); // the recovery budget starts afresh
    }
    core.emit({ type: 'rearmed', threadId, reason: 're-armed by the user' });
    await core.persist();
    core.touch(threadId);
  }

  /** Makes a scheduled (or given-up) recovery due now. */
  async retryNow(threadId: string): Promise<void> {
    const core = this.core;
    const w = core.state.watches[threadId];
    if (!w || !canRetryNow(w)) return;
    if (w.state.kind === 'unloaded' || w.state.kind === 'elsewhere') return this.loadAndRetry(w);
    retriedNow(core, w);
    core.changed();
    await core.persist();
  }

  /**
   * "Retry now" on a thread the daemon has not loaded (after a restart it loads none): the
   * person's click loads it with `thread/resume`, then the recovery runs as usual, due now, on
   * fresh reads and checks. Only while its goal is blocked or usage-limited: resuming a thread
   * whose goal is blocked starts no turn, one whose goal is active does (measured, 0.169.0).
   */
  private async loadAndRetry(w: Watch): Promise<void> {
    const core = this.core;
    const session = this.session();
    const threadId = w.threadId;
    const outcome: { refused: string | null } = { refused: null };
    await core.run(threadId, async () => {
      const live = core.liveOf(threadId);
      const fromElsewhere = w.state.kind === 'elsewhere';
      if (core.state.watches[threadId] !== w || !canRetryNow(w)) return; // decided meanwhile
      if (w.state.kind === 'unloaded' && live.loaded) return;
      const goal = await session.getGoal(threadId);
      goalSeen(w, goal ? goalSnapshot(goal) : null);
      if (goal?.status !== 'blocked' && goal?.status !== 'usageLimited') {
        outcome.refused = `nothing to retry, the goal is ${goal?.status ?? 'cleared'} now`;
        core.changed();
        return;
      }
      const asked = w.state.kind === 'elsewhere' ? w.state : null;
      if (asked && w.lastFailure) {
        // Durable before acted on: a restart that finds the thread loaded carries the retry out.
        elsewhereRetry(core, w, asked, true);
        await core.persist();
      }
      let resumed: Resumed;
      core.mustLead('Retry now');
      try {
        resumed = await session.resume(threadId);
      } catch (error) {
        if (!(error instanceof RpcError)) throw error;
        if (asked) elsewhereRetry(core, w, asked, false); // refused: nothing to carry out
        outcome.refused = ACTIVE_WRITER.test(error.message)
          ? 'another Codex app still has this thread open (the daemon cannot load it while it does): continue it there, or close it there and Retry now'
          : `the daemon did not load it: ${error.message}`;
        core.emit({ type: 'warning', threadId, message: `Retry now: ${outcome.refused}` });
        return;
      }
      live.loaded = true;
      live.subscribed = true;
      live.status = resumed.thread.status;
      applyThread(w, resumed.thread);
      // Its newest turn, as of the resume: the look below may find its own read overtaken by the
      // resume's goal notification (and drop it), and a usage limit is keyed by this turn.
      live.turn = await newestTurn(session, threadId, resumed);
      core.emit({
        type: 'loaded',
        threadId,
        reason: fromElsewhere
          ? 'Retry now on a goal from another Codex app: the daemon has loaded its thread (thread/resume)'
          : 'Retry now on a thread the daemon had not loaded (thread/resume)',
      });
      if (fromElsewhere) takeOver(core, w, goal.status);
      if (w.lastFailure && w.lastFailure.dueAt !== null) {
        dueBy(core, w, core.now());
        core.followDue(w); // sooner: its due job follows
      }
      await this.reconciler.decide(session, w);
    });
    await core.persist();
    if (outcome.refused) throw new Error(`Retry now: ${outcome.refused}`);
  }

  /**
   * "Pause goal": `thread/goal/set {status: "paused", origin: "user"}`, so Codex itself records
   * the user's intent in the rollout. Only ever called when a person pressed that button.
   */
  async pauseGoal(threadId: string): Promise<void> {
    const core = this.core;
    const session = this.session();
    core.mustLead('Pause goal');
    const goal = await session.setGoalStatusAsUser(threadId, 'paused');
    const w = core.state.watches[threadId];
    if (w && goal) goalSeen(w, goalSnapshot(goal));
    core.touch(threadId);
  }

  /** The daemon's session, or an error that says why a person's action cannot be done now. */
  private session(prefix = ''): DaemonSession {
    const session = this.core.session;
    if (!session) throw new Error(`${prefix}not connected to the Codex daemon (${this.core.connection.detail})`);
    return session;
  }

  /** A full pass over the daemon's loaded threads, now (the engine also makes one every `resyncMs`). */
  refresh(): Promise<void> {
    return this.connection.resync();
  }

  /** Forgets every watched thread and every intent marker (the user asked, and confirmed). */
  async reset(): Promise<void> {
    const core = this.core;
    core.state = emptyState();
    core.saver.markAll(); // what was scheduled goes with it: a due job finds no watch
    core.changed();
    await core.persist();
    this.home.reset();
    await this.connection.resync();
  }
}
