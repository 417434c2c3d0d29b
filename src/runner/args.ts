// The headless runner's command line: a public contract that outside checks rely on.
//   codex-goal-recovery watch [--codex-home DIR | --socket PATH | --url ws://… | --stdio]
//                             [--state FILE] [--base-delay S] [--max-delay S] [--max-attempts N]
//                             [--recovery-budget N] [--json] [--verbose]
//                             [--otlp-endpoint URL | --otlp-from-codex-config] [--notify PROGRAM]
//   codex-goal-recovery status [--state FILE] [--json] [target]
//   codex-goal-recovery pause | resume | arm THREAD | disarm THREAD | rearm THREAD | retry THREAD [--json] [target]
// (the whole text and the exit codes: USAGE below; docs/runner.md)
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { checkWsUrl, defaultCodexHome, defaultSocketPath } from '../protocol/socketSafety';
import type { SharedTarget, TransportTarget } from '../protocol/transport';
import { errorText } from '../util/errorText';
import { checkEndpoint } from '../telemetry/destination';
import type { TelemetryChoice } from '../telemetry/index';
import { parseNotifyCommand } from './notify';

export const USAGE = `Usage:
  codex-goal-recovery watch [--codex-home DIR | --socket PATH | --url ws://… | --stdio]
                            [--state FILE] [--base-delay S] [--max-delay S] [--max-attempts N]
                            [--recovery-budget N] [--json] [--verbose]
                            [--otlp-endpoint URL | --otlp-from-codex-config] [--notify PROGRAM]
  codex-goal-recovery status [--state FILE] [--json] [--codex-home DIR | --socket PATH | --url ws://…]
  codex-goal-recovery pause | resume [--json] [--codex-home DIR | --socket PATH | --url ws://…]
  codex-goal-recovery arm | disarm | rearm | retry THREAD [--json] [--codex-home DIR | --socket PATH | --url ws://…]
  codex-goal-recovery help | --help | -h        this text
  codex-goal-recovery version | --version | -V  the version

watch   Runs the recovery engine against a Codex app-server until SIGINT, SIGTERM or SIGHUP.
        Default: the daemon's control socket under $CODEX_HOME (default ~/.codex).
  --codex-home DIR   Codex home whose daemon socket to use (with --stdio: the child's CODEX_HOME)
  --socket PATH      a daemon control socket (WebSocket over a Unix socket)
  --url ws://…       an app-server started with --listen ws://127.0.0.1:PORT (loopback only)
  --stdio            start a private \`codex app-server\` child and talk over its stdio
                     (the executable: $CODEX_GOAL_RECOVERY_CODEX, else \`codex\` on PATH)
  --state FILE       where the watch state is kept (default: $XDG_STATE_HOME/codex-goal-recovery/state.json)
  --base-delay S     backoff base in seconds, fractions allowed (default 30)
  --max-delay S      backoff cap in seconds (default 1800)
  --max-attempts N   consecutive failed recoveries before giving up (default 6)
  --recovery-budget N  automatic recoveries per goal in a rolling 24 h, then it waits for a
                     person: retry, or disarm and rearm (default 12)
  --json             one JSON object per line for every decision (a fatal error too: type "fatal"),
                     each with a "level": error, warning, notice, info or debug. Plain lines on a
                     systemd journal stream start with their syslog priority (journalctl -p warning)
  --verbose          also election diagnostics and other debug lines (type "debug" under --json)
  --otlp-endpoint URL  also export the decisions (log records, the thread as conversation.id) and
                     counters (recoveries, give-ups, wasted turns, time in backoff) as OTLP/HTTP JSON
                     to URL/v1/logs and URL/v1/metrics (e.g. http://127.0.0.1:4318). Only ids,
                     states, counts, delays and error codes: never a goal's text
  --otlp-from-codex-config  the same, to the otlp-http exporter of Codex's own [otel] table in
                     $CODEX_HOME/config.toml (or --codex-home's), with its headers; an otlp-grpc
                     or "none" exporter exports nothing, and the runner says why
  --notify PROGRAM   run PROGRAM (no shell; or a JSON array: ["python3","hook.py"]) with one JSON
                     argument when a goal gives up, needs a person or spends its recovery budget
status  Shows the engine that watches the daemon (a runner or a VS Code window): who leads, its
        policy, its watched threads and their states. When no engine runs, the state file instead
        (--state), and says so. --json: one object, the same shape from either source.
pause   Pauses auto-recovery for every thread, in the engine that leads (resume: undoes it).
arm     Watches THREAD from now on (a goal the engine did not adopt); an older failure is never recovered.
disarm  Stops recovering THREAD until rearm.
rearm   Arms THREAD again after a disarm (or a person's pause of its goal).
retry   Makes THREAD's scheduled (given-up, budget-spent) recovery due now.
        These talk to whichever engine leads for the daemon (the target flags as for watch; --stdio
        has no election: nothing can reach a private daemon's engine). --json: one object.

Exit codes: 0 done (status: nothing needs attention); 1 a goal needs attention or gave up (status),
the engine refused the command, or an error; 2 usage; 3 no engine runs for the daemon (pause, resume,
arm, disarm, rearm, retry; status then reads the state file and exits 0 or 1 by what it holds).`;

