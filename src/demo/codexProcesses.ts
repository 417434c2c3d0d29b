/**
 * Every process the demo's and the tests' helpers start (the stdio app-server, the managed
 * daemon and its updater) is tracked here; `killAllTracked()` (call it in an `after` hook)
 * and a process 'exit' hook kill whatever is still alive, by PID / process group only.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** `pid`: a process-group leader (every helper spawns detached), signalled as -pid. */
export interface Tracked {
  pid: number;
  codexHome: string;
  what: string;
}
const tracked = new Map<number, Tracked>();

export function track(t: Tracked): void {
  tracked.set(t.pid, t);
}

/** Forgets `pid` (it is gone, or no longer ours). */
export function untrack(pid: number): void {
  tracked.delete(pid);
}

/** What is tracked now, alive or not. */
export function trackedList(): Tracked[] {
  return [...tracked.values()];
}

/** /proc/<pid>/stat fields, or null when the process is gone. */
export function procStat(pid: number): { state: string; pgid: number; startTicks: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // rest[0] = state (field 3), rest[2] = pgrp (field 5), rest[19] = starttime (field 22)
    return { state: rest[0], pgid: Number(rest[2]), startTicks: Number(rest[19]) };
  } catch {
    return null;
  }
}

/** A process that exists, is not a zombie and (given `pgid`) is in that group. */
function isLive(st: ReturnType<typeof procStat>, pgid?: number): boolean {
  return st !== null && st.state !== 'Z' && st.state !== 'X' && (pgid === undefined || st.pgid === pgid);
}

/** Alive = exists and is not a zombie (pid 1 here does not always reap orphans). */
export function isAlive(pid: number): boolean {
  if (process.platform === 'linux') return isLive(procStat(pid));
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

/** Live members of process group `pgid` (Linux /proc scan). */
export function processGroupMembers(pgid: number): number[] {
  if (process.platform !== 'linux') return isAlive(pgid) ? [pgid] : [];
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    /* no /proc */
  }
  return entries.filter((e) => /^\d+$/.test(e) && isLive(procStat(Number(e)), pgid)).map(Number);
}

export function signal(pid: number, sig: NodeJS.Signals, group: boolean): void {
  try {
    process.kill(group ? -pid : pid, sig);
  } catch {
    /* gone */
  }
}

export async function waitGone(check: () => boolean, timeoutMs: number): Promise<boolean> {
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
export function groupLooksOurs(pid: number): boolean {
  if (process.platform !== 'linux') return isAlive(pid);
  if (isAlive(pid)) return cmdline(pid).includes('codex');
  return processGroupMembers(pid).some((m) => cmdline(m).includes('codex'));
}

export async function killTracked(filter: (t: Tracked) => boolean): Promise<void> {
  for (const t of [...tracked.values()].filter(filter)) {
    if (groupLooksOurs(t.pid)) await stopProcessGroup(t.pid, 2000);
    else tracked.delete(t.pid);
  }
}

/** Kill every process these helpers started that is still alive. Use in `after` hooks. */
export async function killAllTracked(): Promise<void> {
  await killTracked(() => true);
}

/** PIDs these helpers started and that are still alive (should be [] at the end of a test file). */
export function trackedAlive(): { pid: number; what: string }[] {
  return [...tracked.values()]
    .filter((t) => isAlive(t.pid) || processGroupMembers(t.pid).length > 0)
    .map((t) => ({ pid: t.pid, what: t.what }));
}

process.on('exit', () => {
  for (const t of tracked.values()) if (groupLooksOurs(t.pid)) signal(t.pid, 'SIGKILL', true);
});
