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
import { defaultSocketPath as controlSocketPath } from '../protocol/socketSafety';
import { parseJson } from '../rollout/markerLines';

/** The control socket path the daemon listens on (a symlink into /tmp/codex-daemon-<uid>/). */
export { controlSocketPath };

/** The JSON line `daemon start|stop|restart` prints (also backend, socketPath, versions...). */
export interface DaemonReport {
  status: string;
  pid?: number;
  [k: string]: unknown;
}

/** Run `codex app-server daemon <args>` with CODEX_HOME=codexHome; `report`: the JSON line it printed on stdout. */
function daemonCli(
  codexHome: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string; report?: DaemonReport }> {
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
      const objects = stdout.split('\n').map((line) => (line.trim().startsWith('{') ? parseJson(line) : undefined));
      const report = objects.reverse().find((o) => o !== undefined) as DaemonReport | undefined;
      resolve({ code, stdout, stderr, ...(report ? { report } : {}) });
    });
  });
}

/**
 * Links the packaged daemon (`packages/app-server-daemon/current` → the node_modules vendor dir)
 * into CODEX_HOME so `daemon start` skips its install step (measured: ~0.6 s instead of ~5-7 s
 * and ~370 MB copied per CODEX_HOME) and starts no `pid-update-loop` updater.
 */
export function seedDaemonPackage(codexHome: string): void {
  const vendor = codexFor(codexHome).vendorDir;
  if (!vendor) return;
  const pkgDir = path.join(codexHome, 'packages', 'app-server-daemon');
  const current = path.join(pkgDir, 'current');
  if (existsSync(current)) return;
  mkdirSync(pkgDir, { recursive: true });
  symlinkSync(vendor, current);
}

/**
 * The PID a daemon process of this CODEX_HOME wrote to `file`, if alive and verified: same start
 * time, and on Linux a cmdline holding `mark`.
 */
function verifiedPid(codexHome: string, file: string, mark: string): number | null {
  let rec: { pid?: unknown; processIdentity?: { startTicks?: unknown } };
  try {
    rec = JSON.parse(readFileSync(path.join(codexHome, 'app-server-daemon', file), 'utf8')) as typeof rec;
  } catch {
    return null;
  }
  if (typeof rec.pid !== 'number' || !isAlive(rec.pid)) return null;
  const ticks = rec.processIdentity?.startTicks;
  const st = procStat(rec.pid);
  if (typeof ticks === 'number' && st && st.startTicks !== ticks) return null;
  if (process.platform === 'linux' && !cmdline(rec.pid).includes(mark)) return null;
  return rec.pid;
}

/** The `pid-update-loop` helper of this CODEX_HOME, if alive and verified (start time + cmdline). */
function daemonUpdaterPid(codexHome: string): number | null {
  return verifiedPid(codexHome, 'daemon-updater.pid', 'pid-update-loop');
}

/** The daemon's app-server PID of this CODEX_HOME, if alive and verified. */
export function daemonPid(codexHome: string): number | null {
  return verifiedPid(codexHome, 'daemon.pid', 'app-server');
}

/**
 * `daemon start|restart`: throws unless it exits 0 with a JSON report; after a restart the old
 * app-server's group is stopped if it is another; tracks the daemon (the PID its CLI printed, the
 * one it wrote) and its updater; resolves with the report once the control socket exists.
 */
async function daemonUp(codexHome: string, verb: 'start' | 'restart', timeoutMs: number): Promise<DaemonReport> {
  const old = daemonPid(codexHome);
  const r = await daemonCli(codexHome, [verb], timeoutMs);
  if (r.code !== 0 || !r.report) throw new Error(`daemon ${verb} failed (${r.code}): ${r.stdout}\n${r.stderr}`);
  if (verb === 'restart' && old && old !== r.report.pid) await stopProcessGroup(old, 3000);
  for (const pid of [r.report.pid, daemonPid(codexHome)])
    if (typeof pid === 'number' && pid) track({ pid, codexHome, what: 'app-server daemon' });
  const u = daemonUpdaterPid(codexHome);
  if (u) track({ pid: u, codexHome, what: 'daemon pid-update-loop' });
  if (!(await waitGone(() => !existsSync(controlSocketPath(codexHome)), 5000))) {
    throw new Error(`daemon ${verb}ed but no control socket at ${controlSocketPath(codexHome)}`);
  }
  return r.report;
}

/**
 * `codex app-server daemon start`; resolves with its JSON report once the socket exists. The
 * packaged daemon is linked in first (`seedDaemonPackage`): no ~370 MB install, no updater.
 */
export async function startDaemon(codexHome: string): Promise<DaemonReport> {
  seedDaemonPackage(codexHome);
  return daemonUp(codexHome, 'start', 60_000);
}

/**
 * `codex app-server daemon stop` (graceful: waits for in-flight turns, up to the CLI's 60 s grace
 * period), then make sure nothing of this CODEX_HOME is left: the daemon's process group and the
 * `pid-update-loop` helper (its own group leader) are SIGTERMed, then SIGKILLed. `force`: skip the
 * CLI and its drain, SIGKILL at once (teardown).
 */
export async function stopDaemon(codexHome: string, opts: { force?: boolean } = {}): Promise<DaemonReport | undefined> {
  const pids = new Set<number>(
    trackedList()
      .filter((t) => t.codexHome === codexHome && t.what !== 'app-server stdio')
      .map((t) => t.pid),
  );
  const before = daemonPid(codexHome);
  if (before) pids.add(before);
  let report: DaemonReport | undefined;
  if (opts.force) {
    for (const pid of pids) if (groupLooksOurs(pid)) signal(pid, 'SIGKILL', true);
  } else if (existsSync(codexBinary(codexFor(codexHome)))) {
    report = (await daemonCli(codexHome, ['stop'], 90_000).catch(() => undefined))?.report;
  }
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
  return daemonUp(codexHome, 'restart', 90_000);
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
      target = path.resolve(path.dirname(link), readlinkSync(link));
    } catch {
      continue;
    }
    if (!/codex-daemon-/.test(target) || daemonPid(codexHome) || daemonUpdaterPid(codexHome)) continue;
    for (const f of [target, `${target}.lock`]) {
      try {
        rmSync(f, { force: true });
      } catch {
        /* ignore */
      }
    }
  }
}
