/**
 * Re-measures the daemon facts recorded in docs/daemon-behaviour.md against the real `codex`
 * binary from node_modules and the project's mock model.
 *
 *   npx tsc -p . && node out/test/support/probe.js [--json out.json] [--only a,b,c]
 *
 * Prints one section per question (a–j, plus `bin`: native binary vs shim) with the exact
 * notification order seen by the user client (~2 min; `i` alone ~70 s because of the 60 s
 * stop grace period). Starts its own mock model, CODEX_HOME and daemon and removes all of them at the end.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { startMockModel } from '../../src/demo/mockModel';
import { type MockMode, type MockModeOptions, type MockModel } from '../../src/demo/mockModes';
import { codexBinary, codexEnv, codexShim, timeVersion } from '../../src/demo/codexBinary';
import { makeCodexHome, type CodexHome } from '../../src/demo/codexHome';
import { killAllTracked, sleep, stopProcessGroup, trackedAlive } from '../../src/demo/codexProcesses';
import { controlSocketPath, daemonPid, restartDaemon, startDaemon, stopDaemon } from '../../src/demo/managedDaemon';
import { about, startThreadWithGoal, waitTurnCompleted } from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import { describe, type LogEntry } from '../../src/demo/userClientLog';
import type { Json } from './json';

const args = process.argv.slice(2);
const jsonOut = args.includes('--json') ? args[args.indexOf('--json') + 1] : undefined;
const only = args.includes('--only') ? new Set(args[args.indexOf('--only') + 1].split(',')) : undefined;
const want = (k: string) => !only || only.has(k);

const results: Record<string, Json> = {};
const tempDirs: string[] = [];

function out(line = ''): void {
  process.stdout.write(line + '\n');
}

function section(title: string): void {
  out('');
  out(`## ${title}`);
}

/** Log entries about `threadId` (and replies) after `since`, rendered with `describe`. */
function order(
  c: UserClient<Json>,
  threadId: string,
  since: number,
  filter?: (e: LogEntry<Json>) => boolean,
): string[] {
  return c.log
    .filter(
      (e) => e.seq > since && (e.kind === 'response' || e.params?.threadId === threadId) && (!filter || filter(e)),
    )
    .map(describe);
}

const KEY_METHODS = new Set([
  'thread/goal/updated',
  'thread/goal/cleared',
  'thread/status/changed',
  'error',
  'turn/started',
  'turn/completed',
  'serverRequest/resolved',
]);
const keyOnly = (e: LogEntry<Json>) => e.kind !== 'notification' || KEY_METHODS.has(e.method);

async function tempCwd(): Promise<string> {
  const d = await fs.mkdtemp(path.join(os.tmpdir(), 'cgr-probe-cwd-'));
  tempDirs.push(d);
  return d;
}

interface FailureCase {
  mode: MockMode;
  threadId: string;
  ms: number;
  mockRequests: number;
  order: string[];
  errors: Json[];
  turnStatus: string;
  turnError: Json;
  rateLimitsUpdated: Json[];
  goalAfter: Json;
  threadStatusAfter: Json;
}

async function failureCase(c: UserClient<Json>, mock: MockModel, mode: MockMode): Promise<FailureCase> {
  mock.setMode(mode);
  const before = mock.requests;
  const t0 = Date.now();
  const t = await startThreadWithGoal(c, `probe ${mode}`, { cwd: await tempCwd() });
  const done = await waitTurnCompleted(c, t.threadId, undefined, 90_000, t.goalSetSeq);
  const ms = Date.now() - t0;
  await sleep(400); // trailing notifications
  const goal = (await c.request('thread/goal/get', { threadId: t.threadId })).goal;
  const thread = (await c.request('thread/read', { threadId: t.threadId })).thread;
  const errors = c.notifications
    .filter((n) => n.seq > t.goalSetSeq && n.method === 'error' && n.params?.threadId === t.threadId)
    .map((n) => ({
      willRetry: n.params.willRetry,
      message: n.params.error?.message,
      codexErrorInfo: n.params.error?.codexErrorInfo,
      additionalDetails: n.params.error?.additionalDetails,
    }));
  const rateLimitsUpdated = c.notifications
    .filter((n) => n.seq > t.goalSetSeq && n.seq <= done.seq && n.method === 'account/rateLimits/updated')
    .map((n) => n.params);
  return {
    mode,
    rateLimitsUpdated,
    threadId: t.threadId,
    ms,
    mockRequests: mock.requests - before,
    order: order(c, t.threadId, t.goalSetSeq, keyOnly),
    errors,
    turnStatus: done.params.turn.status,
    turnError: done.params.turn.error,
    goalAfter: goal?.status,
    threadStatusAfter: thread.status,
  };
}

async function rolloutLines(file: string): Promise<string[]> {
  try {
    return (await fs.readFile(file, 'utf8')).split('\n').filter((l) => l.trim());
  } catch {
    return [];
  }
}

/** Rollout lines that mention goals. */
function goalLines(lines: string[]): string[] {
  return lines.filter((l) => /goal/i.test(l));
}