export interface WatchArgs {
  command: 'watch';
  target: TransportTarget;
  statePath: string;
  baseDelayMs?: number;
  maxDelayMs?: number;
  maxAttempts?: number;
  recoveryBudget?: number;
  json: boolean;
  verbose: boolean;
  /** The OpenTelemetry export, when asked for (docs/telemetry.md); null: nothing is sent. */
  otlp: TelemetryChoice | null;
  /** --notify: the program's argv (the JSON argument is appended), or null. */
  notify: string[] | null;
}
/** A target another engine may lead for: a daemon's socket or URL (a private stdio child has no election). */
export type { SharedTarget };
export interface StatusArgs {
  command: 'status';
  statePath: string;
  json: boolean;
  /** The daemon whose leading engine to ask. */
  target: SharedTarget;
}
/** The commands sent to the leading engine, by their name on the command line. */
export const CONTROL_COMMANDS = {
  pause: 'pauseAll',
  resume: 'resumeAll',
  arm: 'arm',
  disarm: 'disarm',
  rearm: 'rearm',
  retry: 'retryNow',
} as const;
export type ControlVerb = keyof typeof CONTROL_COMMANDS;
export interface ControlArgs {
  command: 'control';
  verb: ControlVerb;
  /** The thread, for arm, disarm, rearm and retry; null for pause and resume. */
  threadId: string | null;
  json: boolean;
  target: SharedTarget;
}
export type CliArgs = WatchArgs | StatusArgs | ControlArgs | { command: 'help' } | { command: 'version' };

export class UsageError extends Error {}

export function defaultStatePath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME?.trim() || path.join(env.HOME?.trim() || os.homedir(), '.local', 'state');
  return path.join(base, 'codex-goal-recovery', 'state.json');
}

const TARGET_OPTIONS = {
  'codex-home': { type: 'string' },
  socket: { type: 'string' },
  url: { type: 'string' },
  stdio: { type: 'boolean' },
} as const;

function isControlVerb(command: string): command is ControlVerb {
  return Object.prototype.hasOwnProperty.call(CONTROL_COMMANDS, command);
}

export function parseCli(argv: string[], env: NodeJS.ProcessEnv = process.env): CliArgs {
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError('no command given');
  if (command === 'help' || command === '--help' || command === '-h') return { command: 'help' };
  if (command === '--version' || command === '-V' || command === 'version') return { command: 'version' };
  if (command !== 'watch' && command !== 'status' && !isControlVerb(command))
    throw new UsageError(`unknown command "${command}"`);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: isControlVerb(command),
      options:
        command === 'watch'
          ? {
              ...TARGET_OPTIONS,
              state: { type: 'string' },
              'base-delay': { type: 'string' },
              'max-delay': { type: 'string' },
              'max-attempts': { type: 'string' },
              'recovery-budget': { type: 'string' },
              json: { type: 'boolean' },
              verbose: { type: 'boolean' },
              'otlp-endpoint': { type: 'string' },
              'otlp-from-codex-config': { type: 'boolean' },
              notify: { type: 'string' },
              help: { type: 'boolean', short: 'h' },
            }
          : command === 'status'
            ? {
                ...TARGET_OPTIONS,
                state: { type: 'string' },
                json: { type: 'boolean' },
                help: { type: 'boolean', short: 'h' },
              }
            : { ...TARGET_OPTIONS, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    throw new UsageError(errorText(error));
  }
  const v = parsed.values as Record<string, string | boolean | undefined>;
  if (v.help) return { command: 'help' };
  if (isControlVerb(command)) {
    const needsThread = command !== 'pause' && command !== 'resume';
    const positionals = parsed.positionals;
    if (needsThread && positionals.length !== 1)
      throw new UsageError(`${command} takes one thread id (got ${positionals.length})`);
    if (!needsThread && positionals.length > 0)
      throw new UsageError(`${command} takes no thread (it acts on every thread): got "${positionals.join(' ')}"`);
    const threadId = needsThread ? positionals[0].trim() : null;
    if (threadId === '') throw new UsageError(`${command} takes a thread id, not an empty string`);
    return {
      command: 'control',
      verb: command,
      threadId,
      json: v.json === true,
      target: sharedTarget(command, v, env),
    };
  }
  const statePath = path.resolve(typeof v.state === 'string' ? v.state : defaultStatePath(env));
  if (command === 'status') return { command, statePath, json: v.json === true, target: sharedTarget(command, v, env) };
  return {
    command,
    target: parseTarget(v, env),
    statePath,
    baseDelayMs: seconds(v['base-delay'], '--base-delay'),
    maxDelayMs: seconds(v['max-delay'], '--max-delay'),
    maxAttempts: whole(v['max-attempts'], '--max-attempts'),
    recoveryBudget: whole(v['recovery-budget'], '--recovery-budget'),
    json: v.json === true,
    verbose: v.verbose === true,
    otlp: otlpChoice(v, env),
    notify: notifyArgv(v.notify),
  };
}

