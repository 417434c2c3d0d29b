/**
 * The real `codex` binary (from the `@openai/codex` devDependency) and the environment the
 * demo and the tests run it in.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
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

/**
 * One installed Codex: the pinned `@openai/codex` devDependency, or the latest one installed
 * beside it under an npm alias (`codex-latest`). Each has its own platform package, so its own
 * native binary.
 */
export interface CodexBuild {
  /** "pinned" (the version the product is built against) or "latest". */
  name: 'pinned' | 'latest';
  /** The npm package it comes from: `@openai/codex` or the alias `codex-latest`. */
  pkg: string;
  /** e.g. "0.169.0" (the package's version). */
  version: string;
  /** The platform package's vendor directory (bin/codex, codex-path/, codex-resources/), or null. */
  vendorDir: string | null;
}

let cachedBuilds: CodexBuild[] | undefined;

function readBuild(name: CodexBuild['name'], pkg: string): CodexBuild | null {
  try {
    const pkgJson = require.resolve(`${pkg}/package.json`, { paths: [projectRoot()] });
    const version = (JSON.parse(readFileSync(pkgJson, 'utf8')) as { version?: string }).version ?? '';
    return { name, pkg, version, vendorDir: vendorDirBeside(path.dirname(pkgJson)) };
  } catch {
    return null;
  }
}

/** The platform package that `@openai/codex` at `codexPkgDir` resolves to (nested for an alias). */
function vendorDirBeside(codexPkgDir: string): string | null {
  const target = PLATFORM_TARGETS[`${process.platform}-${process.arch}`];
  if (!target) return null;
  const candidates: string[] = [];
  try {
    const platformPkg = require.resolve(`${target.pkg}/package.json`, { paths: [codexPkgDir] });
    candidates.push(path.join(path.dirname(platformPkg), 'vendor', target.triple));
  } catch {
    /* not resolvable */
  }
  candidates.push(path.join(codexPkgDir, 'node_modules', target.pkg, 'vendor', target.triple));
  for (const c of candidates) if (existsSync(path.join(c, 'bin', 'codex'))) return realpathSync(c);
  return null;
}

/**
 * The Codex builds installed here, pinned first; the latest only when it is installed and is
 * another version. Integration tests run once per build and name its version in the title.
 */
export function codexBuilds(): CodexBuild[] {
  cachedBuilds ??= [readBuild('pinned', '@openai/codex'), readBuild('latest', 'codex-latest')]
    .filter((b): b is CodexBuild => b !== null)
    .filter((b, i, all) => all.findIndex((x) => x.version === b.version) === i);
  return cachedBuilds;
}

/** The pinned build (the default everywhere a home does not name another). */
export function pinnedCodex(): CodexBuild {
  const pinned = codexBuilds().find((b) => b.name === 'pinned');
  if (!pinned) throw new Error('codex not found: run npm install (devDependency @openai/codex)');
  return pinned;
}

/** Which build runs in a CODEX_HOME made by `makeCodexHome` (the pinned one unless it chose another). */
const homeBuilds = new Map<string, CodexBuild>();

export function useCodexFor(codexHome: string, build: CodexBuild): void {
  homeBuilds.set(path.resolve(codexHome), build);
}

export function forgetCodexHome(codexHome: string): void {
  homeBuilds.delete(path.resolve(codexHome));
}

/** The build for this CODEX_HOME (see `useCodexFor`), else the pinned one. */
export function codexFor(codexHome?: string): CodexBuild {
  return (codexHome !== undefined ? homeBuilds.get(path.resolve(codexHome)) : undefined) ?? pinnedCodex();
}

/** node_modules/.bin/codex (a Node shim that spawns the native binary as a child on Node 20). */
export function codexShim(): string {
  return path.join(projectRoot(), 'node_modules', '.bin', 'codex');
}

/**
 * The native `codex` binary of a build (default: the pinned one) shipped in node_modules
 * (preferred: ~40 ms to `--version`, one process, receives signals directly); for the pinned
 * build, falling back to the `.bin` shim (~150 ms, a node parent + native child on Node 20,
 * since Node 20 lacks process.execve).
 */
export function codexBinary(build?: CodexBuild): string {
  const b = build ?? pinnedCodex();
  if (b.vendorDir) return path.join(b.vendorDir, 'bin', 'codex');
  const shim = codexShim();
  if (b.name === 'pinned' && existsSync(shim)) return shim;
  throw new Error(`codex binary of ${b.pkg}@${b.version} not found: run npm install`);
}

/** Environment for a codex process using `codexHome` (no proxies, no OpenAI key, analytics off). */
export function codexEnv(codexHome: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CODEX_HOME: codexHome,
    RUST_LOG: process.env.CODEX_TEST_RUST_LOG ?? 'error',
    NO_COLOR: '1',
  };
  for (const k of Object.keys(env))
    if (/^(OPENAI_|CODEX_MANAGED_|CODEX_SANDBOX)/.test(k) || /^(http|https|all)_proxy$/i.test(k)) delete env[k];
  return env;
}

/** `codex --version` via the given binary, timed (used to compare native vs shim). */
export function timeVersion(bin: string): { ms: number; out: string } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, out: (r.stdout ?? '').trim() };
}