/** `type/payload.type` of each rollout line (a compact shape of what was appended). */
function lineTypes(lines: string[]): string[] {
  return lines.map((l) => {
    try {
      const j = JSON.parse(l) as {
        type?: string;
        payload?: { type?: string; role?: string; content?: { text?: string }[] };
      };
      const src = /source=\\?"([a-z_]+)\\?"/.exec(j.payload?.content?.[0]?.text ?? '')?.[1];
      return `${j.type}/${j.payload?.type}${j.payload?.role ? ':' + j.payload.role : ''}${src ? `(source=${src})` : ''}`;
    } catch {
      return '?';
    }
  });
}

async function measureBinaries(home: CodexHome): Promise<Json> {
  const res: Json = { native: codexBinary(), shim: codexShim(), version: {}, initialize: {} };
  for (const [name, bin] of [
    ['native', codexBinary()],
    ['shim', codexShim()],
  ] as const) {
    const v: number[] = [];
    for (let i = 0; i < 5; i++) v.push(Math.round(timeVersion(bin).ms));
    res.version[name] = v;
    const init: number[] = [];
    const procs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      const child = spawn(bin, ['app-server'], {
        env: codexEnv(home.dir),
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const c = await UserClient.overStdio<Json>(child);
      init.push(Date.now() - t0);
      // processes in the child's group: the shim on Node 20 is node + native codex
      procs.push(countGroup(child.pid ?? 0));
      const exitP = new Promise<string>((r) => child.once('exit', (code, sig) => r(`${code ?? sig}`)));
      await c.close(); // stdin EOF
      const how = await Promise.race([exitP, sleep(3000).then(() => 'still running 3 s after stdin EOF')]);
      await stopProcessGroup(child);
      res.exitOnStdinEof = how;
    }
    res.initialize[name] = init;
    res[`${name}ProcessesInGroup`] = procs;
  }
  return res;
}

function countGroup(pgid: number): number {
  let n = 0;
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const s = readFileSync(`/proc/${e}/stat`, 'utf8');
      const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
      if (Number(rest[2]) === pgid && rest[0] !== 'Z') n++;
    } catch {
      /* gone */
    }
  }
  return n;
}

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
async function probeResume(home: CodexHome, mock: MockModel, clients: UserClient<Json>[]): Promise<Json> {
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

async function main(): Promise<void> {
  const started = Date.now();
  const mock = await startMockModel();
  const home = await makeCodexHome(mock.url);
  const clients: UserClient<Json>[] = [];
  try {
    out(`# Probe: codex ${timeVersion(codexBinary()).out}, CODEX_HOME ${home.dir}, mock ${mock.url}`);

    if (want('bin')) {
      section('binary: native vs .bin shim');
      results.binary = await measureBinaries(home);
      out(JSON.stringify(results.binary, null, 1));
    }

    const t0 = Date.now();
    const report = await startDaemon(home.dir);
    out(`daemon start: ${Date.now() - t0} ms, ${JSON.stringify(report)}`);
    const a = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: 'probe-user-a' });
    clients.push(a);

    // (d) ------------------------------------------------------------------------------------
    if (want('d')) {
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

    // (a) ------------------------------------------------------------------------------------
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
    if (want('a') || want('b') || want('c') || want('f')) {
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
    }

    // (b) part 1 -----------------------------------------------------------------------------
    const failedThread = cases.http500?.threadId;
    if (failedThread && want('b')) {
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

    // (c) ------------------------------------------------------------------------------------
    const blockedThread = cases.dropStream?.threadId;
    if (blockedThread && want('c')) {
      section('(c) thread/goal/set {status:active, origin:automatic} on a blocked goal (mock: goalComplete)');
      mock.setMode('goalComplete');
      const turnsBefore = (await a.request('thread/turns/list', { threadId: blockedThread })).data.map(
        (t: Json) => t.id,
      );
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
      out(
        `on a complete goal: reply goal.status=${results.c_onComplete.reply}; ${results.c_onComplete.order.join(' → ')}`,
      );
    }

    // (e) ------------------------------------------------------------------------------------
    if (want('e')) {
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
          .filter(
            (n) => n.seq > aSince2 && n.method === 'item/completed' && n.params?.item?.type === 'commandExecution',
          )
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

    // (h) ------------------------------------------------------------------------------------
    let pausedThread: string | undefined;
    if (want('h') || want('g')) {
      section('(h) turn/interrupt during a running goal turn (mock: slow)');
      mock.setMode('slow', { delayMs: 20_000 });
      const t = await startThreadWithGoal(a, 'probe interrupt', { cwd: await tempCwd() });
      const ts = await a.waitFor(about(t.threadId, 'turn/started'), 15_000, t.goalSetSeq);
      await mock.waitForRequests(mock.requests + 0, 1000).catch(() => undefined);
      await sleep(500);
      const since = a.lastSeq;
      const reqBefore = mock.requests;
      const reply = await a.requestEntry('turn/interrupt', { threadId: t.threadId, turnId: ts.params.turn.id });
      await waitTurnCompleted(a, t.threadId, undefined, 15_000, since);
      await sleep(3000);
      const goal = (await a.request('thread/goal/get', { threadId: t.threadId })).goal;
      const thread = (await a.request('thread/read', { threadId: t.threadId })).thread;
      results.h = {
        reply: reply.result,
        order: order(a, t.threadId, since),
        goal: goal?.status,
        threadStatus: thread.status,
        newModelRequestsWithin3s: mock.requests - reqBefore,
        newTurnStarted: a.notifications.some(
          (n) => n.seq > since && n.method === 'turn/started' && n.params.threadId === t.threadId,
        ),
      };
      out(JSON.stringify(results.h, null, 1));
      pausedThread = t.threadId;
    }

    // (g) ------------------------------------------------------------------------------------
    if (pausedThread && want('g')) {
      section('(g) rollout lines written by thread/goal/set (user paused, then automatic active)');
      const thread = (await a.request('thread/read', { threadId: pausedThread })).thread;
      const file: string = thread.path;
      const before = await rolloutLines(file);
      const since = a.lastSeq;
      const r = await a.request('thread/goal/set', { threadId: pausedThread, status: 'paused', origin: 'user' });
      await sleep(800);
      const afterPause = await rolloutLines(file);
      const pausedOrder = order(a, pausedThread, since);
      mock.setMode('goalComplete');
      const since2 = a.lastSeq;
      await a.request('thread/goal/set', { threadId: pausedThread, status: 'active', origin: 'automatic' });
      await a
        .waitFor(
          about(pausedThread, 'thread/goal/updated', (p) => p.goal?.status === 'complete'),
          30_000,
          since2,
        )
        .catch(() => undefined);
      await sleep(800);
      const afterAuto = await rolloutLines(file);
      const since3 = a.lastSeq;
      await a.request('thread/goal/set', { threadId: pausedThread, status: 'paused' });
      await sleep(800);
      const afterNoOrigin = await rolloutLines(file);
      const since4 = a.lastSeq;
      await a.request('thread/goal/set', {
        threadId: pausedThread,
        status: 'paused',
        objective: 'probe interrupt, reworded',
        origin: 'user',
      });
      await sleep(800);
      const afterUserObjective = await rolloutLines(file);
      results.g = {
        lineTypesLater: {
          noOriginPaused: lineTypes(afterNoOrigin.slice(afterAuto.length)),
          userPausedWithObjective: lineTypes(afterUserObjective.slice(afterNoOrigin.length)),
        },
        userObjectiveNewLines: afterUserObjective.slice(afterNoOrigin.length),
        userObjectiveNotifications: order(a, pausedThread, since4),
        path: file,
        reply: r.goal?.status,
        notifications: pausedOrder,
        userPausedNewLines: afterPause.slice(before.length),
        automaticActiveGoalLines: goalLines(afterAuto.slice(afterPause.length)).filter(
          (l) => !/"function_call_output"|source=\\"goal\\"/.test(l),
        ),
        lineTypes: {
          userPaused: lineTypes(afterPause.slice(before.length)),
          automaticActive: lineTypes(afterAuto.slice(afterPause.length)),
        },
        noOriginPausedNewLines: afterNoOrigin.slice(afterAuto.length),
        noOriginNotifications: order(a, pausedThread, since3),
      };
      out(`path: ${file}`);
      out('user paused → new rollout lines:');
      for (const l of results.g.userPausedNewLines) out('  ' + l);
      out('automatic active → goal-related new lines:');
      for (const l of results.g.automaticActiveGoalLines) out('  ' + l);
      out('no origin paused → new lines:');
      for (const l of results.g.noOriginPausedNewLines) out('  ' + l);
      out(`appended line types: ${JSON.stringify({ ...results.g.lineTypes, ...results.g.lineTypesLater })}`);
      out('user paused + objective (second user set) → new lines:');
      for (const l of results.g.userObjectiveNewLines) out('  ' + l);
    }

    // (b) part 2 + (f) -----------------------------------------------------------------------
    if (failedThread && (want('b') || want('f'))) {
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

    // (i) ------------------------------------------------------------------------------------
    if (want('i')) {
      section(
        '(i) daemon stop/restart while a goal turn is in flight (stop = SIGTERM, drains turns; SIGKILL after 60 s)',
      );
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

    if (want('j')) {
      section('(j) thread/resume {excludeTurns:true} from a second, fresh connection on a loaded thread');
      results.j = await probeResume(home, mock, clients);
    }

    results.totalMs = Date.now() - started;
    out('');
    out(`total ${results.totalMs} ms`);
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    await stopDaemon(home.dir).catch(() => undefined);
    await home.cleanup();
    await mock.close();
    await killAllTracked();
    for (const d of tempDirs) await fs.rm(d, { recursive: true, force: true });
    const left = trackedAlive();
    if (left.length) out(`LEFT RUNNING: ${JSON.stringify(left)}`);
    if (jsonOut) writeFileSync(jsonOut, JSON.stringify(results, null, 2));
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`probe failed: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exitCode = 1;
});
