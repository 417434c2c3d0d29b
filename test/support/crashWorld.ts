// A world for crash-consistency properties: one fake daemon, one fake clock, and a sequence of
// engine "lives". A life ends by a crash: the engine is dropped without `stop()` (its timers
// die, its connection closes, whatever it had not written to disk is gone) and a new engine
// starts from what its store durably holds. The store models fsync: a save is durable once its
// promise resolves; one still being written when the crash comes may or may not have reached
// the disk (drawn at random). A life can also stall (`stall`): frozen past its lease while a
// second engine takes over from its last snapshot, then woken and dropped once it stepped down.
// Every life leads by a real Lease on the fake clock, renewed by a timer of its own; the
// engine's fence is that lease.
//
// The world is the judge, from the daemon's side: every automatic `thread/goal/set` is checked
// the moment it arrives (before the daemon applies it) against what the world knows — the
// goal's status and why it is blocked, the newest turn, the person's commands and markers, and
// the durable store — and the first broken rule is kept as `violation`, which the driver throws
// right after the step (the set is not applied, so nothing builds on it).//
// The world's process model (a life's clock, disk and sockets) is crashProcess.ts; its state and
// time crashWorldBase.ts; its lives (boot, crash, stall) crashLives.ts. Here: what happens in
// Codex, the person's commands, and the judge.
import * as fs from 'node:fs';
import { CrashLives } from './crashLives';
import { goalEventLine, modelGoalCallLine, testGoal, testTurn, type WireMessage } from './fakeDaemon';

export { DurableStore, ScopedClock } from './crashProcess';
export type { CrashPhase, SetRecord, StallPhase } from './crashWorldBase';

let approvalIds = 0;

export class CrashWorld extends CrashLives {
  // ---- what happens in Codex -------------------------------------------------------

  /** A person gives a new thread a goal; Codex starts its first turn. */
  startGoal(id: string): void {
    const t = this.daemon.addThread(id, 'active', testTurn('turn-1', 'inProgress'), 'active');
    t.status = { type: 'active', activeFlags: [] };
    fs.appendFileSync(t.path, goalEventLine(t.goal!));
    this.facts.set(id, {
      id,
      cause: null,
      failedAt: null,
      failuresSinceActivation: 0,
      activatedAt: this.clock.now(),
      unarmedCrashes: [],
      approvals: new Set(),
      disarmed: false,
      rearmedAt: 0,
      retryNowAt: 0,
      durableDue: new Map(),
    });
    this.daemon.notify('thread/started', {
      thread: { id, status: t.status, path: t.path, preview: '', name: null, cwd: this.dir, turns: [] },
    });
    this.daemon.notify('thread/goal/updated', { threadId: id, turnId: null, goal: t.goal });
    this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
    this.daemon.notifySubscribed(id, 'turn/started', { threadId: id, turn: t.turn });
    this.log.push(`+${this.at()} s ${id}: goal set active by the person, turn-1 runs`);
  }

  running(id: string): boolean {
    const t = this.daemon.threads.get(id);
    return t?.turn.status === 'inProgress' && t.goal?.status === 'active';
  }

  /** The running turn fails (Codex may retry the stream first, in the same turn). */
  failTurn(id: string, transient: boolean, retryFirst: boolean): void {
    const f = this.fact(id);
    this.settleApprovals(id);
    const info = transient ? 'internalServerError' : 'contextWindowExceeded';
    this.daemon.failWithEvents(id, { codexErrorInfo: info, retryFirst });
    f.cause = transient ? 'transient' : 'permanent';
    f.failedAt = this.clock.now();
    if (transient) f.failuresSinceActivation += 1;
    this.log.push(
      `+${this.at()} s ${id}: ${this.daemon.thread(id).turn.id} failed (${info}${retryFirst ? ', after a Codex retry' : ''})`,
    );
  }

  /** Codex retries the turn's request itself (`error {willRetry:true}`); the turn goes on. */
  codexRetry(id: string): void {
    const t = this.daemon.thread(id);
    this.daemon.notifySubscribed(id, 'error', {
      threadId: id,
      turnId: t.turn.id,
      willRetry: true,
      error: {
        message: 'Reconnecting... 1/5',
        codexErrorInfo: { responseStreamDisconnected: { httpStatusCode: null } },
        additionalDetails: null,
      },
    });
    this.log.push(`+${this.at()} s ${id}: Codex retries ${t.turn.id} itself`);
  }

