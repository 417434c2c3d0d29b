// The daemon probe's sections (b) part 2, (f) and (i) (test/measure/probe.ts): what a thread
// looks like after the daemon restarts, stops or is killed, and a daemon stop or restart while a
// goal turn is in flight.
import * as path from 'node:path';
import { sleep } from '../../src/demo/codexProcesses';
import { controlSocketPath, daemonPid, restartDaemon, startDaemon, stopDaemon } from '../../src/demo/managedDaemon';
import { about, startThreadWithGoal, waitTurnCompleted } from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import { describe } from '../../src/demo/userClientLog';
import type { Json } from '../support/json';
import { keyOnly, order, out, type Probe, results, section, tempCwd } from './probeKit';

/** (b) part 2 and (f): the failed thread after `daemon restart`, stop+start and SIGKILL+start. */
export async function probeRestarts(p: Probe, failedThread: string): Promise<void> {
  const { a, home, clients } = p;
  section('(b)/(f) after `daemon restart`');
  const oldPid = daemonPid(home.dir);
  const aClosed = new Promise<number>((r) => {
    const t0r = Date.now();
    const iv = setInterval(() => {
      if (a.closed) {
        clearInterval(iv);
        r(Date.now() - t0r);
      }
    }, 20);
  });
  const t1 = Date.now();
  const rr = await restartDaemon(home.dir);
  const restartMs = Date.now() - t1;
  const aClosedAfter = await Promise.race([aClosed, sleep(3000).then(() => -1)]);
  const d = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: 'probe-user-d' });
  clients.push(d);
  const loaded = await d.request('thread/loaded/list', {});
  const readBefore = await d.request('thread/read', { threadId: failedThread });
  const goalBefore = await d.request('thread/goal/get', { threadId: failedThread });
  let turnsBefore: Json;
  try {
    turnsBefore = (await d.request('thread/turns/list', { threadId: failedThread })).data.map((t: Json) => ({
      id: t.id,
      status: t.status,
      error: t.error,
    }));
  } catch (e) {
    turnsBefore = { error: (e as Error).message };
  }
  const dSince = d.lastSeq;
  const resumed = await d.request('thread/resume', { threadId: failedThread });
  await sleep(500);
  const turnsAfter = (await d.request('thread/turns/list', { threadId: failedThread })).data.map((t: Json) => ({
    id: t.id,
    status: t.status,
    error: t.error,
  }));
  const readAfter = await d.request('thread/read', { threadId: failedThread });
  const loadedAfter = await d.request('thread/loaded/list', {});
  results.bf = {
    oldPid,
    newPid: rr.pid,
    restartMs,
    oldConnectionSawCloseAfterMs: aClosedAfter,
    loadedListAfterRestart: loaded,
    threadReadBeforeResume: readBefore.thread.status,
    goalBeforeResume: goalBefore.goal?.status,
    turnsListBeforeResume: turnsBefore,
    resumeThreadStatus: resumed.thread?.status,
    resumeTurns: resumed.thread?.turns?.map((t: Json) => ({
      id: t.id,
      status: t.status,
      error: t.error?.codexErrorInfo ?? null,
    })),
    notificationsOnResume: order(d, failedThread, dSince),
    turnsListAfterResume: turnsAfter,
    threadReadAfterResume: readAfter.thread.status,
    loadedListAfterResume: loadedAfter,
  };
  out(JSON.stringify(results.bf, null, 1));
  await d.close();

  // Variants: `daemon stop` + `daemon start`, and SIGKILL of the daemon + `daemon start`.
  for (const variant of ['stop+start', 'SIGKILL+start'] as const) {
    const pidBefore = daemonPid(home.dir);
    if (variant === 'stop+start') await stopDaemon(home.dir);
    else if (pidBefore) {
      process.kill(-pidBefore, 'SIGKILL');
      await sleep(300);
    }
    const t2 = Date.now();
    const rep = await startDaemon(home.dir);
    const startMs = Date.now() - t2;
    const e = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: `probe-user-${variant}` });
    clients.push(e);
    const l = await e.request('thread/loaded/list', {});
    const st = (await e.request('thread/read', { threadId: failedThread })).thread.status;
    const g = (await e.request('thread/goal/get', { threadId: failedThread })).goal?.status;
    const tl = (await e.request('thread/turns/list', { threadId: failedThread })).data.map(
      (t: Json) => `${t.status}:${JSON.stringify(t.error?.codexErrorInfo ?? null)}`,
    );
    results[`bf_${variant}`] = {
      pidBefore,
      pidAfter: rep.pid,
      startReportStatus: rep.status,
      startMs,
      loadedCount: l.data.length,
      threadStatus: st,
      goal: g,
      turns: tl,
    };
    out(`${variant}: ${JSON.stringify(results[`bf_${variant}`])}`);
    await e.close();
  }
}

