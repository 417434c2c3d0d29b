// Bundles dist/: the extension (vscode external; minified with --release), the headless
// runner (with a shebang) and the demo.
import { build } from 'esbuild';

const release = process.argv.includes('--release');
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

await Promise.all([
  build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    external: ['vscode'],
    minify: release,
  }),
  build({
    ...common,
    entryPoints: ['src/runner/cli.ts'],
    outfile: 'dist/cli.js',
    banner: { js: '#!/usr/bin/env node' },
  }),
  build({ ...common, entryPoints: ['src/demo/demo.ts'], outfile: 'dist/demo.js' }),
]);
