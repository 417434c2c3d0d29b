// Activation: what the extension costs a VS Code window before it does anything.
//
// 1. Sizes. The release bundle (`node scripts/build.mjs --release`: dist/extension.js) and the
//    .vsix that `npm run package` makes, beside what shipping without a bundler would be: the
//    compiled out/src files the entry point actually requires, transitively, plus the files of
//    the runtime packages (ws, zod) those require (found by resolving every require() with
//    Node's own resolver, not by listing directories), packed by the same vsce into a .vsix.
// 2. activate() in the real extension host: code-server (VS Code in a browser) with headless
//    Chromium, the extension installed from that .vsix together with a generated "hello"
//    extension (one command; it marks its activate() the same way), the window loaded again
//    for every run, so every run is a new extension-host process and a real activation. (Both
//    are installed rather than loaded in development mode: the workbench keeps its URL payload
//    in a Map, so only one extensionDevelopmentPath survives.) The figure is the
//    `codexGoalRecovery.activate` performance measure, which the extension writes to its log
//    output channel ("activated in X ms"); the bench reads that line from the log file VS Code
//    keeps for the channel, so nothing is added to the extension for the bench.
import { zipEntries } from '../support/packaging';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../vscode/browser';
import { guardProcess } from '../vscode/cleanup';
import { startCodeServer, type CodeServer } from '../vscode/launch';
import { assertInstalled, CODE_SERVER_VERSION, codeServerEntry, MissingToolError, node24Path } from '../vscode/paths';
import { figure, percentile, type Bench, type BenchContext, type BenchSection } from './types';
import { sleep } from '../support/wait';

const run = promisify(execFile);
const REPO = path.resolve(__dirname, '..', '..', '..');
/**
 * The packages the unbundled closure may use (package.json "dependencies"; vscode-jsonrpc is
 * there for its types, which the transports implement, and the tests).
 */
const RUNTIME_PACKAGES = ['vscode-jsonrpc', 'ws', 'zod'];

const PRODUCT_CHANNEL = 'Codex Goal Recovery';
const HELLO_CHANNEL = 'Hello Activation Baseline';

// ---------------------------------------------------------------------------------------------
// Sizes

