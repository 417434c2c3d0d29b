/**
 * Helpers to run the real `codex` binary (from the `@openai/codex` devDependency) for the demo
 * and the tests:
 * a private CODEX_HOME pointed at the mock model, a stdio app-server child, and the managed
 * daemon (`codex app-server daemon start|stop|restart`) with nothing left behind.
 *
 * Every process these helpers start is tracked; `killAllTracked()` (call it in an `after` hook)
 * and a process 'exit' hook kill whatever is still alive, by PID / process group only.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

// ---------------------------------------------------------------------------------------------
// Binary

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

// ---------------------------------------------------------------------------------------------
// CODEX_HOME

export interface CodexHomeOptions {
  /** default 1 (Codex default 4) */
  requestMaxRetries?: number;
  /** default 1 (Codex default 5) */
  streamMaxRetries?: number;
  /** default 5000 */
  streamIdleTimeoutMs?: number;
  /** default "never" */
  approvalPolicy?: string;
  /** default "read-only" */
  sandboxMode?: string;
}

export interface CodexHome {
  /** Absolute path of the private CODEX_HOME. */
  dir: string;
  /**
   * Kills a daemon started on this home (if any, with SIGKILL: no drain of in-flight turns) and
   * tracked processes using it, removes the daemon's socket files and the dir.
   */
  cleanup(): Promise<void>;
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

/**
 * Creates a private CODEX_HOME (under os.tmpdir()) whose config.toml points at `modelUrl`.
 * `extraToml` is inserted between the top-level keys and the `[model_providers.mock]` table, so it
 * may hold top-level keys and/or its own tables.
 */
export async function makeCodexHome(modelUrl: string, extraToml = '', opts: CodexHomeOptions = {}): Promise<CodexHome> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cgr-codex-home-'));
  const toml = [
    'model = "mock-model"',
    'model_provider = "mock"',
    `approval_policy = "${opts.approvalPolicy ?? 'never'}"`,
    `sandbox_mode = "${opts.sandboxMode ?? 'read-only'}"`,
    'check_for_update_on_startup = false',
    '',
    extraToml.trim(),
    '',
    '[model_providers.mock]',
    'name = "Mock"',
    `base_url = "${modelUrl}"`,
    'wire_api = "responses"',
    `request_max_retries = ${opts.requestMaxRetries ?? 1}`,
    `stream_max_retries = ${opts.streamMaxRetries ?? 1}`,
    `stream_idle_timeout_ms = ${opts.streamIdleTimeoutMs ?? 5000}`,
    '',
  ].join('\n');
  await fs.writeFile(path.join(dir, 'config.toml'), toml);
  let cleaned = false;
  return {
    dir,
    async cleanup() {
      if (cleaned) return;
      cleaned = true;
      if (existsSync(path.join(dir, 'app-server-daemon'))) {
        await stopDaemon(dir, { force: true }).catch(() => undefined);
      }
      await killTracked((t) => t.codexHome === dir);
      removeDaemonRuntimeFiles(dir);
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Process tracking and killing (by PID / process group only)

interface Tracked {
  pid: number;
  /** true when pid is a process-group leader we may signal as -pid */
  group: boolean;
  codexHome: string;
  what: string;
}
const tracked = new Map<number, Tracked>();

function track(t: Tracked): void {
  tracked.set(t.pid, t);
}

/** /proc/<pid>/stat fields, or null when the process is gone. */
function procStat(pid: number): { state: string; pgid: number; startTicks: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // rest[0] = state (field 3), rest[2] = pgrp (field 5), rest[19] = starttime (field 22)
    return { state: rest[0], pgid: Number(rest[2]), startTicks: Number(rest[19]) };
  } catch {
    return null;
  }
}

/** Alive = exists and is not a zombie (pid 1 here does not always reap orphans). */
export function isAlive(pid: number): boolean {
  if (process.platform === 'linux') {
    const st = procStat(pid);
    return st !== null && st.state !== 'Z' && st.state !== 'X';
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/** Live members of process group `pgid` (Linux /proc scan). */
export function processGroupMembers(pgid: number): number[] {
  if (process.platform !== 'linux') return isAlive(pgid) ? [pgid] : [];
  const out: number[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const st = procStat(Number(e));
    if (st && st.pgid === pgid && st.state !== 'Z' && st.state !== 'X') out.push(Number(e));
  }
  return out;
}

function signal(pid: number, sig: NodeJS.Signals, group: boolean): void {
  try {
    process.kill(group ? -pid : pid, sig);
  } catch {
    /* gone */
  }
}

async function waitGone(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!check()) return true;
    await sleep(50);
  }
  return !check();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * SIGTERM the process group led by `pid` (a child spawned with detached:true), wait up to
 * `timeoutMs`, then SIGKILL whatever of the group is left.
 */
export async function stopProcessGroup(child: { pid?: number } | number, timeoutMs = 3000): Promise<void> {
  const pid = typeof child === 'number' ? child : child.pid;
  if (!pid) return;
  const groupAlive = () => isAlive(pid) || processGroupMembers(pid).length > 0;
  if (groupAlive()) {
    signal(pid, 'SIGTERM', true);
    if (!(await waitGone(groupAlive, timeoutMs))) {
      signal(pid, 'SIGKILL', true);
      await waitGone(groupAlive, 2000);
    }
  }
  tracked.delete(pid);
}

/** Guard against PID reuse: the group's leader, or some member, is still a codex process. */
function groupLooksOurs(pid: number): boolean {
  if (process.platform !== 'linux') return isAlive(pid);
  if (isAlive(pid)) return cmdline(pid).includes('codex');
  return processGroupMembers(pid).some((m) => cmdline(m).includes('codex'));
}

async function killTracked(filter: (t: Tracked) => boolean): Promise<void> {
  for (const t of [...tracked.values()].filter(filter)) {
    if (!groupLooksOurs(t.pid)) {
      tracked.delete(t.pid);
      continue;
    }
    if (t.group) await stopProcessGroup(t.pid, 2000);
    else {
      if (isAlive(t.pid)) {
        signal(t.pid, 'SIGTERM', false);
        if (!(await waitGone(() => isAlive(t.pid), 2000))) signal(t.pid, 'SIGKILL', false);
      }
      tracked.delete(t.pid);
    }
  }
}

/** Kill every process these helpers started that is still alive. Use in `after` hooks. */
export async function killAllTracked(): Promise<void> {
  await killTracked(() => true);
}

/** PIDs these helpers started and that are still alive (should be [] at the end of a test file). */
export function trackedAlive(): { pid: number; what: string }[] {
  return [...tracked.values()]
    .filter((t) => isAlive(t.pid) || (t.group && processGroupMembers(t.pid).length > 0))
    .map((t) => ({ pid: t.pid, what: t.what }));
}

process.on('exit', () => {
  for (const t of tracked.values()) if (groupLooksOurs(t.pid)) signal(t.pid, 'SIGKILL', t.group);
});

// ---------------------------------------------------------------------------------------------
// stdio app-server

export interface StdioAppServer extends ChildProcessWithoutNullStreams {
  /** Everything the server wrote to stderr so far. */
  stderrText(): string;
}

/**
 * `codex app-server` (stdio transport) with CODEX_HOME=codexHome, detached into its own process
 * group. Talk to it with `UserClient.overStdio(child)`; stop it with `stopProcessGroup(child)`.
 */
export function startAppServerStdio(codexHome: string, extraArgs: string[] = []): StdioAppServer {
  const child = spawn(codexBinary(), ['app-server', ...extraArgs], {
    env: codexEnv(codexHome),
    cwd: codexHome,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  }) as StdioAppServer;
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    stderr += d;
    if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
  });
  child.stderrText = () => stderr;
  if (child.pid) track({ pid: child.pid, group: true, codexHome, what: 'app-server stdio' });
  child.on('exit', () => {
    if (child.pid && !processGroupMembers(child.pid).length) tracked.delete(child.pid);
  });
  return child;
}

// ---------------------------------------------------------------------------------------------
// Daemon

/** The control socket path the daemon listens on (a symlink into /tmp/codex-daemon-<uid>/). */
export function controlSocketPath(codexHome: string): string {
  return path.join(codexHome, 'app-server-control', 'app-server-control.sock');
}

export interface DaemonReport {
  status: string;
  backend?: string;
  pid?: number;
  socketPath?: string;
  managedCodexPath?: string;
  managedCodexVersion?: string;
  cliVersion?: string;
  appServerVersion?: string;
  [k: string]: unknown;
}

export interface DaemonCliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The JSON line printed on stdout, when there is one. */
  report?: DaemonReport;
}

