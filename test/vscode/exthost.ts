// Crashing a real VS Code extension host, and reading what it left behind: the extension host's
// PID (found by walking code-server's process tree from the process group a test started, never
// by name), the extension's globalState as the workbench stores it, and the extension's log.
//
// Where globalState lives in code-server 4.139.1 (measured, docs/globalstate-durability.md): in
// the BROWSER, not on the server. The workbench's storage service keeps it in memory and writes
// it to IndexedDB (database `vscode-web-state-db-global`, object store `ItemTable`, key = the
// extension id, value = the extension's whole globalState as one JSON text). The user-data dir
// has no state.vscdb. The extension host sends each `globalState.update` to the workbench over
// RPC; the update's promise resolves when the workbench has it in memory.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';

/** The processes under `pid` (children first found through /proc/<pid>/task/*\/children). */
export function descendants(pid: number): number[] {
  const out: number[] = [];
  const walk = (p: number): void => {
    let tasks: string[];
    try {
      tasks = fs.readdirSync(`/proc/${p}/task`);
    } catch {
      return; // gone
    }
    for (const task of tasks) {
      let kids: string[];
      try {
        kids = fs.readFileSync(`/proc/${p}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
      } catch {
        continue;
      }
      for (const k of kids) {
        const child = Number(k);
        if (!out.includes(child)) {
          out.push(child);
          walk(child);
        }
      }
    }
  };
  walk(pid);
  return out;
}

function cmdline(pid: number): string[] {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/** A zombie or a process already gone does not count. */
function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/**
 * The live extension hosts under code-server's process `root` (the wrapper a test started, whose
 * pid is its process group): processes of its tree started as `bootstrap-fork --type=extensionHost`.
 */
export function extensionHostPids(root: number): number[] {
  return descendants(root).filter((pid) => alive(pid) && cmdline(pid).includes('--type=extensionHost'));
}

/** Waits until exactly one extension host other than `except` runs under `root`; returns it. */
export async function waitForExtensionHost(
  root: number,
  timeoutMs: number,
  except: readonly number[] = [],
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = extensionHostPids(root).filter((p) => !except.includes(p));
    if (pids.length === 1) return pids[0];
    if (Date.now() > deadline)
      throw new Error(
        `expected one extension host under ${root}${except.length ? ` besides ${except.join(', ')}` : ''}, found ${JSON.stringify(pids)}`,
      );
    await sleep(50);
  }
}

/** SIGKILLs `pid` and waits until it is gone (reaped or a zombie). */
export async function killHard(pid: number, timeoutMs = 10_000): Promise<void> {
  process.kill(pid, 'SIGKILL');
  const deadline = Date.now() + timeoutMs;
  while (alive(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} still alive ${timeoutMs} ms after SIGKILL`);
    await sleep(10);
  }
}

/** The IndexedDB database the workbench keeps application (and default-profile) storage in. */
export const WEB_STATE_DB = 'vscode-web-state-db-global';

/**
 * The extension's globalState as the workbench's IndexedDB holds it now (what a reloaded window
 * serves the next extension host), parsed; undefined when there is none.
 */
export async function readStoredGlobalState(
  page: Page,
  extensionId: string,
): Promise<Record<string, unknown> | undefined> {
  const text = await page.evaluate(
    async ({ db, key }) => {
      // (No DOM lib in this tsconfig: the page's indexedDB is typed by hand.)
      interface Req<T> {
        result: T;
        error: unknown;
        onsuccess: (() => void) | null;
        onerror: (() => void) | null;
      }
      const idb = (
        globalThis as unknown as {
          indexedDB: {
            open(name: string): Req<{
              objectStoreNames: { contains(n: string): boolean };
              transaction(s: string, m: string): { objectStore(s: string): { get(k: string): Req<unknown> } };
              close(): void;
            }>;
          };
        }
      ).indexedDB;
      const wait = <T>(r: Req<T>) =>
        new Promise<T>((resolve, reject) => {
          r.onsuccess = () => resolve(r.result);
          r.onerror = () => reject(new Error(String(r.error)));
        });
      const conn = await wait(idb.open(db));
      try {
        if (!conn.objectStoreNames.contains('ItemTable')) return null;
        const value = await wait(conn.transaction('ItemTable', 'readonly').objectStore('ItemTable').get(key));
        return typeof value === 'string' ? value : null;
      } finally {
        conn.close();
      }
    },
    { db: WEB_STATE_DB, key: extensionId },
  );
  return text === null ? undefined : (JSON.parse(text) as Record<string, unknown>);
}

/** A watched thread as the stored globalState (readStoredGlobalState) holds it, or null. */
export interface StoredWatch {
  kind: string;
  attempt?: number;
  dueAt?: number;
  failures: number;
  failedTurnId?: string;
}

export function storedWatch(value: Record<string, unknown> | undefined, threadId: string): StoredWatch | null {
  const state = value?.['codexGoalRecovery.state'] as
    | {
        watches?: Record<
          string,
          {
            state: { kind: string; attempt?: number; failedTurnId?: string };
            failures: number;
            lastFailure: { dueAt: number | null } | null;
          }
        >;
      }
    | undefined;
  const w = state?.watches?.[threadId];
  if (!w) return null;
  return {
    kind: w.state.kind,
    attempt: w.state.attempt,
    dueAt: ['backoff', 'usageLimited', 'waitingSlot'].includes(w.state.kind)
      ? (w.lastFailure?.dueAt ?? undefined)
      : undefined,
    failures: w.failures,
    failedTurnId: w.state.failedTurnId,
  };
}

/** Every "Codex Goal Recovery.log" the extension hosts of this user-data dir wrote. */
export function extensionLogFiles(userDataDir: string): string[] {
  const out: string[] = [];
  const logs = path.join(userDataDir, 'logs');
  for (const session of safeReaddir(logs)) {
    for (const host of safeReaddir(path.join(logs, session))) {
      const file = path.join(logs, session, host, 'codex-goal-recovery.codex-goal-recovery', 'Codex Goal Recovery.log');
      if (fs.existsSync(file)) out.push(file);
    }
  }
  // exthost10 after exthost9: by the numbers in the path, not as strings.
  return out.sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}

/** The last `n` lines of each window's extension log, for a failure message ('' when none is written yet). */
export function extensionLogTails(userDataDir: string, n: number): string {
  return extensionLogFiles(userDataDir)
    .map((f, i) => {
      const lines = fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).slice(-n);
      return `\n  extension log of window ${i + 1} (last ${lines.length} lines, ${f}):\n    ${lines.join('\n    ')}`;
    })
    .join('');
}

/** The lines of the extension logs that are not among `before` (extensionLogFiles() earlier). */
export function newExtensionLogLines(userDataDir: string, before: readonly string[]): string[] {
  return extensionLogFiles(userDataDir)
    .filter((f) => !before.includes(f))
    .flatMap((f) => fs.readFileSync(f, 'utf8').split('\n').filter(Boolean));
}

/** All lines of every extension log, oldest host first. */
export function extensionLogLines(userDataDir: string): string[] {
  return extensionLogFiles(userDataDir).flatMap((f) => fs.readFileSync(f, 'utf8').split('\n').filter(Boolean));
}

/** Waits for a log line that matches `re` and is not among `seen` lines; returns it. */
export async function waitForLogLine(
  userDataDir: string,
  re: RegExp,
  timeoutMs: number,
  pollMs = 20,
): Promise<{ line: string; seenAt: number }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const line = extensionLogLines(userDataDir).find((l) => re.test(l));
    if (line) return { line, seenAt: Date.now() };
    if (Date.now() > deadline) throw new Error(`no log line matching ${re} within ${timeoutMs} ms`);
    await sleep(pollMs);
  }
}

function safeReaddir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
