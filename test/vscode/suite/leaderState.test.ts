/// <reference types="mocha" />
// What a window that runs the engine tells the other windows is the state as it is after each
// change, not the one before it. Real parts of this extension host: the engine (EngineHost) and
// its store on a globalState, the election in the real election directory and the followers'
// sockets; no daemon to connect to (a socket path where none listens: the engine keeps trying in
// the background), which a change of settings does not need.
//
// Found in the UI suite (two windows, test/vscode/ui/walkthrough.ui.test.ts): the window that
// followed showed no row for a minute while the leader's showed the new goal. The window kept a
// snapshot of its engine that it made again only on its views' throttle, and the broadcast's own
// throttle, poked first, sent that snapshot before it was made again: each burst of changes
// reached the followers one change late, until the next one (a resync, a minute later).
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { readSettings, type Settings } from '../../../src/config/settings';
import { EngineHost } from '../../../src/host/engineHost';
import { WindowRole } from '../../../src/host/windowRole';
import { DaemonLab } from '../../support/daemonLab';
import { until } from '../../support/wait';
import { Memento } from '../../support/memento';
import { recordingLog } from './recordingLog';

function withMaxAttempts(settings: Settings, maxAttempts: number): Settings {
  return { ...settings, options: { ...settings.options, maxAttempts } };
}

suite("the state a window's engine tells", () => {
  let dir: string;
  let settings: Settings;
  setup(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-leader-state-'));
    settings = { ...readSettings(), socketPath: path.join(dir, 'none.sock') };
  });
  teardown(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('told of a change, whoever reads the engine host at once sees the change', async () => {
    const { log } = recordingLog();
    const seen: number[] = [];
    const io = { log, notify: () => undefined };
    const host: EngineHost = new EngineHost(settings, new Memento(), io, null, undefined, {
      // As the elected engine's broadcast reads it (src/leader/electedEngine.ts): what the engine shows now.
      changed: () => void seen.push(host.snapshot().maxAttempts),
      decided: () => undefined,
      fence: () => null,
      term: () => null,
    });
    try {
      await host.start();
      const next = settings.options.maxAttempts + 3;
      const before = seen.length;
      host.applySettings(withMaxAttempts(settings, next));
      await until('the engine host to tell of the change', () => seen.length > before);
      assert.equal(seen[before], next, `told of the change, the engine host showed ${seen.slice(before).join(', ')}`);
    } finally {
      await host.stop();
    }
  });

  test("a window that follows shows the leader's state as it is once the leader is quiet", async function () {
    this.timeout(120_000);
    const lab = await DaemonLab.start();
    // Goals not armed (as in a first run's observing, or `autoArm` off): a new goal is one change,
    // its row "not adopted", and nothing follows it.
    const real = {
      ...settings,
      codexHome: lab.home.dir,
      socketPath: lab.socket,
      options: { ...settings.options, autoArm: false },
    };
    const windows = [0, 1].map(() => {
      const context = { globalState: new Memento() } as unknown as vscode.ExtensionContext;
      return new WindowRole(context, real, { log: recordingLog().log, notify: () => undefined });
    });
    try {
      for (const w of windows) w.start();
      const roles = () => windows.map((w) => w.service().role).sort();
      await until('one window to lead, the other to follow', () => roles().join() === 'follower,leader', 20_000);
      const leader = windows.find((w) => w.service().role === 'leader')!;
      const follower = windows.find((w) => w.service().role === 'follower')!;
      // What a row shows, per thread (`at` and the timings aside).
      const rows = (w: WindowRole) =>
        JSON.stringify(
          w
            .service()
            .snapshot()
            .watches.map((x) => [x.threadId, x.state, x.goal?.status ?? null]),
        );
      lab.mock.setMode('slow', { delayMs: 600_000 });
      const t = await lab.goal('Keep the docs in step');
      await until('the leader to show the goal', () => rows(leader).includes(t.threadId), 30_000);
      // The leader's engine is quiet now (the turn runs for minutes, the resync is a minute away).
      await until(
        () => `the follower to show what the leader shows: ${rows(leader)}; it shows ${rows(follower)}`,
        () => rows(follower) === rows(leader),
        3_000,
      );
      // One change more, alone: a setting.
      const maxAttempts = settings.options.maxAttempts + 1;
      await leader.applySettings({ ...real, options: { ...real.options, maxAttempts } });
      await until('the leader to show the new setting', () => leader.service().snapshot().maxAttempts === maxAttempts);
      await until(
        () => `the follower to show maxAttempts ${maxAttempts} (shows ${follower.service().snapshot().maxAttempts})`,
        () => follower.service().snapshot().maxAttempts === maxAttempts,
        3_000,
      );
    } finally {
      for (const w of windows) await w.dispose();
      await lab.close();
    }
  });
});
