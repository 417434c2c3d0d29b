// The wire of one transport-fault run (test/support/transportScenario.ts): the daemon's scripted
// threads, its hook on every set that arrives (the daemon's rejections, the record of each
// arrival) and the fault proxy between it and the engine, whose hooks record what reached the
// engine's socket.
import type { WireMessage } from './fakeDaemon';
import { describeFault, FaultProxy } from './faultProxy';
import { testTurn } from './fakeDaemon';
import { REJECTABLE, type Schedule, TRANSIENT_INFOS } from './transportPlan';
import { APPROVAL_METHOD, type TransportRun } from './transportRun';

/** The threads as they stand when the engine starts, and the daemon's judge of the one set it lets through. */
export function addThreads(run: TransportRun): void {
  const { daemon, plans } = run;
  for (const p of plans) {
    const t = daemon.addThread(p.id);
    // Each goal on a provider of its own: the per-goal give-up model below holds (goals of one
    // outage that wait for one probe, and follow its steps, are test/unit/outageProbe.test.ts's
    // and the crash world's); this suite's subject is the wire.
    t.modelProvider = `provider-of-${p.id}`;
    t.status = { type: 'active', activeFlags: [] };
    run.noteTurn(p.id);
    if (p.kind === 'oldBlocked') {
      daemon.fail(p.id, undefined, TRANSIENT_INFOS[p.errorInfo]);
      run.noteTurn(p.id);
    }
    if (p.kind === 'pausedBefore') {
      daemon.human(p.id, 'paused');
      t.turn = testTurn('turn-1', 'completed');
      t.status = { type: 'idle' };
      run.noteTurn(p.id);
    }
  }
  // The one set the strict daemon lets through: on a goal a person paused, which the oracle
  // judges by when the set left the engine (before it was told: the race; after: broken).
  daemon.judge = (v) =>
    v.rule === 'set-not-recoverable' &&
    v.thread?.goal === 'paused' &&
    v.threadId !== null &&
    plans.find((p) => p.id === v.threadId)?.kind === 'humanPause'
      ? 'allow'
      : 'fail';
}

/** Each set as it reaches the daemon: rejected when the plan says so, recorded with the daemon's state. */
export function watchSets(run: TransportRun): void {
  const { daemon, clock } = run;
  daemon.before = (m: WireMessage) => {
    if (m.method !== 'thread/goal/set') return;
    const id = String(m.params?.threadId);
    const t = daemon.threads.get(id);
    const p = run.plans.find((x) => x.id === id);
    const n = run.rejectedSoFar.get(id) ?? 0;
    const reject = p !== undefined && REJECTABLE.has(p.kind) && n < p.rejects;
    daemon.setError = reject ? { code: -32600, message: 'synthetic rejection: the daemon refused the set' } : null;
    if (reject) run.rejectedSoFar.set(id, n + 1);
    const a = run.pendingApproval(id);
    const accepted = !reject && t?.goal !== null && t !== undefined;
    run.arrivals.push({
      threadId: id,
      status: t?.goal?.status ?? 'none',
      turnId: t?.turn.id ?? '',
      turnStatus: t?.turn.status ?? '',
      origin: m.params?.origin,
      at: clock.elapsed(),
      accepted,
      approvalTold: a !== undefined && a.told.has(run.sentOn.get(id) ?? -1),
    });
    // The set starts a new turn: its `task_started` line follows the set's goal event in the rollout.
    if (accepted)
      queueMicrotask(() => {
        if (daemon.thread(id).turn.status === 'inProgress') run.noteTurn(id);
      });
  };
}

/** The fault proxy between the engine and the daemon, recording what reached the engine's socket. */
export function newProxy(run: TransportRun, schedule: Schedule): FaultProxy {
  const { clock, decisions, reached } = run;
  const proxy = new FaultProxy(run.daemon, clock, schedule.faults, {
    onFault: (fault, brokeIt) => {
      run.log.push(`${clock.now()}: fault ${describeFault(fault)}${brokeIt ? ' (connection broken)' : ''}`);
      return decisions.length;
    },
    onGoalTold: (threadId, status) => {
      if (status === 'paused' && run.pausedByHuman.has(threadId)) run.toldPaused.add(threadId);
      // Until a set reaches the daemon, only the goal's state before its first failure was active.
      if (status === 'active' && !run.arrivals.some((a) => a.threadId === threadId)) run.sawActive.add(threadId);
    },
    mark: () => decisions.length,
    onSetSent: (threadId, _params, link) => {
      run.sent.push({ threadId, at: clock.elapsed() });
      run.sentOn.set(threadId, link);
      // Invariant: never a set after the engine was told a person paused the goal.
      if (run.toldPaused.has(threadId))
        run.broken.push(`set on ${threadId} after the engine was told the user paused it`);
    },
    onDelivered: (link, m, request, daemonError) => {
      if (request !== null) {
        const threadId = String(request.params.threadId);
        if (request.method === 'thread/goal/set' && m.error !== undefined && daemonError !== false) {
          run.rejections.push({ threadId, at: clock.elapsed() });
          if (daemonError === true) reached.rejectedByDaemon += 1;
        }
        return;
      }
      const params = m.params ?? {};
      if (m.method === 'error' && params.willRetry === true) {
        const key = `${String(params.threadId)}/${String(params.turnId)}`;
        run.retryTold.add(key);
        run.retryToldAt.set(key, `${link}/${proxy.fired.length}/${proxy.timeouts}`);
      }
      if (m.method === APPROVAL_METHOD)
        for (const a of run.approvals) if (a.id === m.id && a.resolvedAt === null) a.told.add(link);
    },
  });
  return proxy;
}