  /** The running turn completes; the goal stays active (idle thread) or is complete. */
  completeTurn(id: string, goalDone: boolean): void {
    const t = this.daemon.thread(id);
    this.settleApprovals(id);
    t.turn = testTurn(t.turn.id, 'completed');
    t.status = { type: 'idle' };
    this.answerTimes.push(this.clock.now());
    this.daemon.notifySubscribed(id, 'turn/completed', { threadId: id, turn: t.turn });
    if (goalDone) {
      t.goal = testGoal(id, 'complete');
      this.daemon.notify('thread/goal/updated', { threadId: id, turnId: t.turn.id, goal: t.goal });
    }
    this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
    this.fact(id).cause = null;
    this.log.push(`+${this.at()} s ${id}: ${t.turn.id} completed${goalDone ? ', goal complete' : ''}`);
  }

  /** The model blocks the goal itself (`update_goal`); its turn then completes, or fails. */
  modelBlock(id: string, thenFails: boolean): void {
    const t = this.daemon.thread(id);
    this.settleApprovals(id);
    fs.appendFileSync(t.path, modelGoalCallLine('blocked', `call-${t.turn.id}`));
    if (thenFails) {
      this.daemon.failWithEvents(id, { codexErrorInfo: 'internalServerError' });
    } else {
      t.goal = testGoal(id, 'blocked');
      t.turn = testTurn(t.turn.id, 'completed');
      t.status = { type: 'idle' };
      this.answerTimes.push(this.clock.now());
      this.daemon.notify('thread/goal/updated', { threadId: id, turnId: t.turn.id, goal: t.goal });
      this.daemon.notifySubscribed(id, 'turn/completed', { threadId: id, turn: t.turn });
      this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
    }
    const f = this.fact(id);
    f.cause = 'model';
    f.failedAt = thenFails ? this.clock.now() : null;
    this.log.push(`+${this.at()} s ${id}: the model blocked the goal${thenFails ? ', then its turn failed' : ''}`);
  }

  /** A person pauses the goal in Codex (a marker in the rollout), on a thread with no turn running. */
  userPause(id: string): void {
    this.daemon.human(id, 'paused');
    this.fact(id).cause = null;
    this.log.push(`+${this.at()} s ${id}: the person paused the goal`);
  }

  /** A person sets the goal active again; Codex starts a turn for it. */
  userResume(id: string): void {
    const f = this.fact(id);
    this.daemon.human(id, 'active');
    const t = this.daemon.thread(id);
    t.turn = testTurn(this.nextTurnId(id), 'inProgress');
    t.status = { type: 'active', activeFlags: [] };
    this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
    this.daemon.notifySubscribed(id, 'turn/started', { threadId: id, turn: t.turn });
    this.probeStarts.push({ threadId: id, at: this.clock.now() });
    f.cause = null;
    f.failedAt = null;
    f.failuresSinceActivation = 0;
    f.activatedAt = this.clock.now();
    f.unarmedCrashes = [];
    this.log.push(`+${this.at()} s ${id}: the person set the goal active, ${t.turn.id} runs`);
  }

  /** Codex asks the person to approve a command in the running turn. */
  approval(id: string): void {
    const t = this.daemon.thread(id);
    const requestId = `approval-${++approvalIds}`;
    this.fact(id).approvals.add(requestId);
    t.status = { type: 'active', activeFlags: ['waitingOnApproval'] };
    this.daemon.serverRequest(requestId, 'item/commandExecution/requestApproval', {
      threadId: id,
      turnId: t.turn.id,
      itemId: `item-${requestId}`,
    });
    this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
    this.log.push(`+${this.at()} s ${id}: approval ${requestId} asked`);
  }

