// The .vsix holds only what runs: the bundle, the manifest, the icon and the docs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('packaging', () => {
  it('vsce packages exactly the files that run', () => {
    const r = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'vsce'), ['ls', '--no-dependencies'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const files = r.stdout
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .sort();
    assert.deepEqual(files, [
      'CHANGELOG.md',
      'LICENSE',
      'README.md',
      'dist/extension.js',
      'media/icon.svg',
      'package.json',
    ]);
  });

  it('the extension bundle exists, has vscode external, and stays small', () => {
    const bundle = fs.readFileSync(path.join(ROOT, 'dist', 'extension.js'), 'utf8');
    assert.match(bundle, /require\("vscode"\)/);
    assert.ok(!bundle.includes('node_modules/@types/vscode'), 'vscode types bundled');
    assert.ok(bundle.length < 2.5 * 1024 * 1024, `dist/extension.js is ${bundle.length} bytes`);
  });

  it('the release bundle (what the .vsix ships: minified) stays small', () => {
    // Built as `npm run package` builds it, into a temp dir (dist/ is the development build).
    // The target (the activation bench reports it too): zod's full build alone would add
    // 400 KiB, vscode-jsonrpc 60, ws's server 7.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-release-'));
    try {
      const r = spawnSync(process.execPath, ['scripts/build.mjs', '--release', '--out-dir', dir], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 120_000,
      });
      assert.equal(r.status, 0, r.stderr);
      const size = fs.statSync(path.join(dir, 'extension.js')).size;
      assert.ok(size < 250 * 1024, `the release dist/extension.js is ${(size / 1024).toFixed(1)} KiB`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
