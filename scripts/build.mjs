// Bundles dist/: the extension (vscode external; minified with --release), the headless
// runner (with a shebang) and the demo. `--metafile FILE`: also writes esbuild's metafile of the
// extension bundle there (what each input file contributes; the activation bench reads it).
// `--out-dir DIR`: into DIR instead of dist/ (the package test builds a release there).
import { writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const release = process.argv.includes('--release');
const metaAt = process.argv.indexOf('--metafile');
const metafile = metaAt >= 0 ? process.argv[metaAt + 1] : undefined;
if (metaAt >= 0 && !metafile) throw new Error('--metafile needs a file name');
const outAt = process.argv.indexOf('--out-dir');
const outDir = outAt >= 0 ? process.argv[outAt + 1] : 'dist';
if (!outDir) throw new Error('--out-dir needs a directory');
// zod looks at `navigator.userAgent` (for Cloudflare Workers) when it loads; in Node there is no
// navigator, and VS Code's extension host logs a deprecation warning when an extension touches the
// global. The bundle sees `undefined` instead.
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: !release,
  logLevel: 'warning',
  define: { navigator: 'undefined' },
};

const [extension] = await Promise.all([
  build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: `${outDir}/extension.js`,
    external: ['vscode'],
    // The extension is a WebSocket client only: ws's own module (lib/websocket.js, the class that
    // `require('ws')` returns) without the index that also loads its server and stream helpers.
    alias: { ws: './node_modules/ws/lib/websocket.js' },
    minify: release,
    metafile: metafile !== undefined,
  }),
  build({
    ...common,
    entryPoints: ['src/runner/cli.ts'],
    outfile: `${outDir}/cli.js`,
    banner: { js: '#!/usr/bin/env node' },
  }),
  build({ ...common, entryPoints: ['src/demo/demo.ts'], outfile: `${outDir}/demo.js` }),
]);
if (metafile) writeFileSync(metafile, JSON.stringify(extension.metafile));