  /** The person's own client answers the approvals (or the turn's end takes them away). */
  settleApprovals(id: string): void {
    const f = this.fact(id);
    for (const requestId of f.approvals) this.daemon.resolveServerRequest(requestId);
    if (f.approvals.size > 0) {
      const t = this.daemon.thread(id);
      if (t.turn.status === 'inProgress') {
        t.status = { type: 'active', activeFlags: [] };
        this.daemon.notify('thread/status/changed', { threadId: id, status: t.status });
      }
      this.log.push(`+${this.at()} s ${id}: approvals answered by the person`);
    }
    f.approvals.clear();
  }

  // ---- the person's commands in this product ------------------------------------------

  async command(name: 'pauseAll' | 'resumeAll' | 'disarm' | 'rearm' | 'retryNow', id?: string): Promise<void> {
    const e = this.engine.commands;
    this.log.push(`+${this.at()} s command ${name}${id ? ` ${id}` : ''}`);
    switch (name) {
      case 'pauseAll':
        await e.pauseAll();
        this.paused = true;
        break;
      case 'resumeAll':
        await e.resumeAll();
        this.paused = false;
        this.resumeTimes.push(this.clock.now());
        break;
      case 'disarm':
        await e.disarm(id!);
        this.fact(id!).disarmed = true;
        break;
      case 'rearm': {
        // Before the call: the engine may act on the re-arm before the call returns.
        const f = this.fact(id!);
        const was = f.disarmed;
        f.disarmed = false;
        f.rearmedAt = this.clock.now();
        try {
          await e.rearm(id!);
        } catch (error) {
          f.disarmed = was;
          throw error;
        }
        break;
      }
      case 'retryNow':
        this.fact(id!).retryNowAt = this.clock.now();
        await e.retryNow(id!).catch(() => undefined);
        break;
    }
    await this.settle();
  }

  // ---- the judge -------------------------------------------------------------------

  /** Every automatic set, before the daemon applies it: false refuses it. */
  protected judge(m: WireMessage): boolean {
    if (m.method !== 'thread/goal/set') return true;
    const p = m.params ?? {};
    if (p.origin !== 'automatic') return true;
    const id = String(p.threadId);
    const t = this.daemon.threads.get(id);
    const f = this.facts.get(id);
    if (!t || !f) return this.fail(`an automatic set on an unknown thread ${id}`);
    const turnId = t.turn.id;
    const what = `the automatic set on ${id} (newest turn ${turnId}, ${t.turn.status})`;
    if (Object.keys(p).sort().join(',') !== 'origin,status,threadId' || p.status !== 'active')
      return this.fail(`${what} changed more than the status: ${JSON.stringify(p)}`);
    if (t.goal?.status !== 'blocked') return this.fail(`${what}: the goal is ${t.goal?.status ?? 'cleared'}`);
    if (f.cause === 'model') return this.fail(`${what}: the model blocked this goal`);
    if (f.cause !== 'transient' || t.turn.status !== 'failed')
      return this.fail(`${what}: the goal is not blocked by a transient failure (${f.cause ?? 'no failure'})`);
    if (this.effective.has(`${id}/${turnId}`)) return this.fail(`${what}: a second set for the same failed turn`);
    if (this.paused) return this.fail(`${what}: the person paused auto-recovery`);
    if (f.disarmed) return this.fail(`${what}: the person disarmed the thread`);
    if (f.approvals.size > 0) return this.fail(`${what}: an approval is pending`);
    const w = this.disk().watches[id];
    if (!w || w.pending?.failedTurnId !== turnId)
      return this.fail(`${what}: its intent is not on disk (durable pending: ${JSON.stringify(w?.pending ?? null)})`);
    const due = w.lastFailure?.turnId === turnId ? w.lastFailure.dueAt : null;
    if (due === null) return this.fail(`${what}: the disk holds no due time for the failure`);
    const now = this.clock.now();
    // The provider answered since the failure (a turn completed): its recovery may be due at once.
    const retried = f.retryNowAt >= (f.failedAt ?? 0) || this.answerTimes.some((t) => t >= (f.failedAt ?? 0));
    if (!retried && due < (f.failedAt ?? 0) + this.options.baseDelayMs / 2)
      return this.fail(`${what}: due ${due - (f.failedAt ?? 0)} ms after the failure, less than the shortest backoff`);
    if (!retried && now < due) return this.fail(`${what}: sent at ${now}, before the due time on disk ${due}`);
    const earliest = f.durableDue.get(turnId);
    if (!retried && earliest !== undefined && now < earliest)
      return this.fail(`${what}: sent ${earliest - now} ms before the due time a crash left on disk`);
    this.effective.add(`${id}/${turnId}`);
    if (this.dueAtStall.delete(`${id}/${turnId}`))
      this.stallPhases.push('the new engine recovered what the stalled one had due');
    f.cause = null;
    this.sets.push({ threadId: id, failedTurnId: turnId, at: now, due: due });
    this.probeStarts.push({ threadId: id, at: now });
    this.log.push(
      `+${this.at()} s ${id}: automatic set for ${turnId} (${Math.round((now - due) / 100) / 10} s after its due time)`,
    );
    return true;
  }

