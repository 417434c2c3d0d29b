// The headless runner (dist/cli.js) as a child process, with its --json decisions parsed.
import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { readStateFile } from '../../src/store/jsonFileStore';
import { sleep } from './wait';

export interface RunnerDecision {
  ts: string;
  type: string;
  threadId?: string;
  attempt?: number;
  failedTurnId?: string;
  reason?: string;
  how?: string;
  state?: string;
  detail?: string;
  message?: string;
  [key: string]: unknown;
}

export const CLI = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');

let runtimeDir: string | null = null;
/**
 * A private XDG_RUNTIME_DIR for the runners of this test process (made on first use, removed at
 * exit), so that their leader election never meets a developer's real VS Code windows or runners.
 * Runners on one daemon started with it share one election, as on a real machine.
 */
export function testRuntimeDir(): string {
  if (runtimeDir === null) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-xdg-'));
    runtimeDir = dir;
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  }
  return runtimeDir;
}

let stateHome: string | null = null;
/**
 * A private XDG_STATE_HOME for the runners of this test process (made on first use, removed at
 * exit): a runner started without --state keeps its default file there, never in the real home.
 */
export function testStateHome(): string {
  if (stateHome === null) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-xdg-state-'));
    stateHome = dir;
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  }
  return stateHome;
}