const REQUIRE_RE = /\brequire\(\s*(['"])([^'"\n]+)\1\s*\)/g;

interface Closure {
  /** Absolute paths: every file Node loads for the entry, plus the package.json of every package used. */
  files: string[];
  /** require() calls that did not resolve (optional dependencies such as ws's bufferutil). */
  unresolved: string[];
}

/**
 * The files `require(entry)` loads, found by reading every file's require() calls and resolving
 * them with Node's resolver from that file (package "exports" included). `vscode` and Node's
 * built-ins are provided by the host. A literal require() that does not resolve is reported;
 * in our own code it is an error, in a package it is an optional dependency (ws's bufferutil).
 */
export function requireClosure(entry: string): Closure {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const unresolved: string[] = [];
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const pkg = packageRoot(file);
    if (pkg) packages.add(path.join(pkg, 'package.json'));
    if (!/\.(c?js)$/.test(file)) continue; // JSON: nothing to follow
    const text = fs.readFileSync(file, 'utf8');
    const req = createRequire(file);
    for (const m of text.matchAll(REQUIRE_RE)) {
      const spec = m[2];
      if (spec === 'vscode' || isBuiltin(spec)) continue;
      try {
        queue.push(req.resolve(spec));
      } catch {
        if (!pkg) throw new Error(`${path.relative(REPO, file)} requires "${spec}", which does not resolve`);
        unresolved.push(`${spec} (from ${path.relative(REPO, file)})`);
      }
    }
  }
  return { files: [...new Set([...seen, ...packages])].sort(), unresolved: [...new Set(unresolved)].sort() };
}

/** node_modules/<name> (or node_modules/@scope/name) that holds `file`, or null for our own files. */
function packageRoot(file: string): string | null {
  const m = /^(.*[\\/]node_modules[\\/](?:@[^\\/]+[\\/])?[^\\/]+)[\\/]/.exec(file);
  return m ? m[1] : null;
}

function bytes(files: string[]): number {
  return files.reduce((sum, f) => sum + fs.statSync(f).size, 0);
}

/** The `package` script of package.json, which the product's .vsix is made with. */
const PACKAGE_SCRIPT = 'node scripts/package.mjs';

/**
 * `vsce package` for the unbundled baseline: with vsce's npm dependency detection (node_modules
 * goes in), and the README's relative images left as they are (package.mjs points them at the
 * registry's URL; the README's size is all that differs).
 */
function unbundledVsceArgs(out: string): string[] {
  return ['package', '--allow-missing-repository', '--no-rewrite-relative-links', '--out', out];
}

async function vsce(cwd: string, args: string[]): Promise<void> {
  const bin = path.join(REPO, 'node_modules', '@vscode', 'vsce', 'vsce');
  await run(process.execPath, [bin, ...args], { cwd, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 });
}

/**
 * The extension as it would ship without bundling, in a folder that holds nothing else: the
 * same manifest but for main (→ out/src/extension.js), the same README, CHANGELOG, LICENSE and
 * media as the real package, and the required files at their paths. vsce then runs with its
 * npm dependency detection, so node_modules goes in.
 */
function stageUnbundled(dir: string, closure: Closure, used: string[]): void {
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as Record<string, unknown>;
  manifest.main = './out/src/extension.js';
  // Nothing to build: the compiled files are staged as they are.
  const scripts = { ...(manifest.scripts as Record<string, string>) };
  delete scripts['vscode:prepublish'];
  manifest.scripts = scripts;
  // The npm package's file list (the runner) is not the .vsix's.
  delete manifest.files;
  // Only the packages the code requires at run time, as dependencies (the product bundles them, so
  // package.json has them as devDependencies; vscode-jsonrpc is one for its types only).
  const deps = { ...(manifest.devDependencies as Record<string, string>) };
  delete manifest.devDependencies;
  manifest.dependencies = Object.fromEntries(Object.entries(deps).filter(([name]) => used.includes(name)));
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  for (const f of ['README.md', 'CHANGELOG.md', 'LICENSE']) fs.copyFileSync(path.join(REPO, f), path.join(dir, f));
  fs.cpSync(path.join(REPO, 'media'), path.join(dir, 'media'), { recursive: true });
  for (const file of closure.files) {
    const rel = path.relative(REPO, file);
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.copyFileSync(file, path.join(dir, rel));
  }
}

// ---------------------------------------------------------------------------------------------
// activate() in code-server

/** A trivial extension: registers one command, and measures its activate() as ours does. */
function writeHello(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    `${JSON.stringify(
      {
        name: 'hello-activation-baseline',
        displayName: 'Hello (activation baseline)',
        publisher: 'codex-goal-recovery-bench',
        version: '0.0.1',
        engines: { vscode: '^1.100.0' },
        main: './extension.js',
        activationEvents: ['onStartupFinished'],
        contributes: { commands: [{ command: 'helloActivationBaseline.hello', title: 'Hello (activation baseline)' }] },
      },
      null,
      2,
    )}\n`,
  );
  fs.writeFileSync(
    path.join(dir, 'extension.js'),
    [
      '// Generated by test/bench/activation.ts: the baseline of the activation benchmark.',
      "const vscode = require('vscode');",
      'exports.activate = function activate(context) {',
      "  performance.mark('helloActivationBaseline.activate.start');",
      "  context.subscriptions.push(vscode.commands.registerCommand('helloActivationBaseline.hello', () => vscode.window.showInformationMessage('Hello')));",
      "  performance.mark('helloActivationBaseline.activate.end');",
      "  const measure = performance.measure('helloActivationBaseline.activate', 'helloActivationBaseline.activate.start', 'helloActivationBaseline.activate.end');",
      '  // Reported the way the extension reports its own (outside the measured part here: it is only the report).',
      `  const log = vscode.window.createOutputChannel(${JSON.stringify(HELLO_CHANNEL)}, { log: true });`,
      '  context.subscriptions.push(log);',
      '  log.info(`activated in ${measure.duration.toFixed(3)} ms`);',
      '};',
      'exports.deactivate = function deactivate() {};',
      '',
    ].join('\n'),
  );
}

interface HostRun {
  /** exthostN: the extension-host process's log folder (one per window load). */
  host: string;
  productMs: number;
  helloMs: number;
}

/** Every "activated in X ms" line of a channel, by extension-host log folder. */
function readActivations(logsDir: string, channel: string): Map<string, number> {
  const out = new Map<string, number>();
  if (!fs.existsSync(logsDir)) return out;
  for (const entry of fs.readdirSync(logsDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name !== `${channel}.log`) continue;
    const file = path.join(entry.parentPath, entry.name);
    const host = path
      .relative(logsDir, file)
      .split(path.sep)
      .find((part) => /^exthost\d+$/.test(part));
    if (!host) continue;
    const m = /activated in (\d+(?:\.\d+)?) ms/.exec(fs.readFileSync(file, 'utf8'));
    if (m) out.set(path.join(path.relative(logsDir, file).split(path.sep)[0], host), Number(m[1]));
  }
  return out;
}

/**
 * Installs the .vsix files into a fresh extensions folder with code-server's own CLI (as
 * `code-server --install-extension` does for a user), with every file it writes kept in `dir`.
 */
async function installExtensions(
  dir: string,
  userDataDir: string,
  extensionsDir: string,
  vsixes: string[],
): Promise<void> {
  for (const d of ['xdg-data', 'xdg-cache', 'tmp']) fs.mkdirSync(path.join(dir, d), { recursive: true });
  const config = path.join(dir, 'code-server.yaml');
  fs.writeFileSync(config, 'auth: none\ncert: false\n');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_DATA_HOME: path.join(dir, 'xdg-data'),
    XDG_CACHE_HOME: path.join(dir, 'xdg-cache'),
    TMPDIR: path.join(dir, 'tmp'),
  };
  for (const key of Object.keys(env)) if (key.startsWith('VSCODE_')) delete env[key];
  const args = [
    codeServerEntry(),
    '--config',
    config,
    '--user-data-dir',
    userDataDir,
    '--extensions-dir',
    extensionsDir,
    ...vsixes.flatMap((v) => ['--install-extension', v]),
  ];
  await run(node24Path(), args, { cwd: dir, env, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 });
}