  /**
   * After the last step and enough time: every transient failure that nothing superseded was
   * recovered, in time. Returns which case each thread ended in.
   */
  verifyLiveness(): string[] {
    const cases: string[] = [];
    const slack = this.options.resyncMs + this.options.limiterIntervalMs * Math.max(1, this.facts.size) + 2_000;
    for (const set of this.sets) {
      const f = this.fact(set.threadId);
      if (f.retryNowAt >= (f.failedAt ?? 0)) continue;
      const before = (times: number[]) => Math.max(0, ...times.filter((t) => t <= set.at));
      // One outage, one probe (src/core/outage.ts): every goal here runs on the mock and fails
      // alike, so one group. A goal due while another's recovery is out as the probe waits for
      // its verdict, at most the backoff cap after the probe's set.
      const probeAt = before(this.probeStarts.filter((x) => x.threadId !== set.threadId).map((x) => x.at));
      const from = Math.max(
        set.due,
        before(this.resumeTimes),
        before(this.restartTimes),
        f.rearmedAt <= set.at ? f.rearmedAt : 0,
        probeAt > 0 ? Math.min(set.at, probeAt + this.options.maxDelayMs) : 0,
      );
      if (set.at > from + slack) {
        throw new Error(
          `${set.threadId}: ${set.failedTurnId} was recovered ${Math.round((set.at - from) / 1000)} s after it was due (more than a resync plus the limiter)\n  ${this.log.join('\n  ')}`,
        );
      }
    }
    for (const f of this.facts.values()) {
      const t = this.daemon.thread(f.id);
      if (
        t.goal?.status !== 'blocked' ||
        f.cause !== 'transient' ||
        t.turn.status !== 'failed' ||
        this.effective.has(`${f.id}/${t.turn.id}`)
      ) {
        cases.push('settled');
        continue;
      }
      if (this.paused) {
        cases.push('held: auto-recovery paused');
        continue;
      }
      if (f.disarmed) {
        cases.push('held: disarmed');
        continue;
      }
      const w = this.disk().watches[f.id];
      if (w?.state.kind === 'gaveUp') {
        // Given up with its outage's probe: another goal of its group failed past the limit.
        const withProbe = [...this.facts.values()].some(
          (g) => g !== f && g.failuresSinceActivation > this.options.maxAttempts,
        );
        if (withProbe && f.failuresSinceActivation <= this.options.maxAttempts) {
          cases.push('gave up with its outage’s probe');
          continue;
        }
        if (f.failuresSinceActivation <= this.options.maxAttempts)
          throw new Error(
            `${f.id}: gave up after ${f.failuresSinceActivation} failed turns (the limit is ${this.options.maxAttempts})\n  ${this.log.join('\n  ')}`,
          );
        cases.push('gave up');
        continue;
      }
      if ((!w || w.state.kind === 'notAdopted') && f.unarmedCrashes.length > 0) {
        cases.push('never seen: the arming was not durable at a crash');
        continue;
      }
      throw new Error(
        `${f.id}: the transient failure of ${t.turn.id} was never recovered (on disk: ${JSON.stringify(w?.state ?? null)}, failures ${w?.failures ?? '-'})\n  ${this.log.join('\n  ')}`,
      );
    }
    return cases;
  }
}
