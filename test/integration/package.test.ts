// The .vsix holds only what runs: the bundle, the manifest, the icon and the docs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
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
});