/** (i) daemon stop/restart while a goal turn is in flight. */
export async function probeInFlight(p: Probe): Promise<void> {
  const { mock, home, clients } = p;
  section('(i) daemon stop/restart while a goal turn is in flight (stop = SIGTERM, drains turns; SIGKILL after 60 s)');
  const variants = ['restart', 'stop+start', 'restart-awaiting-approval'] as const;
  for (const variant of variants) {
    const c1 = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: 'probe-user-i1' });
    clients.push(c1);
    const approval = variant === 'restart-awaiting-approval';
    if (approval) mock.setMode('approval', { file: path.join(await tempCwd(), 'never-approved') });
    else mock.setMode('slow', { delayMs: 5000 });
    const t = await startThreadWithGoal(c1, `probe in-flight ${variant}`, {
      cwd: await tempCwd(),
      ...(approval ? { approvalPolicy: 'untrusted' } : {}),
    });
    const ts = await c1.waitFor(about(t.threadId, 'turn/started'), 15_000, t.goalSetSeq);
    if (approval) await c1.waitForServerRequest(undefined, 15_000, t.goalSetSeq);
    await sleep(300);
    mock.setMode('goalComplete');
    const reqBefore = mock.requests;
    const t0i = Date.now();
    let closedAt = -1;
    const iv = setInterval(() => {
      if (c1.closed && closedAt < 0) closedAt = Date.now() - t0i;
    }, 20);
    let lifecycleMs: Json;
    if (variant === 'stop+start') {
      await stopDaemon(home.dir);
      lifecycleMs = { stop: Date.now() - t0i };
      const t1 = Date.now();
      await startDaemon(home.dir);
      lifecycleMs.start = Date.now() - t1;
    } else {
      await restartDaemon(home.dir);
      lifecycleMs = { restart: Date.now() - t0i };
    }
    clearInterval(iv);
    const lastOnOld = c1.log
      .filter((e) => e.params?.threadId === t.threadId)
      .slice(-3)
      .map(describe);
    const c2 = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: 'probe-user-i2' });
    clients.push(c2);
    await sleep(2500);
    const loaded = (await c2.request('thread/loaded/list', {})).data.includes(t.threadId);
    const st = (await c2.request('thread/read', { threadId: t.threadId })).thread.status;
    const g = (await c2.request('thread/goal/get', { threadId: t.threadId })).goal?.status;
    const tl = (await c2.request('thread/turns/list', { threadId: t.threadId })).data.map((x: Json) => ({
      inFlightTurn: x.id === ts.params.turn.id,
      status: x.status,
      error: x.error?.codexErrorInfo ?? null,
    }));
    const rec: Json = {
      lifecycleMs,
      oldConnectionClosedAfterMs: closedAt,
      lastThreadEventsOnOldConnection: lastOnOld,
      modelRequestsAfterLifecycle: mock.requests - reqBefore,
      loadedAfter: loaded,
      threadStatus: st,
      goal: g,
      turns: tl,
      newConnectionSaw: order(c2, t.threadId, 0),
    };
    if (!loaded && g === 'active') {
      const s0 = c2.lastSeq;
      await c2.request('thread/resume', { threadId: t.threadId, excludeTurns: true });
      await waitTurnCompleted(c2, t.threadId, undefined, 15_000, s0).catch(() => undefined);
      await sleep(300);
      rec.onResume = order(c2, t.threadId, s0, keyOnly);
      rec.goalAfterResume = (await c2.request('thread/goal/get', { threadId: t.threadId })).goal?.status;
    }
    results[`i_${variant}`] = rec;
    out(`### ${variant}`);
    out(JSON.stringify(rec, null, 1));
    await c2.request('thread/goal/set', { threadId: t.threadId, status: 'paused' }).catch(() => undefined);
    await c1.close();
    await c2.close();
  }
}
