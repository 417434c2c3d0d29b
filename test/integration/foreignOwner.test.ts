// Goals in another Codex app: a second, private `codex app-server` over stdio on the daemon's
// CODEX_HOME owns the threads (as the Codex VS Code extension, the desktop app and an embedded TUI
// do), and the project's mock model fails their turns. Once per installed Codex build (the pinned
// and the latest; the version is in each title). The first tests measure what the daemon can do
// with such a thread (docs/daemon-behaviour.md (k)); the rest hold the engine, in-process on the
// daemon's socket with the shipped options, to what the measurement allows: the goal is shown with
// a state of its own and never receives a set that does nothing; after the owner exits, nothing is
// done by the engine alone (the rule in docs/architecture.md, "Goals in other Codex apps"), and
// "Retry now" loads the thread and recovers it exactly once. The daemon is the judge
// (test/support/daemonJudge.ts). Instead of waiting for the shipped 60 s resync timer, the tests
// ask for the same pass with `engine.resync()` (what the Refresh command does).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startAppServerStdio, type StdioAppServer } from '../../src/demo/appServerStdio';
import { codexBuilds } from '../../src/demo/codexBinary';
import { makeCodexHome, type CodexHome } from '../../src/demo/codexHome';
import { killAllTracked, sleep, stopProcessGroup, trackedAlive } from '../../src/demo/codexProcesses';
import {
  startThreadWithGoal,
  waitGoalStatus,
  waitTurnCompleted,
  type StartedGoalThread,
} from '../../src/demo/goalThreads';
import { controlSocketPath, startDaemon } from '../../src/demo/managedDaemon';
import { startMockModel } from '../../src/demo/mockModel';
import { type MockModel } from '../../src/demo/mockModes';
import { UserClient } from '../../src/demo/userClient';
import { describeState } from '../../src/model/stateText';
import { connectDaemon } from '../../src/protocol/client';
import { assertNoAutomaticSet, assertOneRecoveryPerFailedTurn, daemonRecord } from '../support/daemonJudge';
import type { Json } from '../support/json';
import { RealEngine } from '../support/realEngine';
import { RunnerProcess, settleAndStop, statusOfFile } from '../support/runnerProcess';

const T = 60_000;
/** How long "the owner starts no turn" is watched (the measured goal/set start a turn within ~20 ms). */
const QUIET_MS = 3_000;

