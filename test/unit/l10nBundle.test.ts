// The l10n bundle is the sources' (scripts/l10n.mjs): every message passed to vscode.l10n.t, and
// nothing else, so translators start from what the extension says. A message added or changed
// without `npm run l10n` turns this red.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');

function check(root: string) {
  return spawnSync(process.execPath, [path.join(root, 'scripts', 'l10n.mjs'), '--check'], { encoding: 'utf8' });
}

describe('the l10n bundle', () => {
  it('holds exactly the messages of the sources', () => {
    const r = check(ROOT);
    assert.equal(r.status, 0, r.stderr);
  });

  it('is named by the manifest', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { l10n?: string };
    assert.equal(manifest.l10n, './l10n');
    assert.ok(fs.existsSync(path.join(ROOT, 'l10n', 'bundle.l10n.json')));
  });

  it('a message added to the sources and not to the bundle is found', () => {
    // A copy of the script, the bundle and the sources, with one message more.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-l10n-'));
    try {
      fs.cpSync(path.join(ROOT, 'scripts', 'l10n.mjs'), path.join(dir, 'scripts', 'l10n.mjs'));
      fs.cpSync(path.join(ROOT, 'l10n'), path.join(dir, 'l10n'), { recursive: true });
      fs.cpSync(path.join(ROOT, 'src'), path.join(dir, 'src'), { recursive: true });
      fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
      fs.writeFileSync(
        path.join(dir, 'src', 'added.ts'),
        "import * as vscode from 'vscode';\nexport const m = vscode.l10n.t('A message nobody bundled');\n",
      );
      const r = check(dir);
      assert.equal(r.status, 1);
      assert.match(r.stderr, /1 missing, 0 no longer used\n {2}\+ A message nobody bundled/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
