// What every section of the daemon probe (test/measure/probe.ts) shares: its arguments, the
// results it writes, its output, and its helpers (the order of what a client saw, temporary
// working directories, rollout lines, one failing turn, the binaries measured).
import { readdirSync, readFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import type { MockMode, MockModel } from '../../src/demo/mockModes';
import { codexBinary, codexEnv, codexShim, timeVersion } from '../../src/demo/codexBinary';
import type { CodexHome } from '../../src/demo/codexHome';
import { sleep, stopProcessGroup } from '../../src/demo/codexProcesses';
import { startThreadWithGoal, waitTurnCompleted } from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import { describe, type LogEntry } from '../../src/demo/userClientLog';
import type { Json } from '../support/json';

const args = process.argv.slice(2);
export const jsonOut = args.includes('--json') ? args[args.indexOf('--json') + 1] : undefined;
const only = args.includes('--only') ? new Set(args[args.indexOf('--only') + 1].split(',')) : undefined;
export const want = (k: string) => !only || only.has(k);

export const results: Record<string, Json> = {};
export const tempDirs: string[] = [];

export function out(line = ''): void {
  process.stdout.write(line + '\n');
}

export function section(title: string): void {
  out('');
  out(`## ${title}`);
}

/** Log entries about `threadId` (and replies) after `since`, rendered with `describe`. */
export function order(
  c: UserClient<Json>,
  threadId: string,
  since: number,
  filter?: (e: LogEntry<Json>) => boolean,
): string[] {
  return c.log
    .filter(
      (e) => e.seq > since && (e.kind === 'response' || e.params?.threadId === threadId) && (!filter || filter(e)),
    )
    .map(describe);
}

const KEY_METHODS = new Set([
  'thread/goal/updated',
  'thread/goal/cleared',
  'thread/status/changed',
  'error',
  'turn/started',
  'turn/completed',
  'serverRequest/resolved',
]);
export const keyOnly = (e: LogEntry<Json>) => e.kind !== 'notification' || KEY_METHODS.has(e.method);

export async function tempCwd(): Promise<string> {
  const d = await fs.mkdtemp(path.join(os.tmpdir(), 'cgr-probe-cwd-'));
  tempDirs.push(d);
  return d;
}

export interface FailureCase {
  mode: MockMode;
  threadId: string;
  ms: number;
  mockRequests: number;
  order: string[];
  errors: Json[];
  turnStatus: string;
  turnError: Json;
  rateLimitsUpdated: Json[];
  goalAfter: Json;
  threadStatusAfter: Json;
}

export async function failureCase(c: UserClient<Json>, mock: MockModel, mode: MockMode): Promise<FailureCase> {
  mock.setMode(mode);
  const before = mock.requests;
  const t0 = Date.now();
  const t = await startThreadWithGoal(c, `probe ${mode}`, { cwd: await tempCwd() });
  const done = await waitTurnCompleted(c, t.threadId, undefined, 90_000, t.goalSetSeq);
  const ms = Date.now() - t0;
  await sleep(400); // trailing notifications
  const goal = (await c.request('thread/goal/get', { threadId: t.threadId })).goal;
  const thread = (await c.request('thread/read', { threadId: t.threadId })).thread;
  const errors = c.notifications
    .filter((n) => n.seq > t.goalSetSeq && n.method === 'error' && n.params?.threadId === t.threadId)
    .map((n) => ({
      willRetry: n.params.willRetry,
      message: n.params.error?.message,
      codexErrorInfo: n.params.error?.codexErrorInfo,
      additionalDetails: n.params.error?.additionalDetails,
    }));
  const rateLimitsUpdated = c.notifications
    .filter((n) => n.seq > t.goalSetSeq && n.seq <= done.seq && n.method === 'account/rateLimits/updated')
    .map((n) => n.params);
  return {
    mode,
    rateLimitsUpdated,
    threadId: t.threadId,
    ms,
    mockRequests: mock.requests - before,
    order: order(c, t.threadId, t.goalSetSeq, keyOnly),
    errors,
    turnStatus: done.params.turn.status,
    turnError: done.params.turn.error,
    goalAfter: goal?.status,
    threadStatusAfter: thread.status,
  };
}

export async function rolloutLines(file: string): Promise<string[]> {
  try {
    return (await fs.readFile(file, 'utf8')).split('\n').filter((l) => l.trim());
  } catch {
    return [];
  }
}

/** Rollout lines that mention goals. */
export function goalLines(lines: string[]): string[] {
  return lines.filter((l) => /goal/i.test(l));
}

/** `type/payload.type` of each rollout line (a compact shape of what was appended). */
export function lineTypes(lines: string[]): string[] {
  return lines.map((l) => {
    try {
      const j = JSON.parse(l) as {
        type?: string;
        payload?: { type?: string; role?: string; content?: { text?: string }[] };
      };
      const src = /source=\\?"([a-z_]+)\\?"/.exec(j.payload?.content?.[0]?.text ?? '')?.[1];
      return `${j.type}/${j.payload?.type}${j.payload?.role ? ':' + j.payload.role : ''}${src ? `(source=${src})` : ''}`;
    } catch {
      return '?';
    }
  });
}

export async function measureBinaries(home: CodexHome): Promise<Json> {
  const res: Json = { native: codexBinary(), shim: codexShim(), version: {}, initialize: {} };
  for (const [name, bin] of [
    ['native', codexBinary()],
    ['shim', codexShim()],
  ] as const) {
    const v: number[] = [];
    for (let i = 0; i < 5; i++) v.push(Math.round(timeVersion(bin).ms));
    res.version[name] = v;
    const init: number[] = [];
    const procs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      const child = spawn(bin, ['app-server'], {
        env: codexEnv(home.dir),
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const c = await UserClient.overStdio<Json>(child);
      init.push(Date.now() - t0);
      // processes in the child's group: the shim on Node 20 is node + native codex
      procs.push(countGroup(child.pid ?? 0));
      const exitP = new Promise<string>((r) => child.once('exit', (code, sig) => r(`${code ?? sig}`)));
      await c.close(); // stdin EOF
      const how = await Promise.race([exitP, sleep(3000).then(() => 'still running 3 s after stdin EOF')]);
      await stopProcessGroup(child);
      res.exitOnStdinEof = how;
    }
    res.initialize[name] = init;
    res[`${name}ProcessesInGroup`] = procs;
  }
  return res;
}

function countGroup(pgid: number): number {
  let n = 0;
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const s = readFileSync(`/proc/${e}/stat`, 'utf8');
      const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
      if (Number(rest[2]) === pgid && rest[0] !== 'Z') n++;
    } catch {
      /* gone */
    }
  }
  return n;
}

/** What a section runs against: the user's connection `a`, the mock model, the CODEX_HOME, the clients to close. */
export interface Probe {
  a: UserClient<Json>;
  mock: MockModel;
  home: CodexHome;
  clients: UserClient<Json>[];
}