/** What one run of a runner command (`status`, `pause`, ...) printed, and how it exited. */
export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `codex-goal-recovery ARGS…` (dist/cli.js) to its end, asynchronously (an engine that leads
 * in this very process must go on answering meanwhile), in the private XDG_RUNTIME_DIR of this
 * test process unless `env` gives another one. Killed (and the test failed) after `timeoutMs`.
 */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, XDG_RUNTIME_DIR: testRuntimeDir(), XDG_STATE_HOME: testStateHome(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`codex-goal-recovery ${args.join(' ')} did not end within ${timeoutMs} ms\n${stdout}${stderr}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/**
 * `status [--json] --state FILE` as the state file's public reader, for the daemon `target` names
 * (`--codex-home DIR`, `--socket PATH`): in an election directory of its own, where no engine
 * leads, so the file is read even while a runner runs; its exit code says whether a goal waits for
 * a person (1), or the daemon is not running (4). Synchronous, as the readers that use it are.
 */
export function statusOfFile(statePath: string, target: string[], json = true): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [CLI, 'status', ...(json ? ['--json'] : []), '--state', statePath, ...target], {
    encoding: 'utf8',
    timeout: 20_000,
    env: { ...process.env, XDG_RUNTIME_DIR: statusRuntimeDir() },
  });
}

let statusRuntime: string | null = null;
/** The readers' own XDG_RUNTIME_DIR: no engine ever leads there. */
function statusRuntimeDir(): string {
  if (statusRuntime === null) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-xdg-reader-'));
    statusRuntime = dir;
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  }
  return statusRuntime;
}

/** The runner's tuning variables (not flags: the command line is a fixed contract). */
const TUNING = [
  'CODEX_GOAL_RECOVERY_RESYNC_S',
  'CODEX_GOAL_RECOVERY_LIMITER_INTERVAL_S',
  'CODEX_GOAL_RECOVERY_NOTIFY_TIMEOUT_S',
] as const;

export class RunnerProcess {
  readonly decisions: RunnerDecision[] = [];
  readonly stderr: string[] = [];
  readonly child: ChildProcess;
  exitCode: number | null = null;
  /** The signal that ended it (a SIGKILL leaves exitCode null). */
  signalCode: NodeJS.Signals | null = null;
  /** False once the process has exited, whether by itself or by a signal. */
  running = true;
  /** SIGSTOPped by `freeze()` and not yet continued by `thaw()`. */
  frozen = false;
  private readonly exited: Promise<number | null>;
  /** Its stdout and stderr are closed: every line it wrote has been read. */
  private readonly drained: Promise<void>;
  private waiters = new Set<() => void>();

  /**
   * `env` is added to this process's environment. The runner runs with the shipped tuning (resync
   * every 60 s, the limiter's 3 then one per 5 s, the notify timeout 10 s): a tuning variable inherited from the
   * developer's shell is dropped, and a test that needs another value passes it here (e.g.
   * `CODEX_GOAL_RECOVERY_RESYNC_S`) and says why in its header. A short resync saves the state
   * every second and so hides whatever the engine forgot to save when it decided (issue 8).
   * `asBin`: dist/cli.js is executed itself, as a user's `codex-goal-recovery` is: its shebang
   * starts `node` from PATH with the runtime flags the bin ships with (scripts/build.mjs);
   * otherwise this test's Node runs the file (`node dist/cli.js`, without those flags).
   * `command` replaces both: the words that start the runner, before `watch` (e.g. a service
   * unit's ExecStart running an installed package).
   */
  constructor(args: string[], env: NodeJS.ProcessEnv = {}, opts: { asBin?: boolean; command?: string[] } = {}) {
    const inherited = { ...process.env };
    for (const key of TUNING) delete inherited[key];
    // `command`: what starts the runner, before `watch` (an installed package's service line).
    const [file, ...before] = opts.command ?? (opts.asBin ? [CLI] : [process.execPath, CLI]);
    const argv = [...before, 'watch', ...args, '--json'];
    this.child = spawn(file, argv, {
      env: { ...inherited, XDG_RUNTIME_DIR: testRuntimeDir(), XDG_STATE_HOME: testStateHome(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    readline.createInterface({ input: this.child.stdout! }).on('line', (line) => {
      try {
        this.decisions.push(JSON.parse(line) as RunnerDecision);
      } catch {
        this.stderr.push(`unparsable stdout line: ${line}`);
      }
      this.poke();
    });
    readline.createInterface({ input: this.child.stderr! }).on('line', (line) => this.stderr.push(line));
    this.drained = new Promise((resolve) => this.child.once('close', () => resolve()));
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.exitCode = code;
        this.signalCode = signal;
        this.running = false;
        this.poke();
        resolve(code);
      }),
    );
  }

  of(type: string, threadId?: string): RunnerDecision[] {
    return this.decisions.filter((d) => d.type === type && (threadId === undefined || d.threadId === threadId));
  }

  /** Waits until a decision matches; fails with the log so far. */
  async waitFor(match: (d: RunnerDecision) => boolean, timeoutMs: number, what = 'decision'): Promise<RunnerDecision> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.decisions.find(match);
      if (found) return found;
      if (!this.running)
        throw new Error(`runner exited (${this.exitCode ?? this.signalCode}) before ${what}\n${this.transcript()}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}\n${this.transcript()}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.add(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  connected(timeoutMs = 15_000): Promise<RunnerDecision> {
    return this.waitFor((d) => d.type === 'connection' && d.state === 'connected', timeoutMs, 'connection');
  }

  /**
   * SIGSTOP to the runner's own PID: it is stopped as Ctrl-Z, a debugger or a paused VM stops it,
   * its sockets and files left open. Returns when it was sent. `thaw()` continues it; `kill()` and
   * the clean stops continue it first.
   */
  freeze(): number {
    if (!this.running) throw new Error(`runner ${this.child.pid} is not running: cannot SIGSTOP it`);
    process.kill(this.child.pid!, 'SIGSTOP');
    this.frozen = true;
    return Date.now();
  }

  /** SIGCONT to the runner's own PID (a no-op when it is not frozen). Returns when it was sent. */
  thaw(): number {
    if (this.frozen && this.running) {
      try {
        process.kill(this.child.pid!, 'SIGCONT');
      } catch {
        // already gone
      }
    }
    this.frozen = false;
    return Date.now();
  }

  /** SIGINT: the runner saves its state and exits 0. Resolves once every line it wrote is read. */
  async stop(): Promise<number | null> {
    return this.stopWith('SIGINT');
  }

  /** Ends it with `sig` (SIGINT, SIGTERM, SIGHUP: each a clean stop). Resolves once every line it wrote is read. */
  async stopWith(sig: 'SIGINT' | 'SIGTERM' | 'SIGHUP'): Promise<number | null> {
    this.thaw();
    if (this.running) this.signal(sig);
    const code = await this.exited;
    await this.linesRead();
    return code;
  }

  /** SIGKILL: a crash, no chance to save. Resolves once every line it wrote is read. */
  async kill(): Promise<void> {
    // Continued first, so that nothing is left stopped whatever happens to the SIGKILL.
    this.thaw();
    if (this.running) this.signal('SIGKILL');
    await this.exited;
    await this.linesRead();
  }

  /**
   * 'exit' can come before the last lines in the pipe are read; 'close' comes after them (capped:
   * a process it started that kept the pipe open must not hang a test).
   */
  private async linesRead(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.drained,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 5_000);
      }),
    ]);
    clearTimeout(timer);
  }

  transcript(): string {
    return [...this.decisions.map((d) => JSON.stringify(d)), ...this.stderr.map((l) => `stderr: ${l}`)].join('\n');
  }

  private signal(sig: NodeJS.Signals): void {
    try {
      process.kill(-this.child.pid!, sig);
    } catch {
      // already gone
    }
  }

  private poke(): void {
    const w = this.waiters;
    this.waiters = new Set();
    for (const f of w) f();
  }
}

/** A thread's record in a runner's state file (the fields the tests read). */
export interface SavedWatch {
  threadId: string;
  state: { kind: string; [key: string]: unknown };
  pending: { failedTurnId: string; attempt: number } | null;
  recovered: string[];
  history: { outcome: string; failedTurnId: string; detail?: string }[];
  lastFailure: { turnId: string; dueAt: number | null } | null;
  goal: { status: string } | null;
}

/** What a runner's state file and its journal hold now, read as a restarted runner would ({} when absent). */
export async function savedWatches(statePath: string): Promise<Record<string, SavedWatch>> {
  const stored = await readStateFile(statePath);
  if (stored.kind === 'unusable') throw new Error(`${statePath}: ${stored.reason}`);
  return stored.kind === 'state' ? stored.state.watches : {};
}

