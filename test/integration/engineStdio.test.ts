// The engine in-process over the stdio of a private `codex app-server` child (the real binary),
// with the project's mock model. On stdio the engine's connection is the only client, so the
// test plays the user through the same session (`request`), as a user's explicit action would.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Engine } from '../../src/core/engine';
import { systemClock } from '../../src/core/clock';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import type { Decision } from '../../src/model/decision';
import { connectDaemon } from '../../src/protocol/client';
import type { DaemonSession } from '../../src/protocol/daemon';
import { JsonFileStore } from '../../src/store/jsonFileStore';
import { codexBinary, codexEnv, isAlive, killAllTracked, makeCodexHome, sleep, type CodexHome } from '../../src/demo/codexProcesses';
import { startMockModel, type MockModel } from '../../src/demo/mockModel';

const T = 60_000;

describe('engine over stdio against the real app-server', () => {
  let mock: MockModel;
  let home: CodexHome;
  let dir: string;
  let engine: Engine;
  let session: DaemonSession | null = null;
  const decisions: Decision[] = [];

  before(async () => {
    mock = await startMockModel();
    home = await makeCodexHome(mock.url);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-stdio-'));
    engine = new Engine({ ...DEFAULT_OPTIONS, baseDelayMs: 500, maxDelayMs: 2_000, resyncMs: 2_000 }, {
      connect: async (listener) => {
        session = await connectDaemon({ kind: 'stdio', command: codexBinary(), args: ['app-server'], env: codexEnv(home.dir) }, listener, { clientVersion: 'test' });
        return session;
      },
      store: new JsonFileStore(path.join(dir, 'state.json')),
      clock: systemClock,
      random: Math.random,
      onDecision: (d) => decisions.push(d),
    });
    await engine.start();
    await until(() => engine.connectionState().kind === 'connected', 'the stdio connection');
  });

  after(async () => {
    await engine?.stop();
    await home?.cleanup();
    await mock?.close();
    await killAllTracked();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function until(check: () => boolean, what: string, timeoutMs = T): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${decisions.map((d) => JSON.stringify(d)).join('\n')}`);
      await sleep(50);
    }
  }

  it('recovers a goal blocked by a dropped stream, once, over stdio', { timeout: 2 * T }, async () => {
    const s = session!;
    assert.match(s.describe, /pid \d+/);
    const cwd = fs.mkdtempSync(path.join(dir, 'cwd-'));
    const { thread } = (await s.request('thread/start', { cwd })) as { thread: { id: string } };
    mock.setMode('dropStream');
    await s.request('thread/goal/set', { threadId: thread.id, status: 'active', objective: 'survive a dropped stream', origin: 'user' });
    await until(() => decisions.some((d) => d.type === 'backoff' && d.threadId === thread.id), 'the backoff');
    const backoff = decisions.find((d) => d.type === 'backoff');
    assert.ok(backoff && backoff.type === 'backoff' && backoff.error === 'other');
    mock.setMode('goalComplete');
    await until(() => engine.watch(thread.id)?.goal?.status === 'complete', 'the goal to complete');
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
