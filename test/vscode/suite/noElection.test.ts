/// <reference types="mocha" />
// A window where the leader election cannot run. On Windows `new LeaderElection` throws (no Unix
// sockets in a private directory): the window must run the engine alone and say so once, and
// its start must never throw (it runs inside `activate()`). The one thing replaced here is the
// election's construction, by one that throws as the Windows constructor does; the engine,
// its store and the settings are the real ones of this extension host.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { readSettings } from '../../../src/config/settings';
import { WindowRole } from '../../../src/host/windowRole';
import { Memento } from '../../support/memento';
import { recordingLog } from './recordingLog';

/** The window runs the engine within 5 s (the term starts asynchronously, after the last one stopped). */
async function leads(role: WindowRole, why: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (role.service().role !== 'leader') {
    if (Date.now() > deadline) assert.fail(why);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const WINDOWS_ERROR = 'leader election: Unix sockets in a private directory are not available on Windows';

suite('a window where the leader election cannot run (as on Windows)', () => {
  test('starts without throwing, runs the engine alone, and says so once, also after the daemon setting moves', async () => {
    const { log, lines } = recordingLog();
    const context = { globalState: new Memento() } as unknown as vscode.ExtensionContext;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-no-election-'));
    const settings = { ...readSettings(), socketPath: path.join(dir, 'none.sock') };
    let made = 0;
    const role = new WindowRole(
      context,
      settings,
      { log, notify: () => undefined },
      {
        makeElection: () => {
          made += 1;
          throw new Error(WINDOWS_ERROR);
        },
      },
    );
    try {
      assert.doesNotThrow(() => role.start());
      await leads(role, 'the window does not run the engine');
      await role.applySettings({ ...settings, socketPath: path.join(dir, 'other.sock') });
      assert.equal(made, 2, 'the moved setting did not try a new election');
      await leads(role, 'the window does not run the engine after the setting moved');
      const said = lines.filter((l) => l.startsWith('warn ') && l.includes('leader election unavailable'));
      assert.equal(said.length, 1, `said ${said.length} times: ${JSON.stringify(lines)}`);
      assert.match(said[0], /Windows\); this window runs the engine alone$/);
    } finally {
      await role.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
