// The daemon probe's sections (d), (a), (b) part 1, (c) and (e) (test/measure/probe.ts): the
// rate limits without auth, the failing modes, the turns after a failure, an automatic set on a
// blocked goal, and what a second connection receives.
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { type MockMode } from '../../src/demo/mockModes';
import { sleep } from '../../src/demo/codexProcesses';
import { controlSocketPath } from '../../src/demo/managedDaemon';
import { about, startThreadWithGoal, waitTurnCompleted } from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import type { Json } from '../support/json';
import {
  failureCase,
  type FailureCase,
  keyOnly,
  order,
  out,
  type Probe,
  results,
  section,
  tempCwd,
  want,
} from './probeKit';

/** (d) account/rateLimits/read with the mock provider, no auth. */
export async function probeRateLimits(p: Probe): Promise<void> {
  const { a } = p;
  section('(d) account/rateLimits/read with the mock provider, no auth');
  try {
    results.d = { result: await a.request('account/rateLimits/read', {}) };
  } catch (e) {
    results.d = { error: e instanceof Error ? e.message : String(e), code: (e as { code?: number }).code };
  }
  try {
    results.d.accountRead = await a.request('account/read', {});
  } catch (e) {
    results.d.accountReadError = (e as Error).message;
  }
  const rl = a.notifications.filter((n) => n.method === 'account/rateLimits/updated');
  results.d.rateLimitsUpdatedSeenSoFar = rl.length;
  out(JSON.stringify(results.d));
}

/** (a) the failing modes: the order on the wire and codexErrorInfo; the failed thread of each mode. */
export async function probeFailures(p: Probe): Promise<Record<string, FailureCase>> {
  const { a, mock } = p;
  const cases: Record<string, FailureCase> = {};
  const modes: MockMode[] = [
    'http500',
    'dropStream',
    'responseFailed',
    'http429',
    'http400',
    'contextOverflow',
    'usageLimit',
  ];
  section('(a) failing modes: order on the wire (thread-scoped, key methods + replies) and codexErrorInfo');
  for (const m of want('a') ? modes : (['http500', 'dropStream'] as MockMode[])) {
    const fc = await failureCase(a, mock, m);
    cases[m] = fc;
    out(
      `### ${m}: ${fc.ms} ms, ${fc.mockRequests} model requests; turn ${fc.turnStatus}; goal → ${fc.goalAfter}; thread → ${JSON.stringify(fc.threadStatusAfter)}`,
    );
    out(`order: ${fc.order.join(' → ')}`);
    out(`turn.error: ${JSON.stringify(fc.turnError)}`);
    out(`error notifications: ${JSON.stringify(fc.errors)}`);
    if (m === 'usageLimit' || m === 'http429')
      out(`account/rateLimits/updated during the turn: ${JSON.stringify(fc.rateLimitsUpdated)}`);
  }
  results.a = cases;
  // the goal-updated notifications of a rate-limit / usage-limit turn
  return cases;
}

/** (b) part 1: thread/turns/list right after the http500 failure. */
export async function probeTurnsAfterFailure(p: Probe, failedThread: string): Promise<void> {
  const { a } = p;
  section('(b) thread/turns/list right after the http500 failure');
  const turns = await a.request('thread/turns/list', { threadId: failedThread });
  const read = await a.request('thread/read', { threadId: failedThread });
  results.b1 = {
    turns: turns.data.map((t: Json) => ({ id: t.id, status: t.status, error: t.error, items: t.items?.length })),
    nextCursor: turns.nextCursor,
    threadStatus: read.thread.status,
    path: read.thread.path,
  };
  out(JSON.stringify(results.b1, null, 1));
}

/** (c) thread/goal/set {status:active, origin:automatic} on a blocked goal. */
export async function probeAutomaticSet(p: Probe, blockedThread: string): Promise<void> {
  const { a, mock } = p;
  section('(c) thread/goal/set {status:active, origin:automatic} on a blocked goal (mock: goalComplete)');
  mock.setMode('goalComplete');
  const turnsBefore = (await a.request('thread/turns/list', { threadId: blockedThread })).data.map((t: Json) => t.id);
  const since = a.lastSeq;
  const reply = await a.requestEntry('thread/goal/set', {
    threadId: blockedThread,
    status: 'active',
    origin: 'automatic',
  });
  await a.waitFor(
    about(blockedThread, 'thread/goal/updated', (p) => p.goal?.status === 'complete'),
    30_000,
    since,
  );
  await waitTurnCompleted(a, blockedThread, undefined, 30_000, since);
  await sleep(400);
  const turnsAfter = (await a.request('thread/turns/list', { threadId: blockedThread })).data;
  results.c = {
    reply: reply.result,
    replySeq: reply.seq,
    order: order(a, blockedThread, since, keyOnly),
    fullOrder: order(a, blockedThread, since),
    turnIdsBefore: turnsBefore,
    turnsAfter: turnsAfter.map((t: Json) => ({
      id: t.id,
      status: t.status,
      error: t.error?.codexErrorInfo ?? null,
    })),
  };
  out(`reply: ${JSON.stringify(reply.result)}`);
  out(`order: ${results.c.order.join(' → ')}`);
  out(`full: ${results.c.fullOrder.join(' → ')}`);
  out(`turns before: ${JSON.stringify(turnsBefore)}; after: ${JSON.stringify(results.c.turnsAfter)}`);

  // Same call on a goal that is already complete.
  const since2 = a.lastSeq;
  mock.setMode('goalComplete');
  const r2 = await a.requestEntry('thread/goal/set', {
    threadId: blockedThread,
    status: 'active',
    origin: 'automatic',
  });
  await sleep(3000);
  results.c_onComplete = { reply: r2.result?.goal?.status, order: order(a, blockedThread, since2, keyOnly) };
  out(`on a complete goal: reply goal.status=${results.c_onComplete.reply}; ${results.c_onComplete.order.join(' → ')}`);
}

