/**
 * The managed daemon (`codex app-server daemon start|stop|restart`) of a CODEX_HOME, with
 * nothing left behind: its app-server and `pid-update-loop` helper are found by the PIDs they
 * wrote, verified, tracked and killed by process group only.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import * as path from 'node:path';
import { codexBinary, codexEnv, codexFor } from './codexBinary';
import {
  cmdline,
  groupLooksOurs,
  isAlive,
  procStat,
  signal,
  stopProcessGroup,
  track,
  trackedList,
  untrack,
  waitGone,
} from './codexProcesses';

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
    const child = spawn(codexBinary(codexFor(codexHome)), ['app-server', 'daemon', ...args], {
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
  const vendor = codexFor(codexHome).vendorDir;
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
  const knownGroups = trackedList().filter((t) => t.codexHome === codexHome && t.what !== 'app-server stdio');
  let report: DaemonReport | undefined;
  if (opts.force) {
    // Teardown: no drain. SIGKILL the daemon's and the updater's process groups.
    for (const pid of new Set<number>([...knownGroups.map((t) => t.pid), ...(before ? [before] : [])])) {
      if (groupLooksOurs(pid)) signal(pid, 'SIGKILL', true);
    }
  } else if (existsSync(codexBinary(codexFor(codexHome)))) {
    const r = await daemonCli(codexHome, ['stop'], 90_000).catch(() => undefined);
    report = r?.report;
  }
  const pids = new Set<number>(knownGroups.map((t) => t.pid));
  if (before) pids.add(before);
  const updater = daemonUpdaterPid(codexHome);
  if (updater) pids.add(updater);
  for (const pid of pids) {
    if (groupLooksOurs(pid)) await stopProcessGroup(pid, 3000);
    else untrack(pid);
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
export function removeDaemonRuntimeFiles(codexHome: string): void {
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
