// The daemon probe's section (j) (test/measure/probe.ts): thread/resume from a second, fresh
// connection on a loaded thread.
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { type MockMode, type MockModeOptions, type MockModel } from '../../src/demo/mockModes';
import type { CodexHome } from '../../src/demo/codexHome';
import { sleep } from '../../src/demo/codexProcesses';
import { controlSocketPath } from '../../src/demo/managedDaemon';
import { about, startThreadWithGoal, waitTurnCompleted } from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import { type LogEntry } from '../../src/demo/userClientLog';
import type { Json } from '../support/json';
import { keyOnly, order, out, tempCwd } from './probeKit';

// (j) --------------------------------------------------------------------------------------------

/** `idle`, `systemError`, `active:waitingOnApproval` … */
function statusText(st: Json): string {
  return `${st?.type}${st?.activeFlags?.length ? ':' + st.activeFlags.join(',') : ''}`;
}

/** Notifications too noisy to list in the (j) orders. */
const NOISE = new Set([
  'thread/tokenUsage/updated',
  'account/rateLimits/updated',
  'warning',
  'thread/readState/changed',
  'item/agentMessage/delta',
]);

/**
 * (j) thread/resume {threadId, excludeTurns:true} from a SECOND, fresh connection on a thread the
 * user's connection `u` has loaded (started): does it start a turn, and what does each side see?
 * Reuses the probe's daemon and CODEX_HOME; one user connection for every case, one fresh
 * resuming connection per case (case 8 re-uses case 1's).
 */
