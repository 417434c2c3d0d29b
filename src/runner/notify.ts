// `watch --notify PROGRAM`: an operator's hook, as Codex's own `notify` (config.toml: an argv to
// which Codex appends one JSON argument). When a goal gives up, needs a person or has spent its
// recovery budget, the runner runs PROGRAM with one more argument, a JSON object (docs/runner.md,
// "--notify"); never for a routine line. No shell: the argv as given. A run is never awaited by
// the engine (a slow program delays no recovery); at most `maxRunning` run at once (more are
// dropped, and the count said once when the storm is over); each gets `timeoutMs`, then SIGTERM
// and SIGKILL to its own process group; its output is read and dropped (the runner's stdout is a
// JSON-lines stream), the first line of its stderr kept for a failure's message. A failure (it
// cannot start, exits non-zero, is killed, times out) is said once, and again only after a run
// has worked in between. The payload carries ids, states, counts, the runner's own reason and
// the thread's title (as the runner's lines do): never a goal's objective.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Decision } from '../model/decision';
import type { Watch } from '../model/watch';
import { VERSION } from '../version';

/** How long one run may take before it is stopped (SIGTERM, then SIGKILL after `KILL_GRACE_MS`). */
export const NOTIFY_TIMEOUT_MS = 10_000;
/** Between the SIGTERM to a run's process group and the SIGKILL. */
export const KILL_GRACE_MS = 1_000;
/** Runs at once at most; an event beyond them is dropped (and counted). */
export const NOTIFY_MAX_RUNNING = 4;
/** How long the runner's stop waits for the runs still going (then they are stopped). */
export const NOTIFY_STOP_MS = 2_000;
/** The longest `reason` and `title` a payload carries (an argument has a size limit). */
export const TEXT_MAX = 1_000;

/** The JSON argument: every key always present (null where the event has no such value). */
export interface NotifyPayload {
  source: 'codex-goal-recovery';
  version: string;
  type: 'gave-up' | 'attention' | 'budget-spent';
  ts: string;
  target: string;
  threadId: string;
  title: string | null;
  reason: string | null;
  attempts: number | null;
  failedTurnId: string | null;
  used: number | null;
  limit: number | null;
}

/** What a payload knows beyond the decision: when, the daemon, this runner, the thread as the engine has it. */
export interface NotifyContext {
  now: number;
  target: string;
  version: string;
  /** The thread's watch, read when the decision is announced (after the save that holds it), or null. */
  watch: Pick<Watch, 'title' | 'state'> | null;
}

function clip(text: string): string {
  return text.length > TEXT_MAX ? `${text.slice(0, TEXT_MAX - 1)}…` : text;
}

/** The payload for a decision that asks for a person, else null (every routine decision). */
export function notifyPayload(d: Decision, ctx: NotifyContext): NotifyPayload | null {
  if (d.type !== 'gave-up' && d.type !== 'attention') return null;
  const base = {
    source: 'codex-goal-recovery' as const,
    version: ctx.version,
    ts: new Date(ctx.now).toISOString(),
    target: ctx.target,
    threadId: d.threadId,
    title: ctx.watch === null ? null : clip(ctx.watch.title),
    attempts: null,
    failedTurnId: null,
    used: null,
    limit: null,
  };
  if (d.type === 'gave-up')
    return { ...base, type: 'gave-up', reason: null, attempts: d.attempts, failedTurnId: d.failedTurnId };
  // A spent budget is the thread's state (budgetSpent), not words of the reason: read it there.
  const state = ctx.watch?.state;
  if (state?.kind === 'budgetSpent')
    return { ...base, type: 'budget-spent', reason: clip(d.reason), used: state.used, limit: state.limit };
  return { ...base, type: 'attention', reason: clip(d.reason) };
}

/**
 * `--notify`'s value as an argv: a JSON array of strings (Codex's `notify = [...]` form, e.g.
 * `["python3", "/path/hook.py"]`), else the whole value as the program (never split, no shell).
 * A string: what is wrong with it.
 */
export function parseNotifyCommand(value: string): string[] | string {
  if (value.trim() === '') return 'takes a program (got an empty value)';
  if (!value.trimStart().startsWith('[')) return [value];
  let argv: unknown;
  try {
    argv = JSON.parse(value);
  } catch {
    return `takes a JSON array of strings when its value starts with "[" (got ${value})`;
  }
  if (!Array.isArray(argv) || !argv.every((a): a is string => typeof a === 'string'))
    return `takes a JSON array of strings, the program first (got ${value})`;
  if (argv.length === 0 || argv[0].trim() === '') return `takes the program first in its array (got ${value})`;
  return argv;
}

export interface NotifierOptions {
  /** The daemon, as the runner names it (the payload's `target`). */
  target: string;
  /** The thread's watch, when the engine watches it (its title, its state). */
  watchOf?: (threadId: string) => Pick<Watch, 'title' | 'state'> | null;
  timeoutMs?: number;
  maxRunning?: number;
  /** A run that worked (--verbose: a debug line). */
  log?: (message: string) => void;
}

/** A notify line: `warning` for a failure or a drop, `notice` when the program works again. */
export type NotifyReport = (level: 'warning' | 'notice', fields: Record<string, unknown>, message: string) => void;

/** Why a run was stopped: past its time, or at the runner's stop. */
type StopWhy = 'timeout' | 'stop';

