// `npm run package`: the .vsix, built by vsce (which runs `vscode:prepublish`, the release build).
// VS Code's extension page and the Marketplace show a README image only from an https URL (the
// page's sanitizer drops relative and data: sources; measured in code-server 4.139.1): the
// README's relative `media/…` images are rewritten to where a registry serves the package's own
// files, Open VSX's file API for this very version. Links go to the repository (vsce's default
// from package.json `repository`: the manual in docs/ is not in the .vsix). Flags: --out FILE.
//
// One package.json describes two packages: the npm package (the runner; its `files` list) and the
// .vsix (the extension; .vscodeignore). vsce refuses a manifest with both a `files` list and a
// .vscodeignore, so it runs in a staging copy of the tree whose manifest has no `files`; the
// repository's dist/ is left alone (the release build happens in the copy).
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const root = process.cwd();
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const at = process.argv.indexOf('--out');
const out = path.resolve(root, at >= 0 ? process.argv[at + 1] : `${manifest.name}.vsix`);

const imagesBase = `https://open-vsx.org/api/${manifest.publisher}/${manifest.name}/${manifest.version}/file`;

/** Never copied into the staging tree: built output, dependencies (linked), VCS, artifacts. */
const NOT_COPIED = new Set(['.git', 'node_modules', 'out', 'dist', 'test-artifacts', 'bench', '.tmp']);

const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-vsix-'));
let status = 1;
try {
  fs.cpSync(root, staging, {
    recursive: true,
    filter: (from) => {
      const rel = path.relative(root, from);
      return rel === '' || (!NOT_COPIED.has(rel.split(path.sep)[0]) && !rel.endsWith('.vsix'));
    },
  });
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(staging, 'node_modules'), 'dir');
  const { files: _npmFiles, ...forVsce } = manifest;
  fs.writeFileSync(path.join(staging, 'package.json'), `${JSON.stringify(forVsce, null, 2)}\n`);
  const vsce = path.join(root, 'node_modules', '@vscode', 'vsce', 'vsce');
  const args = ['package', '--no-dependencies', '--baseImagesUrl', imagesBase, '--out', out];
  const r = spawnSync(process.execPath, [vsce, ...args], { cwd: staging, stdio: 'inherit' });
  status = r.status ?? 1;
} finally {
  fs.rmSync(staging, { recursive: true, force: true });
}
process.exit(status);
