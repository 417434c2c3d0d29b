/// <reference types="mocha" />
// A command that comes while the window is still starting (activate() has returned, the election
// has not decided, the engine has not loaded its state) is carried out once the engine runs, not
// refused and not lost. Real parts of this extension host: the election in the real election
// directory, the engine (EngineHost) and its store on a globalState; no daemon to connect to (a
// socket path where none listens: the engine keeps trying in the background, as in a window
// opened before the daemon), which a user command like Pause does not need.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { readSettings } from '../../../src/config/settings';
import { WindowRole } from '../../../src/host/windowRole';
import { STATE_KEY } from '../../../src/store/globalStateStore';
import { Memento } from '../../support/memento';
import { recordingLog } from './recordingLog';

suite('a command right after activation, before the engine has started', () => {
  let dir: string;
  setup(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-early-command-'));
  });
  teardown(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('Pause auto-recovery, run as the window starts, waits for the engine and is carried out', async () => {
    const { log, lines } = recordingLog();
    const globalState = new Memento();
    const context = { globalState } as unknown as vscode.ExtensionContext;
    const settings = { ...readSettings(), socketPath: path.join(dir, 'none.sock') };
    const role = new WindowRole(context, settings, { log, notify: () => undefined });
    try {
      role.start();
      assert.notEqual(role.service().role, 'leader', 'the engine was already running: nothing early to test');
      // As the command handler does it (src/commands/register.ts): service().run, at once.
      await role.service().run('pauseAll');
      assert.equal(role.service().role, 'leader', 'the command resolved before this window ran the engine');
      assert.notEqual(role.service().snapshot().pausedAt, null, 'the pause was not applied');
      const stored = globalState.get<unknown>(STATE_KEY);
      const doc = (typeof stored === 'string' ? JSON.parse(stored) : stored) as { pausedAt?: unknown } | undefined;
      assert.equal(typeof doc?.pausedAt, 'number', `the stored state does not say paused: ${JSON.stringify(stored)}`);
      assert.deepEqual(
        lines.filter((l) => l.startsWith('error ')),
        [],
        'the window logged an error',
      );
    } finally {
      await role.dispose();
    }
  });

  test('a command still waiting when the window closes is refused, with a reason, not left hanging', async () => {
    const { log } = recordingLog();
    const context = { globalState: new Memento() } as unknown as vscode.ExtensionContext;
    const settings = { ...readSettings(), socketPath: path.join(dir, 'none.sock') };
    // Not started: the election never decides, so the command waits until the role is disposed.
    const role = new WindowRole(context, settings, { log, notify: () => undefined });
    const waiting = role.service().run('pauseAll');
    await role.dispose();
    await assert.rejects(waiting, /the window stopped before the engine started/);
  });
});
