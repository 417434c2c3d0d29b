/**
 * Proves the test harness (mock model, real codex binary, user client) against codex 0.169.0.
 * Run: npx tsc -p . && node --test out/test/integration/harness.test.js
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readlinkSync } from 'node:fs';
import { startMockModel } from '../../src/demo/mockModel';
import { type MockModel } from '../../src/demo/mockModes';
import { startAppServerStdio, type StdioAppServer } from '../../src/demo/appServerStdio';
import { codexBinary, codexBuilds, timeVersion } from '../../src/demo/codexBinary';
import { daemonVersion } from '../../src/model/codexVersion';
import { makeCodexHome, type CodexHome } from '../../src/demo/codexHome';
import { killAllTracked, sleep, stopProcessGroup, trackedAlive } from '../../src/demo/codexProcesses';
import { controlSocketPath, daemonPid, startDaemon, stopDaemon } from '../../src/demo/managedDaemon';
import {
  about,
  startThreadWithGoal,
  waitGoalStatus,
  waitTurnCompleted,
  type StartedGoalThread,
} from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import type { Json } from '../support/json';

const T = 30_000;

for (const codex of codexBuilds())
  describe(`harness against the real codex app-server (stdio), codex ${codex.version}`, () => {
    let mock: MockModel;
    let home: CodexHome;
    let server: StdioAppServer;
    let user: UserClient<Json>;
    const threads: StartedGoalThread<Json>[] = [];

    before(async () => {
      mock = await startMockModel();
      home = await makeCodexHome(mock.url, '', { codex });
      server = startAppServerStdio(home.dir);
      user = await UserClient.overStdio<Json>(server, { name: 'harness-user' });
    });

    after(async () => {
      await user?.close().catch(() => undefined);
      if (server) await stopProcessGroup(server);
      await home?.cleanup();
      await mock?.close();
      for (const t of threads) await t.cleanup();
      await killAllTracked();
      assert.deepEqual(trackedAlive(), []);
    });

    test(`the binary is the native codex ${codex.version}, and initialize's userAgent names that version`, () => {
      const bin = codexBinary(codex);
      assert.match(bin, /bin\/codex$/);
      assert.equal(timeVersion(bin).out, `codex-cli ${codex.version}`);
      assert.equal(user.initializeResult.codexHome, home.dir);
      assert.equal(daemonVersion(String(user.initializeResult.userAgent)), codex.version);
    });

    test('healthy turn, then the continuation turn completes the goal', { timeout: T }, async () => {
      mock.setMode('healthyThenComplete');
      const t = await startThreadWithGoal(user, 'harness: complete', { timeoutMs: T });
      threads.push(t);
      assert.equal(t.goal.status, 'active');
      const complete = await waitGoalStatus(user, t.threadId, 'complete', T, t.goalSetSeq);
      await waitTurnCompleted(user, t.threadId, 'completed', T, complete.seq);
      const goal = (await user.request('thread/goal/get', { threadId: t.threadId })).goal;
      assert.equal(goal.status, 'complete');
      const turns = (await user.request('thread/turns/list', { threadId: t.threadId })).data;
      assert.ok(turns.length >= 2, `expected a healthy turn and a continuation turn, got ${turns.length}`);
      assert.ok(turns.every((x: { status: string }) => x.status === 'completed'));
    });

    test(
      'http500: goal blocked, thread systemError, turn failed with internalServerError',
      { timeout: T },
      async () => {
        mock.setMode('http500');
        const t = await startThreadWithGoal(user, 'harness: http500', { timeoutMs: T });
        threads.push(t);
        const done = await waitTurnCompleted(user, t.threadId, undefined, T, t.goalSetSeq);
        assert.equal(done.params.turn.status, 'failed');
        assert.equal(done.params.turn.error.codexErrorInfo, 'internalServerError');
        const blocked = await waitGoalStatus(user, t.threadId, 'blocked', 1000, t.goalSetSeq);
        const sysErr = await user.waitFor(
          about(t.threadId, 'thread/status/changed', (p) => p.status.type === 'systemError'),
          1000,
          t.goalSetSeq,
        );
        const finalErr = await user.waitFor(
          about(t.threadId, 'error', (p) => p.willRetry === false),
          1000,
          t.goalSetSeq,
        );
        // order on the wire: blocked < systemError < error(willRetry false) < turn/completed(failed)
        assert.ok(
          blocked.seq < sysErr.seq && sysErr.seq < finalErr.seq && finalErr.seq < done.seq,
          user.summary(t.goalSetSeq, t.threadId),
        );
        const goal = (await user.request('thread/goal/get', { threadId: t.threadId })).goal;
        assert.equal(goal.status, 'blocked');
        assert.ok(mock.requestLog.some((r) => r.answered === 'http500'));
      },
    );

    test(
      'script(): k failed requests then the fallback mode; automatic re-activation completes the goal',
      { timeout: T },
      async () => {
        mock.setMode('goalComplete');
        // one failing turn = 4 model requests with request_max_retries = stream_max_retries = 1
        mock.script(['http500', 'http500', 'http500', 'http500']);
        const t = await startThreadWithGoal(user, 'harness: script', { timeoutMs: T });
        threads.push(t);
        await waitTurnCompleted(user, t.threadId, 'failed', T, t.goalSetSeq);
        await waitGoalStatus(user, t.threadId, 'blocked', 1000, t.goalSetSeq);
        assert.equal(mock.scripted, 0, 'the failing turn consumed the whole script');
        mock.clearScript();
        const since = user.lastSeq;
        const reply = await user.requestEntry('thread/goal/set', {
          threadId: t.threadId,
          status: 'active',
          origin: 'automatic',
        });
        assert.equal(reply.result.goal.status, 'active');
        const started = await user.waitFor(about(t.threadId, 'turn/started'), T, since);
        assert.ok(started.seq > reply.seq, 'the reply comes before turn/started');
        await waitGoalStatus(user, t.threadId, 'complete', T, since);
      },
    );

    test('usageLimit: goal usageLimited, turn failed with usageLimitExceeded', { timeout: T }, async () => {
      mock.setMode('usageLimit', { resetsAt: Math.floor(Date.now() / 1000) + 3600 });
      const t = await startThreadWithGoal(user, 'harness: usage limit', { timeoutMs: T });
      threads.push(t);
      const done = await waitTurnCompleted(user, t.threadId, undefined, T, t.goalSetSeq);
      assert.equal(done.params.turn.status, 'failed');
      assert.equal(done.params.turn.error.codexErrorInfo, 'usageLimitExceeded');
      const goal = (await user.request('thread/goal/get', { threadId: t.threadId })).goal;
      assert.equal(goal.status, 'usageLimited');
    });

    test(
      'approval: the request reaches the user client; thread waitingOnApproval; goal stays active',
      { timeout: T },
      async () => {
        mock.setMode('approval', { file: '/nonexistent-cgr-dir/approval-probe' });
        const t = await startThreadWithGoal(user, 'harness: approval', { approvalPolicy: 'untrusted', timeoutMs: T });
        threads.push(t);
        const req = await user.waitForServerRequest('item/commandExecution/requestApproval', T, t.goalSetSeq);
        assert.equal(req.params.threadId, t.threadId);
        assert.match(String(req.params.command), /touch \/nonexistent-cgr-dir\/approval-probe/);
        const thread = (await user.request('thread/read', { threadId: t.threadId })).thread;
        assert.deepEqual(thread.status, { type: 'active', activeFlags: ['waitingOnApproval'] });
        assert.equal((await user.request('thread/goal/get', { threadId: t.threadId })).goal.status, 'active');
        // The user declines; the model then completes the goal.
        mock.setMode('goalComplete');
        const since = user.lastSeq;
        user.respond(req.id as number, { decision: 'decline' });
        await user.waitFor(about(t.threadId, 'serverRequest/resolved'), T, since);
        await waitGoalStatus(user, t.threadId, 'complete', T, since);
      },
    );
  });

for (const codex of codexBuilds())
  describe(`harness against the real daemon (control socket), codex ${codex.version}`, () => {
    let mock: MockModel;
    let home: CodexHome;
    const clients: UserClient<Json>[] = [];
    const threads: StartedGoalThread<Json>[] = [];

    before(async () => {
      mock = await startMockModel();
      home = await makeCodexHome(mock.url, '', { codex });
    });

    after(async () => {
      for (const c of clients) await c.close().catch(() => undefined);
      await home?.cleanup();
      await mock?.close();
      for (const t of threads) await t.cleanup();
      await killAllTracked();
      assert.deepEqual(trackedAlive(), []);
    });

    test(
      'daemon start, user client over the socket, blocked goal, daemon stop leaves nothing behind',
      { timeout: T },
      async () => {
        const report = await startDaemon(home.dir);
        assert.equal(report.status, 'started');
        const pid = daemonPid(home.dir);
        assert.ok(pid, 'daemon pid recorded');
        const sock = controlSocketPath(home.dir);
        const target = readlinkSync(sock);
        const user = await UserClient.overSocket<Json>(sock, { name: 'harness-daemon-user' });
        clients.push(user);
        mock.setMode('dropStream');
        const t = await startThreadWithGoal(user, 'harness: daemon dropStream', { timeoutMs: T });
        threads.push(t);
        const done = await waitTurnCompleted(user, t.threadId, 'failed', T, t.goalSetSeq);
        assert.equal(done.params.turn.error.codexErrorInfo, 'other');
        assert.equal((await user.request('thread/goal/get', { threadId: t.threadId })).goal.status, 'blocked');

        await stopDaemon(home.dir);
        assert.equal(daemonPid(home.dir), null);
        assert.equal(existsSync(target), false, 'socket file removed');
        for (let i = 0; i < 40 && !user.closed; i++) await sleep(50);
        assert.equal(user.closed, true, 'socket client saw the daemon go away');
      },
    );
  });
