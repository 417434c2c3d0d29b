// `npm run package`: the .vsix, built by vsce (which runs `vscode:prepublish`, the release build).
// VS Code's extension page and the Marketplace show a README image only from an https URL (the
// page's sanitizer drops relative and data: sources; measured in code-server 4.139.1): the
// README's relative `media/…` images are rewritten to where a registry serves the package's own
// files, Open VSX's file API for this very version. Links stay as they are. Flags: --out FILE.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = process.cwd();
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const at = process.argv.indexOf('--out');
const out = at >= 0 ? process.argv[at + 1] : `${manifest.name}.vsix`;

const imagesBase = `https://open-vsx.org/api/${manifest.publisher}/${manifest.name}/${manifest.version}/file`;

const vsce = path.join(import.meta.dirname, '..', 'node_modules', '@vscode', 'vsce', 'vsce');
const args = [
  'package',
  '--no-dependencies',
  '--allow-missing-repository',
  '--baseImagesUrl',
  imagesBase,
  '--out',
  out,
];
const r = spawnSync(process.execPath, [vsce, ...args], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
