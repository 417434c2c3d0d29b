// The engine in-process over the stdio of a private `codex app-server` child (the real binary),
// with the project's mock model. On stdio the engine's connection is the only client, so the
// test plays the user through the same session (`request`), as a user's explicit action would.
// The engine runs with the shipped options (resync 60 s, limiter, prepare lead) but a short
// backoff (base 0.5 s, cap 2 s) so the recovery fits in a test; the daemon is the judge
// (test/support/daemonJudge.ts: the rollout's automatic activations per failed turn).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { connectDaemon } from '../../src/protocol/client';
import type { DaemonSession } from '../../src/protocol/daemon';
import { codexBinary, codexBuilds, codexEnv } from '../../src/demo/codexBinary';
import { makeCodexHome, type CodexHome } from '../../src/demo/codexHome';
import { isAlive, killAllTracked, sleep } from '../../src/demo/codexProcesses';
import { startMockModel } from '../../src/demo/mockModel';
import { type MockModel } from '../../src/demo/mockModes';
import { RealEngine } from '../support/realEngine';
import { assertOneRecoveryPerFailedTurn, daemonRecord } from '../support/daemonJudge';

const T = 60_000;

for (const codex of codexBuilds())
  describe(`engine over stdio against the real app-server, codex ${codex.version}`, () => {
    let mock: MockModel;
    let home: CodexHome;
    let real: RealEngine;
    let session: DaemonSession | null = null;

    before(async () => {
      mock = await startMockModel();
      home = await makeCodexHome(mock.url, '', { codex });
      real = await RealEngine.start(
        async (listener) => {
          session = await connectDaemon(
            { kind: 'stdio', command: codexBinary(codex), args: ['app-server'], env: codexEnv(home.dir) },
            listener,
            { clientVersion: 'test' },
          );
          return session;
        },
        { baseDelayMs: 500, maxDelayMs: 2_000 },
      );
    });

    after(async () => {
      await real?.close();
      await home?.cleanup();
      await mock?.close();
      await killAllTracked();
    });

    it('recovers a goal blocked by a dropped stream, once, over stdio', { timeout: 2 * T }, async () => {
      const s = session!;
      assert.match(s.describe, /pid \d+/);
      const { engine, decisions } = real;
      const cwd = fs.mkdtempSync(path.join(real.dir, 'cwd-'));
      const { thread } = (await s.request('thread/start', { cwd })) as { thread: { id: string; path: string | null } };
      mock.setMode('dropStream');
      await s.request('thread/goal/set', {
        threadId: thread.id,
        status: 'active',
        objective: 'survive a dropped stream',
        origin: 'user',
      });
      await real.until(() => decisions.some((d) => d.type === 'backoff' && d.threadId === thread.id), 'the backoff');
      const backoff = decisions.find((d) => d.type === 'backoff');
      assert.ok(backoff && backoff.type === 'backoff' && backoff.error === 'other');
      mock.setMode('goalComplete');
      await real.until(() => engine.watch(thread.id)?.goal?.status === 'complete', 'the goal to complete');
      // Nothing further: past the due time, nothing planned or under way, and a resync done.
      await real.settle();
      assert.equal(engine.watch(thread.id)?.state.kind, 'complete');
      // The daemon's record: one failed turn, recovered by exactly one automatic activation.
      const rolloutPath =
        thread.path ??
        String(((await s.request('thread/read', { threadId: thread.id })) as { thread: { path: string } }).thread.path);
      const record = await daemonRecord(s, thread.id, rolloutPath);
      assert.deepEqual(record.turns.map((t) => t.status).sort(), ['completed', 'failed']);
      assert.equal(record.failed[0], backoff.failedTurnId);
      assertOneRecoveryPerFailedTurn(record);
      assert.equal(record.goalStatus, 'complete');
      // The engine's own decisions (its contract), in addition.
      assert.equal(decisions.filter((d) => d.type === 'recovering').length, 1);

      // Stopping the engine ends the private app-server's whole process group.
      const pid = Number(/pid (\d+)/.exec(s.describe)?.[1]);
      await engine.stop();
      for (const deadline = Date.now() + 5_000; isAlive(pid) && Date.now() < deadline;) await sleep(20);
      assert.equal(isAlive(pid), false, 'the stdio app-server outlived the engine by 5 s');
    });
  });