/** `--notify PROGRAM` (src/runner/notify.ts reads it), or null. */
function notifyArgv(value: string | boolean | undefined): string[] | null {
  if (typeof value !== 'string') return null;
  const argv = parseNotifyCommand(value);
  if (typeof argv === 'string') throw new UsageError(`--notify ${argv}`);
  return argv;
}

/** `--otlp-endpoint URL | --otlp-from-codex-config` (the Codex home: --codex-home's, else $CODEX_HOME's). */
function otlpChoice(v: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): TelemetryChoice | null {
  const endpoint = v['otlp-endpoint'];
  if (typeof endpoint === 'string' && v['otlp-from-codex-config'])
    throw new UsageError('--otlp-endpoint and --otlp-from-codex-config both name where to export: choose one');
  if (typeof endpoint === 'string') {
    const wrong = checkEndpoint(endpoint.trim());
    if (wrong) throw new UsageError(`--otlp-endpoint: ${wrong}`);
    return { kind: 'endpoint', url: endpoint.trim() };
  }
  if (!v['otlp-from-codex-config']) return null;
  const home = typeof v['codex-home'] === 'string' ? path.resolve(v['codex-home']) : defaultCodexHome(env);
  return { kind: 'codexConfig', codexHome: home };
}

/** The target of a command that talks to the leading engine: as for watch, but never --stdio. */
function sharedTarget(command: string, v: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv) {
  const target = parseTarget(v, env);
  if (target.kind === 'stdio')
    throw new UsageError(
      `${command}: --stdio has no election: a private \`codex app-server\` child's engine cannot be reached by any other process; name the daemon with --codex-home, --socket or --url`,
    );
  return target;
}

/** `--codex-home DIR | --socket PATH | --url ws://… | --stdio`, default the daemon socket under $CODEX_HOME. */
function parseTarget(v: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): TransportTarget {
  const chosen = ['socket', 'url', 'stdio'].filter((k) => v[k] !== undefined);
  if (chosen.length > 1)
    throw new UsageError(`choose one of --socket, --url and --stdio (got ${chosen.map((c) => `--${c}`).join(', ')})`);
  if (v.socket !== undefined && v['codex-home'] !== undefined)
    throw new UsageError('--codex-home and --socket both name the socket: choose one');
  const codexHome = typeof v['codex-home'] === 'string' ? path.resolve(v['codex-home']) : undefined;
  if (typeof v.url === 'string') {
    const check = checkWsUrl(v.url);
    if (!check.ok) throw new UsageError(check.reason);
    return { kind: 'url', url: v.url };
  }
  if (v.stdio) {
    const command = env.CODEX_GOAL_RECOVERY_CODEX?.trim() || 'codex';
    return {
      kind: 'stdio',
      command,
      args: ['app-server'],
      env: codexHome ? { ...env, CODEX_HOME: codexHome } : { ...env },
    };
  }
  const socket =
    typeof v.socket === 'string' ? path.resolve(v.socket) : defaultSocketPath(codexHome ?? defaultCodexHome(env));
  return { kind: 'socket', path: socket };
}

function seconds(value: string | boolean | undefined, flag: string): number | undefined {
  if (value === undefined || typeof value !== 'string') return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0)
    throw new UsageError(`${flag} takes a positive number of seconds (got "${value}")`);
  return Math.round(n * 1000);
}

function whole(value: string | boolean | undefined, flag: string): number | undefined {
  if (value === undefined || typeof value !== 'string') return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new UsageError(`${flag} takes a whole number of at least 1 (got "${value}")`);
  return n;
}