async function measureActivations(
  ctx: BenchContext,
  runs: number,
  productVsix: string,
): Promise<{ runs: HostRun[]; loadMs: number[] }> {
  assertInstalled({ codeServer: true, chromium: true, playwright: true });
  guardProcess();
  const helloDir = path.join(ctx.tmpDir, 'hello-extension');
  writeHello(helloDir);
  const helloVsix = path.join(ctx.tmpDir, 'hello-activation-baseline.vsix');
  await vsce(helloDir, ['package', '--allow-missing-repository', '--skip-license', '--out', helloVsix]);
  const vscodeDir = path.join(ctx.tmpDir, 'vscode');
  const userDataDir = path.join(vscodeDir, 'user-data');
  const extensionsDir = path.join(vscodeDir, 'extensions');
  const t0 = Date.now();
  await installExtensions(vscodeDir, userDataDir, extensionsDir, [productVsix, helloVsix]);
  ctx.log(
    `code-server --install-extension: the product's .vsix and the hello extension's (${((Date.now() - t0) / 1000).toFixed(1)} s)`,
  );
  const codexHome = path.join(ctx.tmpDir, 'codex-home'); // empty: no daemon to connect to
  fs.mkdirSync(codexHome);
  let server: CodeServer | undefined;
  let browser: Browser | undefined;
  try {
    server = await startCodeServer({
      userDataDir,
      extensionsDir,
      // A reloaded page's extension host ends a second later, not after code-server's default 3 h.
      args: ['--reconnection-grace-time', '1'],
      settings: { 'codexGoalRecovery.codexHome': codexHome, 'codexGoalRecovery.notifications': 'none' },
    });
    const logsDir = path.join(userDataDir, 'logs');
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    const results: HostRun[] = [];
    const loadMs: number[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < runs; i++) {
      const t0 = Date.now();
      // A new page load: a new extension-host process, in which both extensions activate on onStartupFinished.
      await page.goto(server.url, { waitUntil: 'domcontentloaded', timeout: 120_000 });
      const deadline = Date.now() + 150_000;
      for (;;) {
        const product = readActivations(logsDir, PRODUCT_CHANNEL);
        const hello = readActivations(logsDir, HELLO_CHANNEL);
        const fresh = [...product.keys()].filter((host) => !seen.has(host) && hello.has(host));
        if (fresh.length > 0) {
          const host = fresh[0];
          seen.add(host);
          results.push({ host, productMs: product.get(host)!, helloMs: hello.get(host)! });
          loadMs.push(Date.now() - t0);
          ctx.log(
            `run ${i + 1}/${runs} (${host}): activate() ${product.get(host)} ms, hello ${hello.get(host)} ms; window load to both log lines ${((Date.now() - t0) / 1000).toFixed(1)} s`,
          );
          break;
        }
        if (Date.now() > deadline) {
          throw new Error(
            `run ${i + 1}: no new extension host logged both activations within 150 s\n--- code-server ---\n${server.logTail(20)}`,
          );
        }
        await sleep(250);
      }
    }
    return { runs: results, loadMs };
  } finally {
    await browser?.close().catch(() => undefined);
    await server?.stop();
  }
}

