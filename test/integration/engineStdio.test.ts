// The engine in-process over the stdio of a private `codex app-server` child (the real binary),
// with the project's mock model. On stdio the engine's connection is the only client, so the
// test plays the user through the same session (`request`), as a user's explicit action would.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { connectDaemon } from '../../src/protocol/client';
import type { DaemonSession } from '../../src/protocol/daemon';
import { codexBinary, codexEnv, isAlive, killAllTracked, makeCodexHome, sleep, type CodexHome } from '../../src/demo/codexProcesses';
import { startMockModel, type MockModel } from '../../src/demo/mockModel';
import { RealEngine } from '../support/realEngine';

const T = 60_000;

describe('engine over stdio against the real app-server', () => {
  let mock: MockModel;
  let home: CodexHome;
  let real: RealEngine;
  let session: DaemonSession | null = null;

  before(async () => {
    mock = await startMockModel();
    home = await makeCodexHome(mock.url);
    real = await RealEngine.start(async (listener) => {
      session = await connectDaemon({ kind: 'stdio', command: codexBinary(), args: ['app-server'], env: codexEnv(home.dir) }, listener, { clientVersion: 'test' });
      return session;
    }, { baseDelayMs: 500, maxDelayMs: 2_000, resyncMs: 2_000 });
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
    const { thread } = (await s.request('thread/start', { cwd })) as { thread: { id: string } };
    mock.setMode('dropStream');
    await s.request('thread/goal/set', { threadId: thread.id, status: 'active', objective: 'survive a dropped stream', origin: 'user' });
    await real.until(() => decisions.some((d) => d.type === 'backoff' && d.threadId === thread.id), 'the backoff');
    const backoff = decisions.find((d) => d.type === 'backoff');
    assert.ok(backoff && backoff.type === 'backoff' && backoff.error === 'other');
    mock.setMode('goalComplete');
    await real.until(() => engine.watch(thread.id)?.goal?.status === 'complete', 'the goal to complete');
    await sleep(2_500); // a resync and more: nothing further happens
    assert.equal(decisions.filter((d) => d.type === 'recovering').length, 1);
    assert.equal(engine.watch(thread.id)?.state.kind, 'complete');
    const turns = (await s.request('thread/turns/list', { threadId: thread.id })) as { data: { status: string }[] };
    assert.deepEqual(turns.data.map((t) => t.status).sort(), ['completed', 'failed']);

    // Stopping the engine ends the private app-server's whole process group.
    const pid = Number(/pid (\d+)/.exec(s.describe)?.[1]);
    await engine.stop();
    await sleep(200);
    assert.equal(isAlive(pid), false, 'the stdio app-server outlived the engine');
  });
});
