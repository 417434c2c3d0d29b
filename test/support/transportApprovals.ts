// The approval stories of one transport-fault run (test/support/transportScenario.ts): a server
// request for a person's approval, never answered by the engine, resolved (or not) by the person
// in their own client; see `ApprovalStory` in transportPlan.ts.
import { fail, noteFailed } from './transportStory';
import { type ApprovalStory, HOLD_MIN_MS, type Plan, TRANSIENT_INFOS } from './transportPlan';
import { type Approval, APPROVAL_METHOD, type TransportRun } from './transportRun';

type ThreadStatus = { type: string; activeFlags?: string[] };

/** A server request for a person's approval on the thread's current turn. */
function requestApproval(run: TransportRun, p: Plan, story: ApprovalStory, status: ThreadStatus): Approval {
  const { daemon } = run;
  const t = daemon.thread(p.id);
  const a: Approval = {
    threadId: p.id,
    id: `approval-${p.id}`,
    story,
    since: run.clock.elapsed(),
    resolvedAt: null,
    told: new Set(),
  };
  run.approvals.push(a);
  if (JSON.stringify(status) !== JSON.stringify(t.status)) {
    t.status = status;
    daemon.notify('thread/status/changed', { threadId: p.id, status: t.status });
  }
  daemon.serverRequest(a.id, APPROVAL_METHOD, { threadId: p.id, turnId: t.turn.id, itemId: 'item-1' });
  return a;
}

/** The person answers it in their own client: `serverRequest/resolved`, and the thread's status after. */
function resolveApproval(run: TransportRun, a: Approval, status: ThreadStatus): void {
  const { daemon, clock } = run;
  const t = daemon.thread(a.threadId);
  // Reached: told to the engine, pending while the goal was blocked, for longer than a due time.
  const heldBlocked = clock.elapsed() - Math.max(a.since, run.blockedSince.get(a.threadId) ?? Infinity);
  if (a.told.size > 0 && t.goal?.status === 'blocked' && heldBlocked >= HOLD_MIN_MS) {
    if (t.turn.status === 'failed') run.reached.approvalOnFailedTurn += 1;
    else run.reached.approvalWhileBlocking += 1;
  }
  a.resolvedAt = clock.elapsed();
  daemon.resolveServerRequest(a.id);
  if (JSON.stringify(status) !== JSON.stringify(t.status)) {
    t.status = status;
    daemon.notify('thread/status/changed', { threadId: a.threadId, status: t.status });
  }
}

/** The thread's approval story, from now on. */
export function approvalStory(run: TransportRun, p: Plan): void {
  const { daemon, clock } = run;
  const info = TRANSIENT_INFOS[p.errorInfo];
  const t = daemon.thread(p.id);
  const waiting = { type: 'active', activeFlags: ['waitingOnApproval'] };
  run.applied.add(p.id);
  switch (p.approval) {
    case 'stays':
      requestApproval(run, p, 'stays', waiting);
      return;
    case 'resolveThenFail': {
      const a = requestApproval(run, p, 'resolveThenFail', waiting);
      run.later(() => {
        resolveApproval(run, a, { type: 'active', activeFlags: [] });
        run.later(() => {
          if (run.running(p.id)) fail(run, p, info);
        }, 1_000);
      }, p.holdMs);
      return;
    }
    case 'failWhilePending': {
      const a = requestApproval(run, p, 'failWhilePending', waiting);
      run.later(() => {
        // The goal blocked, the turn still running, the approval still waiting.
        noteFailed(run, p);
        run.blockedSince.set(p.id, clock.elapsed());
        daemon.failWithEvents(p.id, { codexErrorInfo: info, phase: 'goal' });
        run.splitting.add(p.id);
        run.later(() => {
          resolveApproval(run, a, daemon.thread(p.id).status);
          run.splitting.delete(p.id);
          daemon.failWithEvents(p.id, { codexErrorInfo: info, phase: 'turn' });
          run.noteTurn(p.id);
        }, p.holdMs);
      }, 2_000);
      return;
    }
    case 'onBlocked': {
      noteFailed(run, p);
      daemon.failWithEvents(p.id, { codexErrorInfo: info });
      run.noteTurn(p.id);
      const failedTurn = t.turn.id;
      run.later(
        () => {
          const now = daemon.thread(p.id);
          if (now.goal?.status !== 'blocked' || now.turn.id !== failedTurn) return; // recovered already (it cannot be: the backoff is ≥ 15 s)
          run.blockedSince.set(p.id, clock.elapsed());
          const a = requestApproval(run, p, 'onBlocked', p.approvalActive ? waiting : { type: 'systemError' });
          run.later(() => resolveApproval(run, a, { type: 'systemError' }), p.holdMs);
        },
        1_000 + Math.floor(p.pauseFrac * 10_000),
      );
      return;
    }
  }
}
