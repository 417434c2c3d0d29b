/**
 * The real `codex` binary (from the `@openai/codex` devDependency) and the environment the
 * demo and the tests run it in.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import * as path from 'node:path';

const PLATFORM_TARGETS: Record<string, { pkg: string; triple: string }> = {
  'linux-x64': { pkg: '@openai/codex-linux-x64', triple: 'x86_64-unknown-linux-musl' },
  'linux-arm64': { pkg: '@openai/codex-linux-arm64', triple: 'aarch64-unknown-linux-musl' },
  'darwin-x64': { pkg: '@openai/codex-darwin-x64', triple: 'x86_64-apple-darwin' },
  'darwin-arm64': { pkg: '@openai/codex-darwin-arm64', triple: 'aarch64-apple-darwin' },
};

function projectRoot(): string {
  // out/src/demo/*.js, src/demo/*.ts or the dist/ bundle: the first folder up with package.json and node_modules
  let dir = __dirname;
  for (let i = 0; i < 6; i++) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'node_modules'))) return dir;
    dir = path.dirname(dir);
  }
  return process.cwd();
}

let cachedVendorDir: string | null | undefined;

/**
 * The platform package's vendor directory (holds bin/codex, codex-path/, codex-resources/,
 * codex-package.json), or null when the optional dependency is not installed.
 */
export function codexVendorDir(): string | null {
  if (cachedVendorDir !== undefined) return cachedVendorDir;
  cachedVendorDir = null;
  const target = PLATFORM_TARGETS[`${process.platform}-${process.arch}`];
  if (target) {
    const candidates: string[] = [];
    try {
      candidates.push(
        path.join(
          path.dirname(require.resolve(`${target.pkg}/package.json`, { paths: [projectRoot()] })),
          'vendor',
          target.triple,
        ),
      );
    } catch {
      /* not resolvable */
    }
    candidates.push(path.join(projectRoot(), 'node_modules', target.pkg, 'vendor', target.triple));
    for (const c of candidates) {
      if (existsSync(path.join(c, 'bin', 'codex'))) {
        cachedVendorDir = realpathSync(c);
        break;
      }
    }
  }
  return cachedVendorDir;
}

/** node_modules/.bin/codex (a Node shim that spawns the native binary as a child on Node 20). */
export function codexShim(): string {
  return path.join(projectRoot(), 'node_modules', '.bin', 'codex');
}

/**
 * The native `codex` binary shipped in node_modules (preferred: ~40 ms to `--version`, one
 * process, receives signals directly), falling back to the `.bin` shim (~150 ms, a node
 * parent + native child on Node 20, since Node 20 lacks process.execve).
 */
export function codexBinary(): string {
  const vendor = codexVendorDir();
  if (vendor) return path.join(vendor, 'bin', 'codex');
  const shim = codexShim();
  if (existsSync(shim)) return shim;
  throw new Error('codex binary not found: run npm install (devDependency @openai/codex)');
}

/** Environment for a codex process using `codexHome` (no proxies, no OpenAI key, analytics off). */
export function codexEnv(codexHome: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CODEX_HOME: codexHome,
    RUST_LOG: process.env.CODEX_TEST_RUST_LOG ?? 'error',
    NO_COLOR: '1',
  };
  for (const k of Object.keys(env)) {
    if (/^(OPENAI_|CODEX_MANAGED_|CODEX_SANDBOX)/.test(k) || /^(http|https|all)_proxy$/i.test(k)) delete env[k];
  }
  return { ...env, ...extra };
}

/** `codex --version` via the given binary, timed (used to compare native vs shim). */
export function timeVersion(bin: string): { ms: number; out: string } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, out: (r.stdout ?? '').trim() };
}