for (const codex of codexBuilds())
  describe(`a goal in another Codex app (its own app-server on the same home), codex ${codex.version}`, () => {
    let mock: MockModel;
    let home: CodexHome;
    let owner: StdioAppServer;
    let ownerClient: UserClient<Json>;
    /** A plain client of the daemon: what any daemon client (the engine included) can see and do. */
    let watcher: UserClient<Json>;
    let real: RealEngine;
    const threads: StartedGoalThread<Json>[] = [];
    /** Blocked by HTTP 500 in the owner; the engine's subject. */
    let blocked: StartedGoalThread<Json>;
    let blockedTurn: string;

    before(async () => {
      mock = await startMockModel();
      home = await makeCodexHome(mock.url, '', { codex });
      await startDaemon(home.dir);
      owner = startAppServerStdio(home.dir);
      ownerClient = await UserClient.overStdio<Json>(owner, { name: 'other-codex-app' });
      watcher = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: 'daemon-watcher' });
      mock.setMode('http500');
      blocked = await ownerGoal('blocked in the other app');
      const failed = await waitTurnCompleted(ownerClient, blocked.threadId, 'failed', T, blocked.goalSetSeq);
      blockedTurn = String(failed.params.turn.id);
    });

    after(async () => {
      await real?.close();
      await watcher?.close().catch(() => undefined);
      await ownerClient?.close().catch(() => undefined);
      if (owner) await stopProcessGroup(owner);
      await home?.cleanup();
      await mock?.close();
      for (const t of threads) await t.cleanup();
      await killAllTracked();
      assert.deepEqual(trackedAlive(), [], 'a process was left behind');
    });

    async function ownerGoal(objective: string): Promise<StartedGoalThread<Json>> {
      const t = await startThreadWithGoal(ownerClient, objective, { timeoutMs: T });
      threads.push(t);
      return t;
    }

    function notificationsAbout(client: UserClient<Json>, threadId: string, since = 0): string[] {
      return client.log
        .filter((e) => e.seq > since && e.kind === 'notification')
        .filter((e) => JSON.stringify(e.params ?? {}).includes(threadId))
        .map((e) => String(e.method));
    }

    it('measured: the daemon lists and reads the thread, cannot load it, and is told nothing of it', async () => {
      const id = blocked.threadId;
      assert.ok(!(await watcher.request('thread/loaded/list', {})).data.includes(id), 'loaded in the daemon');
      const listed = (await watcher.request('thread/list', { sortKey: 'updated_at' })).data.find(
        (t: Json) => t.id === id,
      );
      assert.ok(listed, 'thread/list does not list the thread of the other app');
      assert.equal(listed.status.type, 'notLoaded');
      assert.equal(typeof listed.updatedAt, 'number');
      // The state DB alone (what the engine asks for: far cheaper) tells the updatedAt too.
      const fromDb = (await watcher.request('thread/list', { sortKey: 'updated_at', useStateDbOnly: true })).data;
      // Not always the same second: the full listing can name a second later than the DB (seen once
      // in CI, 1796155483 against 1796155482). The engine only ever compares DB values with DB values.
      const dbUpdatedAt = fromDb.find((t: Json) => t.id === id)?.updatedAt;
      assert.equal(typeof dbUpdatedAt, 'number');
      assert.ok(Math.abs(dbUpdatedAt - listed.updatedAt) <= 1, `DB ${dbUpdatedAt}, listing ${listed.updatedAt}`);
      assert.equal((await watcher.request('thread/goal/get', { threadId: id })).goal.status, 'blocked');
      const turns = (await watcher.request('thread/turns/list', { threadId: id })).data;
      assert.deepEqual(
        turns.map((t: Json) => [t.id, t.status, t.error?.codexErrorInfo]),
        [[blockedTurn, 'failed', 'internalServerError']],
      );
      await assert.rejects(watcher.request('thread/resume', { threadId: id }), /already has an active writer/);
      assert.deepEqual(notificationsAbout(watcher, id), [], 'the daemon told its client about the thread');
    });

    it('measured: a set from the daemon answers "active" but only writes the state DB, and the owner starts no turn', async () => {
      mock.setMode('http500');
      const t = await ownerGoal('set from the daemon');
      await waitTurnCompleted(ownerClient, t.threadId, 'failed', T, t.goalSetSeq);
      const rollout = String(t.thread.path);
      const size = fs.statSync(rollout).size;
      const requests = mock.requests;
      const seq = ownerClient.lastSeq;
      const reply = await watcher.request('thread/goal/set', {
        threadId: t.threadId,
        status: 'active',
        origin: 'automatic',
      });
      assert.equal(reply.goal.status, 'active');
      await sleep(QUIET_MS);
      assert.equal(mock.requests, requests, 'a model request followed the set');
      assert.ok(!notificationsAbout(ownerClient, t.threadId, seq).includes('turn/started'), 'the owner started a turn');
      assert.equal((await ownerClient.request('thread/goal/get', { threadId: t.threadId })).goal.status, 'active');
      assert.equal(fs.statSync(rollout).size, size, 'the set was written to the rollout');
    });

    it('the runner says so once, and not again after a crash or a clean stop; `status` shows it', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-foreign-runner-'));
      const state = path.join(dir, 'state.json');
      const id = blocked.threadId;
      const start = () => new RunnerProcess(['--codex-home', home.dir, '--state', state]);
      const runners: RunnerProcess[] = [];
      try {
        const first = start();
        runners.push(first);
        await first.waitFor((d) => d.type === 'attention' && d.threadId === id, T, 'the attention line');
        assert.equal(first.of('elsewhere', id).length, 1);
        await first.kill(); // a crash: what it announced was saved before it said it
        // Started again after that crash, then again after a clean stop (SIGINT) of the second.
        for (const ending of ['SIGKILL', 'SIGINT'] as const) {
          const again = start();
          runners.push(again);
          await again.connected();
          // Its connect-time look is done when its clean stop returns (the stop waits for it).
          const saved = await settleAndStop(again, state, { [id]: 'elsewhere' });
          assert.equal(saved[id].lastFailure?.turnId, blockedTurn);
          assert.deepEqual(again.of('attention', id), [], `told again after a restart that followed a ${ending}`);
        }
        const status = statusOfFile(state, ['--codex-home', home.dir], false);
        // A goal stopped in another Codex app waits for a person (model/queries.ts `needsPerson`, as
        // the view's badge counts it): `status` exits 1.
        assert.equal(status.status, 1, status.stderr);
        assert.match(
          status.stdout,
          new RegExp(`^${id}  blocked in another Codex app · server error, \\d+ (s|min) ago  "`, 'm'),
        );
      } finally {
        for (const r of runners) await r.kill();
        fs.rmSync(dir, { recursive: true, force: true });
      }
      assertNoAutomaticSet(await daemonRecord(watcher, id, String(blocked.thread.path)));
    });

    it('the engine shows the blocked goal as in another Codex app, says so once, and never sets it', async () => {
      real = await RealEngine.start((listener) =>
        connectDaemon({ kind: 'socket', path: controlSocketPath(home.dir) }, listener, { clientVersion: 'test' }),
      );
      const { engine, decisions } = real;
      const state = engine.connectionState();
      assert.equal(state.kind === 'connected' ? state.codexVersion : null, codex.version);
      await real.until(() => engine.watch(blocked.threadId)?.state.kind === 'elsewhere', 'the goal shown elsewhere');
      const w = engine.watch(blocked.threadId)!;
      assert.deepEqual(w.state.kind === 'elsewhere' && [w.state.goal, w.state.retryable], ['blocked', true]);
      assert.equal(w.lastFailure?.turnId, blockedTurn);
      assert.equal(w.lastFailure?.code, 'internalServerError');
      assert.match(describeState(w, Date.now(), 6), /^blocked in another Codex app · server error, \d+ s ago$/);
      // The goal the daemon's set made active (the measurement above) shows as running there.
      const other = threads[1];
      await real.until(() => engine.watch(other.threadId)?.state.kind === 'elsewhere', 'the second goal');
      assert.equal(describeState(engine.watch(other.threadId)!, Date.now(), 6), 'running in another Codex app');

      await engine.resync();
      await engine.resync();
      await engine.idle();
      const told = decisions.filter((d) => d.type === 'attention' && d.threadId === blocked.threadId);
      assert.equal(told.length, 1, `told ${told.length} times: ${JSON.stringify(told)}`);
      assert.ok(!decisions.some((d) => d.type === 'recovering' || d.type === 'loaded'));
      assertNoAutomaticSet(await daemonRecord(watcher, blocked.threadId, String(blocked.thread.path)));
    });

    it('Retry now while the other app holds the thread: refused with what to do, nothing sent', async () => {
      const { engine } = real;
      await assert.rejects(engine.commands.retryNow(blocked.threadId), /another Codex app still has this thread open/);
      assert.equal(engine.watch(blocked.threadId)?.state.kind, 'elsewhere');
      assertNoAutomaticSet(await daemonRecord(watcher, blocked.threadId, String(blocked.thread.path)));
    });

    it('after the other app exits: nothing by itself; Retry now loads it and recovers it exactly once', async () => {
      const { engine, decisions } = real;
      await ownerClient.close();
      await stopProcessGroup(owner);
      mock.setMode('goalComplete');
      const rollout = String(blocked.thread.path);
      const size = fs.statSync(rollout).size;

      // Left alone: resyncs past the exit neither load the thread nor set its goal.
      await real.settle();
      await engine.resync();
      await engine.idle();
      assert.equal(engine.watch(blocked.threadId)?.state.kind, 'elsewhere');
      assertNoAutomaticSet(await daemonRecord(watcher, blocked.threadId, rollout), 'recovered without being asked');
      assert.equal(fs.statSync(rollout).size, size, 'something wrote to the rollout');

      const seq = watcher.lastSeq;
      const asked = Date.now();
      await engine.commands.retryNow(blocked.threadId);
      assert.ok(decisions.some((d) => d.type === 'loaded' && d.threadId === blocked.threadId));
      // Now, not after a backoff (the shipped base of 30 s waits at least 15 s).
      await real.until(
        () => decisions.some((d) => d.type === 'recovering' && d.threadId === blocked.threadId),
        'the recovery',
      );
      assert.ok(Date.now() - asked < 10_000, `Retry now took ${Date.now() - asked} ms: it waited for a backoff`);
      await waitGoalStatus(watcher, blocked.threadId, 'complete', T, seq);
      await real.until(() => engine.watch(blocked.threadId)?.state.kind === 'complete', 'the complete state');
      await real.settle();
      const record = await daemonRecord(watcher, blocked.threadId, rollout);
      assert.deepEqual(record.failed, [blockedTurn]);
      assertOneRecoveryPerFailedTurn(record);
      assert.equal(decisions.filter((d) => d.type === 'recovering' && d.threadId === blocked.threadId).length, 1);

      // Measured: the daemon is the thread's writer now; the app the person used cannot open it.
      const again = startAppServerStdio(home.dir);
      const client = await UserClient.overStdio<Json>(again, { name: 'other-codex-app-again' });
      try {
        await assert.rejects(
          client.request('thread/resume', { threadId: blocked.threadId }),
          /already has an active writer/,
        );
      } finally {
        await client.close().catch(() => undefined);
        await stopProcessGroup(again);
      }
    });
  });
