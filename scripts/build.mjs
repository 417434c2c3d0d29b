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
  // Text as it is (·, …), not as \xB7 and \u2026 escapes: the files are UTF-8, as Node reads them.
  charset: 'utf8',
};

const [extension] = await Promise.all([
  build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    external: ['vscode'],
    // Its WebSocket is the product's own client (src/protocol/webSocketClient.ts): no `ws` inside.
    minify: release,
    metafile: metafile !== undefined,
  }),
  // The OpenTelemetry export, for the extension: a bundle of its own that it loads only when a
  // setting asks for it (src/host/telemetryHost.ts), so that dist/extension.js does not grow.
  build({ ...common, entryPoints: ['src/telemetry/index.ts'], outfile: 'dist/telemetry.js', minify: release }),
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