/** Run `codex app-server daemon <args>` with CODEX_HOME=codexHome. */
export function daemonCli(codexHome: string, args: string[], timeoutMs = 60_000): Promise<DaemonCliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(codexBinary(), ['app-server', 'daemon', ...args], {
      env: codexEnv(codexHome),
      cwd: codexHome,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      signal(child.pid ?? 0, 'SIGKILL', true);
      reject(new Error(`codex app-server daemon ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      let report: DaemonReport | undefined;
      for (const line of stdout.split('\n').reverse()) {
        const l = line.trim();
        if (!l.startsWith('{')) continue;
        try {
          report = JSON.parse(l) as DaemonReport;
          break;
        } catch {
          /* not JSON */
        }
      }
      resolve({ code, stdout, stderr, ...(report ? { report } : {}) });
    });
  });
}

export interface StartDaemonOptions {
  /**
   * "link" (default): pre-seed `packages/app-server-daemon/current` as a symlink to the
   * node_modules vendor dir, so `daemon start` skips its install step (measured: ~0.6 s instead
   * of ~5-7 s and ~370 MB copied per CODEX_HOME) and starts no `pid-update-loop` updater.
   * "copy": let Codex install itself into CODEX_HOME as a user's first start does (slow; also
   * starts the `pid-update-loop` helper, which `stopDaemon` kills).
   */
  install?: 'link' | 'copy';
  timeoutMs?: number;
}

/** Links the packaged daemon into CODEX_HOME so `daemon start` skips copying ~370 MB (and starts no updater). */
export function seedDaemonPackage(codexHome: string): void {
  const vendor = codexVendorDir();
  if (!vendor) return;
  const pkgDir = path.join(codexHome, 'packages', 'app-server-daemon');
  const current = path.join(pkgDir, 'current');
  if (existsSync(current)) return;
  mkdirSync(pkgDir, { recursive: true });
  symlinkSync(vendor, current);
}

function readPidFile(file: string): { pid: number; startTicks?: number } | null {
  try {
    const j = JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown; processIdentity?: { startTicks?: unknown } };
    if (typeof j.pid !== 'number') return null;
    const st = j.processIdentity?.startTicks;
    return { pid: j.pid, ...(typeof st === 'number' ? { startTicks: st } : {}) };
  } catch {
    return null;
  }
}

/** The `pid-update-loop` helper of this CODEX_HOME, if alive and verified (start time + cmdline). */
export function daemonUpdaterPid(codexHome: string): number | null {
  const rec = readPidFile(path.join(codexHome, 'app-server-daemon', 'daemon-updater.pid'));
  if (!rec || !isAlive(rec.pid)) return null;
  const st = procStat(rec.pid);
  if (rec.startTicks !== undefined && st && st.startTicks !== rec.startTicks) return null;
  if (process.platform === 'linux' && !cmdline(rec.pid).includes('pid-update-loop')) return null;
  return rec.pid;
}

/** The daemon's app-server PID of this CODEX_HOME, if alive and verified. */
export function daemonPid(codexHome: string): number | null {
  const rec = readPidFile(path.join(codexHome, 'app-server-daemon', 'daemon.pid'));
  if (!rec || !isAlive(rec.pid)) return null;
  const st = procStat(rec.pid);
  if (rec.startTicks !== undefined && st && st.startTicks !== rec.startTicks) return null;
  if (process.platform === 'linux' && !cmdline(rec.pid).includes('app-server')) return null;
  return rec.pid;
}

function trackDaemon(codexHome: string): void {
  const d = daemonPid(codexHome);
  if (d) track({ pid: d, group: true, codexHome, what: 'app-server daemon' });
  const u = daemonUpdaterPid(codexHome);
  if (u) track({ pid: u, group: true, codexHome, what: 'daemon pid-update-loop' });
}

/** `codex app-server daemon start`; resolves with its JSON report once the socket exists. */
export async function startDaemon(codexHome: string, opts: StartDaemonOptions = {}): Promise<DaemonReport> {
  if ((opts.install ?? 'link') === 'link') seedDaemonPackage(codexHome);
  const r = await daemonCli(codexHome, ['start'], opts.timeoutMs ?? 60_000);
  if (r.code !== 0 || !r.report) throw new Error(`daemon start failed (${r.code}): ${r.stdout}\n${r.stderr}`);
  if (typeof r.report.pid === 'number') track({ pid: r.report.pid, group: true, codexHome, what: 'app-server daemon' });
  trackDaemon(codexHome);
  if (!(await waitGone(() => !existsSync(controlSocketPath(codexHome)), 5000))) {
    throw new Error(`daemon started but no control socket at ${controlSocketPath(codexHome)}`);
  }
  return r.report;
}

/**
 * `codex app-server daemon stop` (graceful: waits for in-flight turns, up to the CLI's 60 s grace
 * period), then make sure nothing of this CODEX_HOME is left: the
 * daemon's process group and the `pid-update-loop` helper (found by the PID it wrote to
 * daemon-updater.pid, verified by start time and cmdline; it is its own group leader) are
 * SIGTERMed, then SIGKILLed. `force`: skip the CLI and its drain, SIGKILL at once (teardown).
 */
export async function stopDaemon(codexHome: string, opts: { force?: boolean } = {}): Promise<DaemonReport | undefined> {
  const before = daemonPid(codexHome);
  const knownGroups = [...tracked.values()].filter((t) => t.codexHome === codexHome && t.what !== 'app-server stdio');
  let report: DaemonReport | undefined;
  if (opts.force) {
    // Teardown: no drain. SIGKILL the daemon's and the updater's process groups.
    for (const pid of new Set<number>([...knownGroups.map((t) => t.pid), ...(before ? [before] : [])])) {
      if (groupLooksOurs(pid)) signal(pid, 'SIGKILL', true);
    }
  } else if (existsSync(codexBinary())) {
    const r = await daemonCli(codexHome, ['stop'], 90_000).catch(() => undefined);
    report = r?.report;
  }
  const pids = new Set<number>(knownGroups.map((t) => t.pid));
  if (before) pids.add(before);
  const updater = daemonUpdaterPid(codexHome);
  if (updater) pids.add(updater);
  for (const pid of pids) {
    if (groupLooksOurs(pid)) await stopProcessGroup(pid, 3000);
    else tracked.delete(pid);
  }
  removeDaemonRuntimeFiles(codexHome);
  return report;
}

/**
 * `codex app-server daemon restart`: SIGTERM to the old app-server, which drains running turns
 * (the CLI SIGKILLs it after a 60 s grace period), then a new one. Measured with 0.169.0: it
 * returns only when in-flight turns have finished (up to ~60 s, e.g. a turn awaiting approval),
 * and the new daemon re-loads the threads that were loaded and continues their active goals.
 */
export async function restartDaemon(codexHome: string): Promise<DaemonReport> {
  const old = daemonPid(codexHome);
  const r = await daemonCli(codexHome, ['restart'], 90_000);
  if (r.code !== 0 || !r.report) throw new Error(`daemon restart failed (${r.code}): ${r.stdout}\n${r.stderr}`);
  if (old && old !== r.report.pid) {
    await stopProcessGroup(old, 3000);
  }
  if (typeof r.report.pid === 'number') track({ pid: r.report.pid, group: true, codexHome, what: 'app-server daemon' });
  trackDaemon(codexHome);
  if (!(await waitGone(() => !existsSync(controlSocketPath(codexHome)), 5000))) {
    throw new Error(`daemon restarted but no control socket at ${controlSocketPath(codexHome)}`);
  }
  return r.report;
}

/**
 * The daemon's sockets live in a shared per-user dir (/tmp/codex-daemon-<uid>/<hash>), linked
 * from CODEX_HOME. Remove the targets of *this* home's links only if nothing listens any more.
 */
function removeDaemonRuntimeFiles(codexHome: string): void {
  const links = [controlSocketPath(codexHome), path.join(codexHome, 'app-server-daemon', 'daemon-updater.sock')];
  for (const link of links) {
    let target: string;
    try {
      target = readlinkSync(link);
    } catch {
      continue;
    }
    if (!path.isAbsolute(target)) target = path.resolve(path.dirname(link), target);
    if (!/codex-daemon-/.test(target)) continue;
    if (daemonPid(codexHome) || daemonUpdaterPid(codexHome)) continue;
    for (const f of [target, `${target}.lock`]) {
      try {
        rmSync(f, { force: true });
      } catch {
        /* ignore */
      }
    }
  }
}

/** `codex --version` via the given binary, timed (used to compare native vs shim). */
export function timeVersion(bin: string): { ms: number; out: string } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, out: (r.stdout ?? '').trim() };
}