/** The shipped prepare lead: a recovery's reads and write-ahead start this long before its due time. */
export const PREPARE_LEAD_MS = DEFAULT_OPTIONS.prepareMs;
/** States in which a recovery is planned (due later) or under way. */
const PLANNED = new Set(['backoff', 'usageLimited', 'waitingSlot', 'recovering']);
/** States due at their failure's `dueAt` (where the state file keeps a due time). */
const SCHEDULED = new Set(['backoff', 'usageLimited', 'waitingSlot']);
/** Past a due time by this much, its timer has fired on any loop that is not stalled. */
const PAST_DUE_MS = 100;

/**
 * The one positive wait before "nothing (more) happened" (issue 9): never a fixed sleep, which
 * passes when the runner is merely slow. In order:
 *  1. the wall clock passes the latest due time known (`dueAt`, and every `backoff` line the
 *     runner printed for these threads): whatever was due has had its timer fire;
 *  2. the runner's state file shows, for every thread, a state of the expected kind, no intent
 *     pending and no recovery planned or under way (a state still `backoff`, `usageLimited` or
 *     `recovering` is waited out: past its due time, plus `PAST_DUE_MS`, it must have moved).
 *     The file is written before a decision is announced, so this is the runner's own record
 *     that it has seen and decided what the daemon shows;
 *  3. the runner is stopped cleanly (SIGINT): its stop waits for the work under way (a set whose
 *     timer fired is sent and its reply read), saves and exits 0.
 * Only then may a test read the daemon's record (test/support/daemonJudge.ts) and find nothing
 * more. A runner that never settles fails here, with its saved states and its lines.
 * Returns the state file as the stop left it.
 */
export async function settleAndStop(
  r: RunnerProcess,
  statePath: string,
  expected: Record<string, string | readonly string[]>,
  opts: { dueAt?: number | null; timeoutMs?: number } = {},
): Promise<Record<string, SavedWatch>> {
  await settled(r, statePath, expected, opts);
  const code = await r.stop();
  if (code !== 0) throw new Error(`the runner did not stop cleanly (exit ${code ?? r.signalCode})\n${r.transcript()}`);
  return savedWatches(statePath);
}

/**
 * Steps 1 and 2 of `settleAndStop`, for a runner that must go on running (a leader whose next
 * round follows): past the due times, its state file shows every thread decided as expected,
 * with nothing pending, planned or under way. Returns what the file holds.
 */
export async function settled(
  r: RunnerProcess,
  statePath: string,
  expected: Record<string, string | readonly string[]>,
  opts: { dueAt?: number | null; timeoutMs?: number } = {},
): Promise<Record<string, SavedWatch>> {
  const ids = Object.keys(expected);
  const dues = [opts.dueAt ?? 0, ...ids.flatMap((id) => r.of('backoff', id).map((d) => Number(d.dueAt)))].filter(
    Number.isFinite,
  );
  const latestDue = Math.max(0, ...dues);
  const deadline = Math.max(Date.now(), latestDue) + (opts.timeoutMs ?? 20_000);
  await sleep(latestDue + PAST_DUE_MS - Date.now());
  const kinds = (id: string) => {
    const e = expected[id];
    return typeof e === 'string' ? [e] : e;
  };
  let saved: Record<string, SavedWatch> = {};
  const unsettled = () =>
    ids.filter((id) => {
      const w = saved[id];
      return !w || w.pending !== null || PLANNED.has(w.state.kind) || !kinds(id).includes(w.state.kind);
    });
  for (;;) {
    if (!r.running)
      throw new Error(`runner exited (${r.exitCode ?? r.signalCode}) before it settled\n${r.transcript()}`);
    saved = await savedWatches(statePath).catch(() => ({}));
    const left = unsettled();
    if (left.length === 0) break;
    // A recovery still planned: wait until it is due (its timer fires), then look again.
    const planned = left
      .map((id) => (SCHEDULED.has(saved[id]?.state.kind ?? '') ? saved[id]?.lastFailure?.dueAt : null))
      .filter((d): d is number => typeof d === 'number');
    if (Date.now() > Math.max(deadline, ...planned.map((d) => d + 20_000))) {
      throw new Error(
        `the runner never settled: ${left.map((id) => `${id} expected ${kinds(id).join('|')}, saved ${JSON.stringify(saved[id] ? { state: saved[id].state, pending: saved[id].pending } : null)}`).join('; ')}\n${r.transcript()}`,
      );
    }
    await sleep(Math.max(50, Math.min(500, Math.max(0, ...planned) + PAST_DUE_MS - Date.now())));
  }
  return saved;
}

/**
 * The end of a test with runners: each one's lines printed when `verbose` (a test's diagnostics),
 * then every one killed (continued first if stopped: RunnerProcess.kill), and the list emptied.
 */
export async function endRunners(runners: RunnerProcess[], testName: string, verbose: boolean): Promise<void> {
  if (verbose)
    for (const r of runners)
      process.stdout.write(`# runner ${r.child.pid} (${testName}):\n${r.transcript().replace(/^/gm, '#   ')}\n`);
  for (const r of runners.splice(0)) await r.kill();
}