interface Run {
  ended: Promise<void>;
  /** SIGTERM to its process group now, SIGKILL after `KILL_GRACE_MS`. */
  stopNow: (why: StopWhy) => void;
}

export class Notifier {
  private readonly running = new Set<Run>();
  private readonly timeoutMs: number;
  private readonly maxRunning: number;
  /** A failure was said, and no run has worked since: later failures are counted, not said. */
  private failing = false;
  private unsaid = 0;
  private dropped = 0;

  constructor(
    private readonly argv: readonly string[],
    private readonly report: NotifyReport,
    private readonly opts: NotifierOptions,
  ) {
    this.timeoutMs = opts.timeoutMs ?? NOTIFY_TIMEOUT_MS;
    this.maxRunning = opts.maxRunning ?? NOTIFY_MAX_RUNNING;
  }

  /** A decision of the engine: the program runs for one that asks for a person, never for the rest. */
  decided(d: Decision, now = Date.now()): void {
    const watch = 'threadId' in d && d.threadId ? (this.opts.watchOf?.(d.threadId) ?? null) : null;
    const payload = notifyPayload(d, { now, target: this.opts.target, version: VERSION, watch });
    if (payload) this.notify(payload);
  }

  /** Runs the program for `payload`, unless `maxRunning` runs are going (then it is dropped). Never waits. */
  notify(payload: NotifyPayload): void {
    if (this.running.size >= this.maxRunning) {
      this.dropped++;
      return;
    }
    const what = `${payload.type} ${payload.threadId}`;
    const [program, ...args] = this.argv;
    let child: ChildProcess;
    try {
      child = spawn(program, [...args, JSON.stringify(payload)], {
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (error) {
      this.failed(what, `cannot be started: ${(error as Error).message}`);
      return;
    }
    let stderr = '';
    child.stdout?.resume();
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    let stopped: StopWhy | null = null;
    let killTimer: NodeJS.Timeout | undefined;
    const signalGroup = (sig: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, sig);
      } catch {
        // already gone
      }
    };
    const stopNow = (why: StopWhy) => {
      if (killTimer) return;
      stopped = why;
      signalGroup('SIGTERM');
      killTimer = setTimeout(() => signalGroup('SIGKILL'), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => stopNow('timeout'), this.timeoutMs);
    const started = Date.now();
    const run: Run = {
      stopNow,
      ended: new Promise<void>((resolve) => {
        let done = false;
        const finish = (message: string | null) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          clearTimeout(killTimer);
          // Whatever it left holding its pipes (a child in the background) does not hold the runner.
          child.stdout?.destroy();
          child.stderr?.destroy();
          this.running.delete(run);
          if (message === null) this.worked(what, Date.now() - started);
          else this.failed(what, message);
          if (this.running.size === 0) this.sayDropped();
          resolve();
        };
        child.once('error', (error) => finish(`cannot be started: ${error.message}`));
        child.once('exit', (code, signal) => {
          // Its stderr may still be in the pipe: read it for a moment, then go on.
          const t = setTimeout(() => finish(this.outcome(code, signal, stopped, stderr)), 200);
          child.once('close', () => {
            clearTimeout(t);
            finish(this.outcome(code, signal, stopped, stderr));
          });
        });
      }),
    };
    this.running.add(run);
  }

  /**
   * The runner stops: the runs still going get what is left of their time, up to `limitMs`, then
   * are stopped (SIGTERM, SIGKILL); resolves once every one ended.
   */
  async stop(limitMs = NOTIFY_STOP_MS): Promise<void> {
    const runs = [...this.running];
    if (runs.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(runs.map((r) => r.ended)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, limitMs);
      }),
    ]);
    clearTimeout(timer);
    for (const r of this.running) r.stopNow('stop');
    await Promise.all(runs.map((r) => r.ended));
  }

  private outcome(code: number | null, signal: NodeJS.Signals | null, stopped: StopWhy | null, stderr: string) {
    const first = stderr.split('\n', 1)[0].trim().slice(0, 200);
    const said = first ? ` (its stderr: ${first})` : '';
    if (stopped === 'timeout') return `did not end within ${this.timeoutMs / 1000} s: stopped${said}`;
    if (stopped === 'stop') return `had not ended when the runner stopped: stopped${said}`;
    if (code === 0) return null;
    return `${code !== null ? `exited with ${code}` : `was ended by ${signal}`}${said}`;
  }

  private worked(what: string, ms: number): void {
    this.opts.log?.(`notify: ${this.argv[0]} ran for ${what} (exit 0, ${ms} ms)`);
    if (!this.failing) return;
    this.failing = false;
    const unsaid = this.unsaid;
    this.unsaid = 0;
    this.report(
      'notice',
      { outcome: 'works' },
      `notify: ${this.argv[0]} works again${unsaid > 0 ? ` (${unsaid} more failed run(s) not said)` : ''}`,
    );
  }

  private failed(what: string, why: string): void {
    if (this.failing) {
      this.unsaid++;
      return;
    }
    this.failing = true;
    this.report(
      'warning',
      { outcome: 'failed' },
      `notify: ${this.argv[0]} for ${what} ${why}; said once until a run works again`,
    );
  }

  private sayDropped(): void {
    if (this.dropped === 0) return;
    const n = this.dropped;
    this.dropped = 0;
    this.report(
      'warning',
      { outcome: 'dropped', dropped: n },
      `notify: ${n} event(s) not notified: ${this.maxRunning} runs of ${this.argv[0]} were already going`,
    );
  }
}