export async function probeResume(home: CodexHome, mock: MockModel, clients: UserClient<Json>[]): Promise<Json> {
  const WINDOW_MS = 5000;
  const res: Json = {};
  const sock = controlSocketPath(home.dir);
  const u = await UserClient.overSocket<Json>(sock, { name: 'probe-user-j' });
  clients.push(u);
  let n = 0;
  const second = async () => {
    const r = await UserClient.overSocket<Json>(sock, { name: `probe-resumer-j${++n}` });
    clients.push(r);
    return r;
  };
  const state = async (threadId: string) => ({
    goal: (await u.request('thread/goal/get', { threadId })).goal?.status as string,
    thread: statusText((await u.request('thread/read', { threadId })).thread.status),
  });
  /** Waits for `threadId`'s thread status (via thread/read polling) to satisfy `ok`. */
  const waitStatus = async (threadId: string, ok: (s: string) => boolean, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = statusText((await u.request('thread/read', { threadId })).thread.status);
      if (ok(s) || Date.now() > deadline) return s;
      await sleep(100);
    }
  };
  /** Resume from `r`, watch WINDOW_MS, report. `mode` is what the mock answers during the window. */
  const resumeAndWatch = async (
    r: UserClient<Json>,
    threadId: string,
    mode: MockMode,
    windowMs = WINDOW_MS,
    modeOpts?: MockModeOptions,
  ) => {
    mock.setMode(mode, modeOpts);
    const before = await state(threadId);
    const uSince = u.lastSeq;
    const rSince = r.lastSeq;
    const req0 = mock.requests;
    const t0 = Date.now();
    const reply = await r.requestEntry('thread/resume', { threadId, excludeTurns: true });
    await sleep(windowMs);
    const after = await state(threadId);
    const isStart = (x: LogEntry<Json>) => x.method === 'turn/started' && x.params?.threadId === threadId;
    const started = [
      ...u.notifications.filter((x) => x.seq > uSince && isStart(x)),
      ...r.notifications.filter((x) => x.seq > rSince && isStart(x)),
    ];
    const turnIds = [...new Set(started.map((x) => x.params.turn.id as string))];
    const rs = r.serverRequests.filter((x) => x.seq > rSince);
    return {
      mode,
      before,
      resumeReply: {
        afterMs: reply.at - t0,
        threadStatus: statusText(reply.result?.thread?.status),
        turns: reply.result?.thread?.turns?.length,
        approvalPolicy: reply.result?.approvalPolicy,
      },
      after,
      newTurnStarted: turnIds.length > 0,
      newTurnIds: turnIds.map((id) => id.slice(-6)),
      firstTurnStartedAfterMs: started.length ? Math.min(...started.map((x) => x.at)) - t0 : null,
      modelRequestsInWindow: mock.requests - req0,
      modelRequestLog: mock.requestLog
        .slice(req0)
        .map((x) => `${x.answered}${x.lastInputType ? '<' + x.lastInputType : ''}`),
      secondConnectionSaw: order(r, threadId, rSince, (e) => !NOISE.has(e.method)),
      secondConnectionServerRequests: rs.map((x) => ({
        method: x.method,
        id: x.id,
        itemId: x.params?.itemId,
        turnId: x.params?.turnId,
      })),
      userConnectionSaw: order(u, threadId, uSince, (e) => !NOISE.has(e.method)),
    };
  };
  const show = (label: string, rec: Json) => {
    res[label] = rec;
    out(`### ${label}`);
    out(JSON.stringify(rec, null, 1));
  };

  // 1. goal active, thread idle after the user's turn/interrupt ------------------------------
  // The mock answers `slow` during the window, so a turn that resume starts stays observable
  // and can be interrupted again by the user, which brings the thread back to the case-1 state
  // for case 8 and the variants.
  const SLOW = { delayMs: 20_000 };
  /** The user interrupts the last turn started on `threadId` after `since`, if any; returns its end status. */
  const interruptStarted = async (threadId: string, since: number): Promise<string | null> => {
    const st = u.notifications
      .filter((x) => x.seq > since && x.method === 'turn/started' && x.params?.threadId === threadId)
      .pop();
    if (!st) return null;
    const id = st.params.turn.id as string;
    const done = u.log.find((x) => x.seq > st.seq && x.method === 'turn/completed' && x.params?.turn?.id === id);
    if (done) return `${done.params.turn.status} (ended by itself)`;
    await u.request('turn/interrupt', { threadId, turnId: id });
    const end = await u.waitFor(
      about(threadId, 'turn/completed', (p) => p.turn?.id === id),
      15_000,
      st.seq,
    );
    await sleep(1000);
    return end.params.turn.status as string;
  };
  mock.setMode('slow', SLOW);
  const t1 = await startThreadWithGoal(u, 'probe j1 interrupted', { cwd: await tempCwd() });
  const ts1 = await u.waitFor(about(t1.threadId, 'turn/started'), 15_000, t1.goalSetSeq);
  await mock.waitForRequests(mock.requests + 1, 5000).catch(() => undefined);
  await sleep(300);
  await u.request('turn/interrupt', { threadId: t1.threadId, turnId: ts1.params.turn.id });
  await waitTurnCompleted(u, t1.threadId, 'interrupted', 15_000, t1.goalSetSeq);
  // Control: nothing happens by itself on the interrupted thread.
  const ctlSeq = u.lastSeq;
  const ctlReq = mock.requests;
  await sleep(3000);
  const control = {
    windowMs: 3000,
    modelRequests: mock.requests - ctlReq,
    turnStarted: u.notifications.some(
      (x) => x.seq > ctlSeq && x.method === 'turn/started' && x.params?.threadId === t1.threadId,
    ),
  };
  const r1 = await second();
  let s0 = u.lastSeq;
  const rec1: Json = await resumeAndWatch(r1, t1.threadId, 'slow', WINDOW_MS, SLOW);
  rec1.controlWithoutResume = control;
  rec1.userInterruptedTheNewTurn = await interruptStarted(t1.threadId, s0);
  rec1.stateAfterUserInterrupt = await state(t1.threadId);
  show('j1_activeInterrupted', rec1);

  // 8. the same second connection calls thread/resume again (thread back in the case-1 state) -
  s0 = u.lastSeq;
  const rec8: Json = await resumeAndWatch(r1, t1.threadId, 'slow', WINDOW_MS, SLOW);
  rec8.userInterruptedTheNewTurn = await interruptStarted(t1.threadId, s0);
  show('j8_secondResumeSameConnection', rec8);
  await r1.close();

  // 1b. a third resume, from a fresh connection after the first resumer closed. The thread now
  // has three interrupted goal turns without output in a row (the user's, then one per resume).
  const r1b = await second();
  s0 = u.lastSeq;
  const rec1b: Json = await resumeAndWatch(r1b, t1.threadId, 'slow', 3000, SLOW);
  rec1b.userInterruptedTheNewTurn = await interruptStarted(t1.threadId, s0);
  rec1b.turns = (await u.request('thread/turns/list', { threadId: t1.threadId })).data.map(
    (x: Json) => `${String(x.id).slice(-6)}:${x.status}`,
  );
  show('j1b_thirdResumeAfterThreeInterruptedTurns', rec1b);
  await r1b.close();
  if ((await state(t1.threadId)).goal === 'active')
    await u.request('thread/goal/set', { threadId: t1.threadId, status: 'paused' });

  // 2. goal blocked after a failed turn (http500), thread systemError ------------------------
  mock.setMode('http500');
  const t2 = await startThreadWithGoal(u, 'probe j2 blocked', { cwd: await tempCwd() });
  await waitTurnCompleted(u, t2.threadId, 'failed', 60_000, t2.goalSetSeq);
  await sleep(500);
  const r2 = await second();
  show('j2_blockedSystemError', await resumeAndWatch(r2, t2.threadId, 'goalComplete'));
  await r2.close();

  // 3. goal paused by the user (origin user), thread idle ------------------------------------
  mock.setMode('slow', { delayMs: 20_000 });
  const t3 = await startThreadWithGoal(u, 'probe j3 paused', { cwd: await tempCwd() });
  const ts3 = await u.waitFor(about(t3.threadId, 'turn/started'), 15_000, t3.goalSetSeq);
  await sleep(500);
  await u.request('turn/interrupt', { threadId: t3.threadId, turnId: ts3.params.turn.id });
  await waitTurnCompleted(u, t3.threadId, 'interrupted', 15_000, t3.goalSetSeq);
  await u.request('thread/goal/set', { threadId: t3.threadId, status: 'paused', origin: 'user' });
  await sleep(800);
  const r3 = await second();
  show('j3_pausedByUser', await resumeAndWatch(r3, t3.threadId, 'goalComplete'));
  await r3.close();

  // 4. goal complete ------------------------------------------------------------------------
  mock.setMode('goalComplete');
  const t4 = await startThreadWithGoal(u, 'probe j4 complete', { cwd: await tempCwd() });
  await u.waitFor(
    about(t4.threadId, 'thread/goal/updated', (p) => p.goal?.status === 'complete'),
    30_000,
    t4.goalSetSeq,
  );
  await waitTurnCompleted(u, t4.threadId, undefined, 30_000, t4.goalSetSeq);
  await waitStatus(t4.threadId, (s) => s === 'idle');
  await sleep(500);
  const r4 = await second();
  show('j4_complete', await resumeAndWatch(r4, t4.threadId, 'goalComplete'));
  await r4.close();

  // 5. goal active with a turn running (slow) ------------------------------------------------
  mock.setMode('slow', { delayMs: 9000 });
  const t5 = await startThreadWithGoal(u, 'probe j5 running', { cwd: await tempCwd() });
  const ts5 = await u.waitFor(about(t5.threadId, 'turn/started'), 15_000, t5.goalSetSeq);
  await mock.waitForRequests(mock.requests + 1, 5000).catch(() => undefined);
  await sleep(500);
  const r5 = await second();
  const rSince5 = r5.lastSeq;
  const rec5: Json = await resumeAndWatch(r5, t5.threadId, 'goalComplete');
  rec5.runningTurnId = String(ts5.params.turn.id).slice(-6);
  // Let the slow turn end by itself (then the goal continues with goalComplete: normal behaviour).
  const end5 = await waitTurnCompleted(u, t5.threadId, undefined, 30_000, t5.goalSetSeq);
  await u
    .waitFor(
      about(t5.threadId, 'thread/goal/updated', (p) => p.goal?.status === 'complete'),
      30_000,
      t5.goalSetSeq,
    )
    .catch(() => undefined);
  await sleep(800);
  rec5.runningTurnEnded = { id: String(end5.params.turn.id).slice(-6), status: end5.params.turn.status };
  rec5.secondConnectionSawWholeRun = order(r5, t5.threadId, rSince5, (e) => !NOISE.has(e.method));
  rec5.userConnectionWholeRun = order(u, t5.threadId, t5.goalSetSeq, keyOnly);
  show('j5_activeTurnRunning', rec5);
  await r5.close();

  // 6. goal active, thread waiting on approval (untrusted) ----------------------------------
  const approvalFile = path.join(await tempCwd(), 'never-approved-j6');
  mock.setMode('approval', { file: approvalFile });
  const t6 = await startThreadWithGoal(u, 'probe j6 approval', { cwd: await tempCwd(), approvalPolicy: 'untrusted' });
  const req6 = await u.waitForServerRequest(undefined, 30_000, t6.goalSetSeq);
  await sleep(500);
  const r6 = await second();
  const rSince6 = r6.lastSeq;
  const rec6: Json = await resumeAndWatch(r6, t6.threadId, 'goalComplete');
  rec6.userServerRequest = { method: req6.method, id: req6.id, itemId: req6.params?.itemId };
  const rGot = r6.serverRequests.find((x) => x.seq > rSince6);
  rec6.secondConnectionGotSameRequestId = rGot ? rGot.id === req6.id : false;
  // Decline from the FIRST connection only now.
  const uDecl = u.lastSeq;
  const rDecl = r6.lastSeq;
  u.respond(req6.id as number, { decision: 'decline' });
  await u
    .waitFor(
      about(t6.threadId, 'thread/goal/updated', (p) => p.goal?.status === 'complete'),
      30_000,
      uDecl,
    )
    .catch(() => undefined);
  await sleep(800);
  rec6.afterUserDecline = {
    secondConnectionSaw: order(r6, t6.threadId, rDecl, keyOnly),
    userConnectionSaw: order(u, t6.threadId, uDecl, keyOnly),
    state: await state(t6.threadId),
    approvalFileExists: existsSync(approvalFile),
  };
  show('j6_waitingOnApproval', rec6);
  await r6.close();

  // 7. goal usageLimited ---------------------------------------------------------------------
  mock.setMode('usageLimit');
  const t7 = await startThreadWithGoal(u, 'probe j7 usage limited', { cwd: await tempCwd() });
  await waitTurnCompleted(u, t7.threadId, 'failed', 30_000, t7.goalSetSeq);
  await sleep(500);
  const r7 = await second();
  show('j7_usageLimited', await resumeAndWatch(r7, t7.threadId, 'goalComplete'));
  await r7.close();

  // Leave nothing active behind.
  for (const t of [t1, t2, t3, t4, t5, t6, t7]) {
    if ((await state(t.threadId)).goal === 'active')
      await u.request('thread/goal/set', { threadId: t.threadId, status: 'paused' }).catch(() => undefined);
  }
  await u.close();
  return res;
}