// ---------------------------------------------------------------------------------------------

/** The issue's targets for this section. */
const BUNDLE_TARGET_KIB = 250;
const ACTIVATE_TARGET_MS = 5;

interface EsbuildMetafile {
  outputs: Record<string, { bytes: number; inputs: Record<string, { bytesInOutput: number }> }>;
}

/**
 * Where the release bundle's bytes come from, from esbuild's metafile: bytes in the output by
 * package (`node_modules/<name>`), our own sources as "ours", largest first.
 */
export function bytesByPackage(meta: EsbuildMetafile): Record<string, number> {
  const outputs = Object.values(meta.outputs);
  if (outputs.length !== 1) throw new Error(`expected one output in the metafile, found ${outputs.length}`);
  const by = new Map<string, number>();
  for (const [file, input] of Object.entries(outputs[0].inputs)) {
    const m = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
    const key = m ? m[1] : 'ours';
    by.set(key, (by.get(key) ?? 0) + input.bytesInOutput);
  }
  return Object.fromEntries([...by].sort((a, b) => b[1] - a[1]));
}

/**
 * The release build and its .vsix, as `npm run package` makes them, with the .vsix written to
 * `vsix` (not into the repository). dist/ is put back as it was afterwards (usually the
 * development build with source maps). Returns the size of the release dist/extension.js and
 * what its bytes are, by package (esbuild's metafile of the same build).
 */
