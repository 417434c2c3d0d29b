// UI tests in a real VS Code (code-server + Chromium): `node --test out/test/vscode/ui/`
// (npm run test:ui). Needs .ci/install-vscode.sh. Screenshots go to test-artifacts/.
//
// To test the extension itself, open the workbench with it loaded (after npm run build):
//   wb = await Workbench.open({ extensionDevelopmentPath: REPO_ROOT, folder });
//   await wb.waitForStatusBarText('codex-goal-recovery.status', (t) => t !== '');
//   await wb.openViewContainer('Codex Goal Recovery');
//   await wb.treeRows('Watched goals');
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeTempDir, removeTempDir } from '../cleanup';
import { Workbench } from './workbench';

describe('the UI helpers, on the workbench itself', { timeout: 240_000 }, () => {
  let temp: string;
  let folder: string;
  let wb: Workbench;

  before(
    async () => {
      temp = makeTempDir('cgr-ui-');
      folder = path.join(temp, 'ui-workspace');
      fs.mkdirSync(folder);
      fs.writeFileSync(path.join(folder, 'hello.txt'), 'hello\n');
      fs.writeFileSync(path.join(folder, 'notes.md'), '# notes\n');
      wb = await Workbench.open({ folder });
    },
    { timeout: 120_000 },
  );

  after(async () => {
    await wb?.close();
    if (temp) removeTempDir(temp);
  });

  it("opens the Explorer and reads the folder view's tree rows", () =>
    wb.guard('explorer-rows', async () => {
      await wb.openViewContainer('Explorer');
      const rows = await wb.waitForTreeRows('ui-workspace', (r) => r.includes('hello.txt') && r.includes('notes.md'));
      assert.deepEqual(rows, ['hello.txt', 'notes.md']);
    }));

  it('opens a file from the tree and reads a status bar item', () =>
    wb.guard('status-bar-item', async () => {
      await wb.treeRow('ui-workspace', 'hello.txt').click();
      const text = await wb.waitForStatusBarText('status.editor.selection', (t) => /^Ln \d+, Col \d+/.test(t));
      assert.match(text, /^Ln 1, Col 1/);
    }));

  it('runs "View: Toggle Status Bar Visibility" twice through F1', () =>
    wb.guard('toggle-status-bar', async () => {
      assert.equal(await wb.isStatusBarVisible(), true);
      await wb.runCommand('View: Toggle Status Bar Visibility');
      await wb.page.locator('.monaco-workbench .part.statusbar').waitFor({ state: 'hidden' });
      assert.equal(await wb.isStatusBarVisible(), false);
      await wb.runCommand('View: Toggle Status Bar Visibility');
      await wb.page.locator('.monaco-workbench .part.statusbar').waitFor({ state: 'visible' });
      assert.equal(await wb.isStatusBarVisible(), true);
    }));

  it('fails clearly on a command that does not exist', () =>
    wb.guard('unknown-command', async () => {
      await assert.rejects(
        wb.runCommand('No Such Command Anywhere', 3_000),
        /no command titled "No Such Command Anywhere"/,
      );
    }));

  it('takes a PNG screenshot into test-artifacts/', () =>
    wb.guard('screenshot', async () => {
      const file = await wb.screenshot('ui-workbench');
      try {
        assert.match(file, /test-artifacts/);
        assert.deepEqual([...fs.readFileSync(file).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
      } finally {
        fs.rmSync(file, { force: true }); // a passing run leaves no artifacts
      }
    }));
});
