// Bundles dist/: the extension (vscode external; minified with --release), the headless
// runner (an executable file, its shebang RUNNER_SHEBANG) and the demo. `--metafile FILE`: also
// writes esbuild's metafile of the extension bundle there (what each input file contributes; the
// activation bench reads it).
import { chmodSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const release = process.argv.includes('--release');
const metaAt = process.argv.indexOf('--metafile');
const metafile = metaAt >= 0 ? process.argv[metaAt + 1] : undefined;
if (metaAt >= 0 && !metafile) throw new Error('--metafile needs a file name');
// zod looks at `navigator.userAgent` (for Cloudflare Workers) when it loads; in Node there is no
// navigator, and VS Code's extension host logs a deprecation warning when an extension touches the
// global. The bundle sees `undefined` instead.
// The extension's WebSocket never compresses (src/protocol/webSocketTransport.ts passes
// perMessageDeflate: false, and ws aborts a handshake whose server enables an extension that was
// not asked for): ws's permessage-deflate module is bundled as the one thing ws reads of it
// there, its extension name; constructing it (compression asked for) fails loudly. ws's parser
// and writer of the Sec-WebSocket-Extensions header (lib/extension.js) are used only once
// compression is asked for (the writer, after constructing it) or a server answered with an
// extension that was asked for (the parser): both fail loudly too.
const WS_STUBS = {
  'permessage-deflate': `module.exports = class PerMessageDeflate {
  static get extensionName() { return 'permessage-deflate'; }
  constructor() { throw new Error('WebSocket compression (permessage-deflate) is not in this bundle'); }
};`,
  extension: `const none = () => { throw new Error('WebSocket extensions are not in this bundle'); };
module.exports = { format: none, parse: none };`,
};
const wsWithoutDeflate = {
  name: 'ws-without-permessage-deflate',
  setup(b) {
    b.onResolve({ filter: /^\.\/(permessage-deflate|extension)$/ }, (args) =>
      /[\\/]node_modules[\\/]ws[\\/]lib$/.test(args.resolveDir)
        ? { path: args.path.slice(2), namespace: 'ws-without-deflate' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'ws-without-deflate' }, (args) => ({
      loader: 'js',
      contents: WS_STUBS[args.path],
    }));
  },
};
// The runner's bin (package.json `bin`, the README's `install -m 0755 dist/cli.js`) starts Node
// with --single-threaded (no V8 background threads, whose freed compiler memory stays in glibc's
// per-thread malloc arenas) and --optimize-for-size (V8 collects its old generation at a smaller
// growth, instead of letting garbage pile up for many minutes): the runner's memory stays flat
// over a long run (docs/performance.md, "Soak"). `env -S` splits the line into words (GNU
// coreutils ≥ 8.30, macOS, FreeBSD). docs/service/* start Node with the same flags.
const RUNNER_SHEBANG = '#!/usr/bin/env -S node --single-threaded --optimize-for-size';
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
    outfile: 'dist/extension.js',
    external: ['vscode'],
    // The extension is a WebSocket client only: ws's own module (lib/websocket.js, the class that
    // `require('ws')` returns) without the index that also loads its server and stream helpers.
    alias: { ws: './node_modules/ws/lib/websocket.js' },
    plugins: [wsWithoutDeflate],
    minify: release,
    metafile: metafile !== undefined,
  }),
  build({
    ...common,
    entryPoints: ['src/runner/cli.ts'],
    outfile: 'dist/cli.js',
    banner: { js: RUNNER_SHEBANG },
  }),
  build({ ...common, entryPoints: ['src/demo/demo.ts'], outfile: 'dist/demo.js' }),
]);
chmodSync('dist/cli.js', 0o755);
if (metafile) writeFileSync(metafile, JSON.stringify(extension.metafile));