async function releasePackage(
  ctx: BenchContext,
  vsix: string,
): Promise<{ size: number; byPackage: Record<string, number> }> {
  const dist = path.join(REPO, 'dist');
  const saved = path.join(ctx.tmpDir, 'dist-before');
  const hadDist = fs.existsSync(dist);
  if (hadDist) fs.cpSync(dist, saved, { recursive: true });
  try {
    const metafile = path.join(ctx.tmpDir, 'extension.meta.json');
    ctx.log('node scripts/build.mjs --release --metafile <tmp>');
    await run(process.execPath, [path.join(REPO, 'scripts', 'build.mjs'), '--release', '--metafile', metafile], {
      cwd: REPO,
      timeout: 300_000,
    });
    const meta = JSON.parse(fs.readFileSync(metafile, 'utf8')) as EsbuildMetafile;
    const byPackage = bytesByPackage(meta);
    const manifest = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    if (manifest.scripts.package !== PACKAGE_SCRIPT)
      throw new Error(`npm run package is "${manifest.scripts.package}" now: follow it here`);
    // As `npm run package`: vsce runs vscode:prepublish (the same release build) and packs it.
    ctx.log(`${PACKAGE_SCRIPT} --out <tmp>`);
    await run(process.execPath, [path.join(REPO, 'scripts', 'package.mjs'), '--out', vsix], {
      cwd: REPO,
      timeout: 300_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    const size = fs.statSync(path.join(dist, 'extension.js')).size;
    const metaBytes = Object.values(meta.outputs)[0]?.bytes;
    if (metaBytes !== size)
      throw new Error(`the packaged bundle (${size} bytes) is not the build the metafile describes (${metaBytes})`);
    return { size, byPackage };
  } finally {
    if (hadDist) {
      fs.rmSync(dist, { recursive: true, force: true });
      fs.cpSync(saved, dist, { recursive: true });
    }
  }
}

export const activationBench: Bench = {
  id: 'activation',
  title: 'Activation: bundle and .vsix size, activate() in the real extension host',
  unavailable(): string | null {
    try {
      assertInstalled({ codeServer: true, chromium: true, playwright: true });
      return null;
    } catch (error) {
      if (error instanceof MissingToolError) return error.message;
      throw error;
    }
  },
  async run(ctx: BenchContext): Promise<BenchSection> {
    const runs = ctx.quick ? 3 : 5;
    const t0 = Date.now();
    const productVsix = path.join(ctx.tmpDir, 'codex-goal-recovery.vsix');
    const { size: bundleBytes, byPackage: bundleByPackage } = await releasePackage(ctx, productVsix);

    const entry = path.join(REPO, 'out', 'src', 'extension.js');
    if (!fs.existsSync(entry)) throw new Error('out/src/extension.js is missing: compile first (npx tsc -p .)');
    const closure = requireClosure(entry);
    const ours = closure.files.filter((f) => !packageRoot(f));
    const theirs = closure.files.filter((f) => packageRoot(f));
    const usedPackages = [...new Set(theirs.map((f) => path.basename(packageRoot(f)!)))].sort();
    const extra = usedPackages.filter((p) => !RUNTIME_PACKAGES.includes(p));
    if (extra.length > 0)
      throw new Error(`the unbundled closure needs packages that are not runtime dependencies: ${extra.join(', ')}`);
    const unbundledBytes = bytes(closure.files);
    const staging = path.join(ctx.tmpDir, 'unbundled');
    stageUnbundled(staging, closure, usedPackages);
    const unbundledVsix = path.join(ctx.tmpDir, 'codex-goal-recovery-unbundled.vsix');
    ctx.log(
      `unbundled: ${ours.length} files of ours + ${theirs.length} of ${usedPackages.join(', ')}; vsce package (with its npm dependency detection)`,
    );
    await vsce(staging, unbundledVsceArgs(unbundledVsix));
    const vsixBytes = fs.statSync(productVsix).size;
    const unbundledVsixBytes = fs.statSync(unbundledVsix).size;
    const vsixFiles = zipEntries(productVsix).size;
    const unbundledVsixFiles = zipEntries(unbundledVsix).size;
    ctx.log(`sizes done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    // ---- activate() ----
    ctx.log(`activate(): ${runs} window loads in code-server ${CODE_SERVER_VERSION} + Chromium`);
    const measured = await measureActivations(ctx, runs, productVsix);
    const product = measured.runs.map((r) => r.productMs);
    const hello = measured.runs.map((r) => r.helloMs);

    const kib = (n: number) => n / 1024;
    return {
      id: 'activation',
      title: activationBench.title,
      params: {
        runs,
        codeServer: CODE_SERVER_VERSION,
        bundleBytes,
        bundleBytesByPackage: bundleByPackage,
        unbundledBytes,
        unbundledFiles: {
          ours: ours.length,
          packages: theirs.length,
          byPackage: Object.fromEntries(
            usedPackages.map((p) => [p, theirs.filter((f) => path.basename(packageRoot(f)!) === p).length]),
          ),
        },
        unbundledUnresolvedOptional: closure.unresolved,
        vsixBytes,
        unbundledVsixBytes,
        vsixFiles,
        unbundledVsixFiles,
        activateMs: product,
        helloActivateMs: hello,
        windowLoadToActivatedMs: measured.loadMs,
      },
      figures: [
        figure(
          'dist/extension.js (release bundle) vs the unbundled JS it replaces',
          'KiB',
          kib(bundleBytes),
          kib(unbundledBytes),
          { text: `< ${BUNDLE_TARGET_KIB} KiB`, met: kib(bundleBytes) < BUNDLE_TARGET_KIB },
        ),
        figure('.vsix size', 'KiB', kib(vsixBytes), kib(unbundledVsixBytes)),
        figure('files in the .vsix', 'files', vsixFiles, unbundledVsixFiles),
        figure(
          `activate() median of ${runs} (baseline: a hello extension)`,
          'ms',
          percentile(product, 50),
          percentile(hello, 50),
          { text: `< ${ACTIVATE_TARGET_MS} ms`, met: percentile(product, 50) < ACTIVATE_TARGET_MS },
        ),
        figure(
          `activate() max of ${runs} (baseline: a hello extension)`,
          'ms',
          Math.max(...product),
          Math.max(...hello),
        ),
      ],
      notes: [
        `Sizes: the release build (node scripts/build.mjs --release: esbuild, minified, no source map) and the .vsix that \`npm run package\` (scripts/package.mjs: vsce, which runs the same release build) makes, into a temp dir. Baseline: shipping the same code unbundled, i.e. the compiled out/src files that out/src/extension.js requires transitively plus the files of ${usedPackages.join(', ')} those require and their package.json (every require() resolved with Node's resolver; optional requires that do not resolve, such as ws's bufferutil, are left out), packed by the same vsce (with its npm dependency detection, the README's images left relative) with the same README, CHANGELOG, LICENSE and media. A real unbundled package would ship whole package folders, so this baseline is a lower bound.`,
        `Where the release bundle's ${kib(bundleBytes).toFixed(1)} KiB come from (esbuild's metafile of the same build: bytes in the minified output): ${Object.entries(
          bundleByPackage,
        )
          .map(([name, n]) => `${name} ${kib(n).toFixed(1)} KiB`)
          .join(
            ', ',
          )}. zod is zod/mini (tree-shaken: only what the schemas use, plus its English messages); ws is the transport to the daemon (WebSocket over its Unix socket; its client module only, without its server and its compression, which the extension never asks for); the JSON-RPC connection is our own (vscode-jsonrpc, CommonJS and bundled whole, was 60 KiB).`,
        `Unbundled: ${ours.length} files of ours (${kib(bytes(ours)).toFixed(1)} KiB, out/package.json included) and ${theirs.length} files of ${usedPackages.join(', ')} (${kib(bytes(theirs)).toFixed(1)} KiB).`,
        `activate(): code-server ${CODE_SERVER_VERSION} with headless Chromium; the extension installed from the .vsix above with code-server's --install-extension (as a user installs it) and no Codex daemon to find (an empty Codex home: activation never waits for the daemon anyway), beside a generated hello extension (one registerCommand; packed by vsce and installed the same way) in the same window, both activated on onStartupFinished. The window was loaded ${runs} times, each load a new extension-host process. Each run reads the codexGoalRecovery.activate performance measure (activate.start → activate.end) from the line "activated in X ms" that the extension writes to its log output channel, from the log file VS Code keeps for it; the hello extension measures and reports its own activate() the same way.`,
        "The activate() ratio is hello ÷ ours as the harness defines it (baseline ÷ product): a figure below 1 says how small a trivial extension's activation is next to ours, i.e. ours costs 1/ratio times a hello extension's. What it does not include: loading the module (require of dist/extension.js) happens before activate() and is not in the measure; nor is the connection to the daemon, which starts in the background. activate() creates the log channel and registers the commands; the settings, the election, the engine and the views start right after it returns (on the next turn of the event loop, or at once when a command or the API needs them first), so their cost is not in this figure either: they are work the window still does, just not inside activate().",
        `Per run (ms), ours: ${product.join(', ')}; hello: ${hello.join(', ')}. Ours is reported to 0.1 ms, the hello extension to 0.001 ms. Window load to both log lines: ${measured.loadMs.map((ms) => (ms / 1000).toFixed(1)).join(', ')} s (a loaded two-core machine: every run's absolute time is noisy).`,
      ],
    };
  },
};