/** (e) what a second connection that called thread/resume receives, vs one that did not. */
export async function probeSecondConnection(p: Probe): Promise<void> {
  const { a, mock, home, clients } = p;
  section('(e) what a second connection that called thread/resume receives (B), vs one that did not (C)');
  mock.setMode('http500');
  const approvalFile = path.join(await tempCwd(), 'declined-by-b');
  const t = await startThreadWithGoal(a, 'probe second connection', {
    cwd: await tempCwd(),
    approvalPolicy: 'untrusted',
  });
  await waitTurnCompleted(a, t.threadId, 'failed', 60_000, t.goalSetSeq);
  const b = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: 'probe-user-b' });
  const cc = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: 'probe-user-c' });
  clients.push(b, cc);
  const resumed = await b.request('thread/resume', { threadId: t.threadId, excludeTurns: true });
  const bSince = b.lastSeq;
  const cSince = cc.lastSeq;
  const aSince = a.lastSeq;
  // 1) failing turn started by A's automatic re-activation
  await a.request('thread/goal/set', { threadId: t.threadId, status: 'active', origin: 'automatic' });
  await waitTurnCompleted(a, t.threadId, 'failed', 60_000, aSince);
  await sleep(400);
  const bFail = order(b, t.threadId, bSince);
  const cFail = order(cc, t.threadId, cSince);
  // 2) approval
  mock.setMode('approval', { file: approvalFile });
  const bSince2 = b.lastSeq;
  const cSince2 = cc.lastSeq;
  const aSince2 = a.lastSeq;
  await a.request('thread/goal/set', { threadId: t.threadId, status: 'active', origin: 'automatic' });
  const reqB = await b.waitForServerRequest(undefined, 30_000, bSince2);
  const reqA = await a.waitForServerRequest(undefined, 5_000, aSince2).catch(() => undefined);
  const statusWaiting = await a.request('thread/read', { threadId: t.threadId });
  const goalWaiting = await a.request('thread/goal/get', { threadId: t.threadId });
  mock.setMode('goalComplete');
  // Decline (accepting would run the command through the bundled bubblewrap sandbox, which
  // leaves /tmp/codex-bwrap-synthetic-mount-targets-<uid> behind).
  b.respond(reqB.id as number, { decision: 'decline' });
  await a.waitFor(
    about(t.threadId, 'thread/goal/updated', (p) => p.goal?.status === 'complete'),
    30_000,
    aSince2,
  );
  await waitTurnCompleted(a, t.threadId, undefined, 30_000, a.lastSeq - 1).catch(() => undefined);
  await sleep(600);
  await sleep(500);
  results.e = {
    resumeResult: { status: resumed.thread?.status, turns: resumed.thread?.turns?.length },
    bOnFailure: bFail,
    cOnFailure: cFail,
    bServerRequest: { method: reqB.method, id: reqB.id, paramsKeys: Object.keys(reqB.params ?? {}) },
    aServerRequestSameId: reqA ? reqA.id === reqB.id : 'A got none',
    threadStatusWhileWaiting: statusWaiting.thread.status,
    goalWhileWaiting: goalWaiting.goal?.status,
    bOnApproval: order(b, t.threadId, bSince2, keyOnly),
    cOnApproval: order(cc, t.threadId, cSince2),
    aOnApproval: order(a, t.threadId, aSince2, keyOnly),
    cGotServerRequest: cc.serverRequests.length,
    approvalFileExistsAfterDecline: existsSync(approvalFile),
    commandItem: a.notifications
      .filter((n) => n.seq > aSince2 && n.method === 'item/completed' && n.params?.item?.type === 'commandExecution')
      .map((n) => ({
        status: n.params.item.status,
        exitCode: n.params.item.exitCode,
        command: n.params.item.command,
      })),
  };
  out(JSON.stringify(results.e, null, 1));
  await b.close();
  await cc.close();
}
