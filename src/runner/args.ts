// The headless runner's command line: a public contract that outside checks rely on (the whole
// text and the exit codes: USAGE below; docs/runner.md).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { checkWsUrl, defaultCodexHome, defaultSocketPath } from '../protocol/socketSafety';
import type { SharedTarget, TransportTarget } from '../protocol/transport';
import { errorText } from '../util/errorText';
import { checkEndpoint } from '../telemetry/destination';
import type { TelemetryChoice } from '../telemetry/index';
import { DEFAULT_OPTIONS, POLICY_LIMITS } from '../core/options';
import { defaultStatePath } from './stateFile';
import { parseNotifyCommand } from './notify';

/** Each command's usage line(s), as `help` and the command's own `--help` print them. */
const USAGE_LINES = {
  watch: `  codex-goal-recovery watch [--codex-home DIR | --socket PATH | --url ws://… | --stdio]
                            [--state FILE] [--base-delay S] [--max-delay S] [--max-attempts N]
                            [--recovery-budget N] [--json] [--verbose]
                            [--otlp-endpoint URL | --otlp-from-codex-config] [--notify PROGRAM]`,
  status: `  codex-goal-recovery status [--state FILE] [--json] [--codex-home DIR | --socket PATH | --url ws://…]`,
  control: `  codex-goal-recovery pause | resume [--json] [--codex-home DIR | --socket PATH | --url ws://…]
  codex-goal-recovery arm | disarm | rearm | retry THREAD [--json] [--codex-home DIR | --socket PATH | --url ws://…]`,
};

/** What each command does, and its flags. */
const COMMAND_TEXT = {
  watch: `watch   Runs the recovery engine against a Codex app-server until SIGINT, SIGTERM or SIGHUP
        (or, piped, its first line after the reader of its output went away).
        Default: the daemon's control socket under $CODEX_HOME (default ~/.codex).
  --codex-home DIR   Codex home whose daemon socket to use (with --stdio: the child's CODEX_HOME);
                     it must be a directory
  --socket PATH      a daemon control socket (WebSocket over a Unix socket)
  --url ws://…       an app-server started with --listen ws://127.0.0.1:PORT (loopback only)
  --stdio            start a private \`codex app-server\` child and talk over its stdio
                     (the executable: $CODEX_GOAL_RECOVERY_CODEX, else \`codex\` on PATH)
  --state FILE       where the watch state is kept (default: one file per daemon,
                     $XDG_STATE_HOME/codex-goal-recovery/state-<daemon>.json); a file another
                     daemon's engine keeps is refused
  --base-delay S     backoff base in seconds, fractions allowed, ${range('baseDelaySeconds')} (default 30)
  --max-delay S      backoff cap in seconds, ${range('maxDelaySeconds')}, not below --base-delay (default 1800)
  --max-attempts N   consecutive failed recoveries before giving up, ${range('maxAttempts')} (default 6)
  --recovery-budget N  automatic recoveries per goal in a rolling 24 h, ${range('recoveryBudget')}, then it
                     waits for a person: retry, or disarm and rearm (default 12)
  --json             one JSON object per line for every decision (a fatal error too: type "fatal"),
                     each with a "level": error, warning, notice, info or debug. Plain lines on a
                     systemd journal stream start with their syslog priority (journalctl -p warning)
  --verbose          also election diagnostics and other debug lines (type "debug" under --json,
                     and the quiet reconnect tries while the daemon is away)
  --otlp-endpoint URL  also export the decisions (log records, the thread as conversation.id) and
                     counters (recoveries, give-ups, wasted turns, time in backoff) as OTLP/HTTP JSON
                     to URL/v1/logs and URL/v1/metrics (e.g. http://127.0.0.1:4318). Only ids,
                     states, counts, delays and error codes: never a goal's text
  --otlp-from-codex-config  the same, to the otlp-http exporter of Codex's own [otel] table in
                     $CODEX_HOME/config.toml (or --codex-home's), with its headers; an otlp-grpc
                     or "none" exporter exports nothing, and the runner says why
  --notify PROGRAM   run PROGRAM (no shell; or a JSON array: ["python3","hook.py"]) with one JSON
                     argument when a goal gives up, needs a person or spends its recovery budget`,
  status: `status  Shows the engine that watches the daemon (a runner or a VS Code window): who leads, its
        policy, its watched threads and their states, and whether the daemon is running. When no
        engine runs, the daemon's state file instead (--state; default: that daemon's own file),
        and says so. --json: one object, the same shape from either source.`,
  control: `pause   Pauses auto-recovery for every thread, in the engine that leads (resume: undoes it).
arm     Watches THREAD from now on (a goal the engine did not adopt); an older failure is never recovered.
disarm  Stops recovering THREAD until rearm.
rearm   Arms THREAD again after a disarm (or a person's pause of its goal).
retry   Makes THREAD's scheduled (given-up, budget-spent) recovery due now.
        These talk to whichever engine leads for the daemon (the target flags as for watch; --stdio
        has no election: nothing can reach a private daemon's engine). --json: one object.`,
};

const EXIT_TEXT = `Exit codes: 0 done (status: nothing needs attention); 1 a goal needs attention or gave up (status),
the engine refused the command, or an error; 2 usage (a flag value that cannot work too); 3 no engine
runs for the daemon (pause, resume, arm, disarm, rearm, retry; status then reads the state file and
exits 0 or 1 by what it holds); 4 status: the daemon is not running.`;

export const USAGE = `Usage:
${Object.values(USAGE_LINES).join('\n')}
  codex-goal-recovery help [COMMAND] | COMMAND --help | --help | -h    this text, or a command's
  codex-goal-recovery version | --version | -V  the version

${Object.values(COMMAND_TEXT).join('\n')}

${EXIT_TEXT}`;

/** A command's help: its usage, what it does, its flags and the exit codes. */
export function commandHelp(command: HelpTopic): string {
  return `Usage:\n${USAGE_LINES[command]}\n\n${COMMAND_TEXT[command]}\n\n${EXIT_TEXT}`;
}

/** "from 0.1 to 3600": a policy number's bounds, the extension's settings' own. */
function range(key: keyof typeof POLICY_LIMITS): string {
  return `from ${POLICY_LIMITS[key].min} to ${POLICY_LIMITS[key].max}`;
}

export interface WatchArgs {
  command: 'watch';
  target: TransportTarget;
  statePath: string;
  /** Whether `statePath` is the daemon's default file (no --state): only it takes over the shared one. */
  defaultState: boolean;
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
  /** Whether `statePath` is the daemon's default file (no --state). */
  defaultState: boolean;
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
/** What `help` is about: everything (null), or one command's (its `--help`, `help COMMAND`). */
export type HelpTopic = keyof typeof USAGE_LINES;
export type CliArgs =
  WatchArgs | StatusArgs | ControlArgs | { command: 'help'; topic: HelpTopic | null } | { command: 'version' };

export class UsageError extends Error {}

type Values = Record<string, string | boolean | undefined>;

/** The help topic of a command's name (pause, retry, ... share the control commands' help). */
function helpTopic(command: string): HelpTopic | null {
  if (command === 'watch' || command === 'status') return command;
  return isControlVerb(command) ? 'control' : null;
}

/** Flags that take a number (and their bounds): a negative one (`--base-delay -1`) is their value, out of range. */
const NUMBER_FLAGS = {
  'base-delay': 'baseDelaySeconds',
  'max-delay': 'maxDelaySeconds',
  'max-attempts': 'maxAttempts',
  'recovery-budget': 'recoveryBudget',
} as const;

function joinNegativeNumbers(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const next = args[i + 1] ?? '';
    if (args[i].startsWith('--') && Object.hasOwn(NUMBER_FLAGS, args[i].slice(2)) && /^-\.?\d/.test(next)) {
      out.push(`${args[i]}=${next}`);
      i += 1;
    } else out.push(args[i]);
  }
  return out;
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

const TARGET_OPTIONS = {
  'codex-home': { type: 'string' },
  socket: { type: 'string' },
  url: { type: 'string' },
  stdio: { type: 'boolean' },
} as const;

const HELP = { help: { type: 'boolean', short: 'h' } } as const;
/** The flags of each command (docs/runner.md's flag table lists watch's, checked by runnerDoc.test.ts). */
export const WATCH_OPTIONS = {
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
  ...HELP,
} as const;
const STATUS_OPTIONS = { ...TARGET_OPTIONS, state: { type: 'string' }, json: { type: 'boolean' }, ...HELP } as const;
const CONTROL_OPTIONS = { ...TARGET_OPTIONS, json: { type: 'boolean' }, ...HELP } as const;

function isControlVerb(command: string): command is ControlVerb {
  return Object.prototype.hasOwnProperty.call(CONTROL_COMMANDS, command);
}

/**
 * The command line as its command's arguments. `isDir` tells whether a path is a directory
 * (`--codex-home` must be one): the file system's answer unless a test gives its own.
 */
export function parseCli(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  isDir: (p: string) => boolean = isDirectory,
): CliArgs {
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError('no command given');
  if (command === 'help' || command === '--help' || command === '-h') {
    if (rest.length === 0) return { command: 'help', topic: null };
    const topic = rest.length === 1 ? helpTopic(rest[0]) : null;
    if (topic === null) throw new UsageError(`help takes one command's name (got "${rest.join(' ')}")`);
    return { command: 'help', topic };
  }
  if (command === '--version' || command === '-V' || command === 'version') return { command: 'version' };
  if (command !== 'watch' && command !== 'status' && !isControlVerb(command))
    throw new UsageError(`unknown command "${command}"`);
  let parsed;
  try {
    parsed = parseArgs({
      args: joinNegativeNumbers(rest),
      strict: true,
      allowPositionals: isControlVerb(command),
      options: command === 'watch' ? WATCH_OPTIONS : command === 'status' ? STATUS_OPTIONS : CONTROL_OPTIONS,
    });
  } catch (error) {
    throw new UsageError(errorText(error));
  }
  const v = parsed.values as Values;
  if (v.help) return { command: 'help', topic: helpTopic(command) };
  const json = v.json === true;
  const home = v['codex-home'];
  if (typeof home === 'string' && !isDir(path.resolve(home)))
    throw new UsageError(
      `--codex-home ${home}: not a directory${home.trim() === '' ? '' : ` (${path.resolve(home)})`}: name the Codex home whose daemon to watch (it holds app-server-control/)`,
    );
  if (isControlVerb(command)) {
    const needsThread = command !== 'pause' && command !== 'resume';
    const positionals = parsed.positionals;
    if (needsThread && positionals.length !== 1)
      throw new UsageError(`${command} takes one thread id (got ${positionals.length})`);
    if (!needsThread && positionals.length > 0)
      throw new UsageError(`${command} takes no thread (it acts on every thread): got "${positionals.join(' ')}"`);
    const threadId = needsThread ? positionals[0].trim() : null;
    if (threadId === '') throw new UsageError(`${command} takes a thread id, not an empty string`);
    return { command: 'control', verb: command, threadId, json, target: sharedTarget(command, v, env) };
  }
  const target = command === 'status' ? sharedTarget(command, v, env) : parseTarget(v, env);
  const given = typeof v.state === 'string' ? v.state : undefined;
  if (given !== undefined && given.trim() === '')
    throw new UsageError('--state takes a file name, not an empty string');
  const statePath = path.resolve(given ?? defaultStatePath(target, env));
  const defaultState = given === undefined;
  if (command === 'status') return { command, statePath, defaultState, json, target: target as SharedTarget };
  const baseDelayMs = policyNumber(v, 'base-delay');
  const maxDelayMs = policyNumber(v, 'max-delay');
  const base = baseDelayMs ?? DEFAULT_OPTIONS.baseDelayMs;
  if ((maxDelayMs ?? DEFAULT_OPTIONS.maxDelayMs) < base)
    throw new UsageError(
      maxDelayMs === undefined
        ? `--base-delay ${base / 1000} is above the backoff cap (${DEFAULT_OPTIONS.maxDelayMs / 1000} s): give --max-delay too, at least as large`
        : `--max-delay ${maxDelayMs / 1000} is below --base-delay ${base / 1000}: the cap must be at least the base`,
    );
  return {
    command,
    target,
    statePath,
    defaultState,
    baseDelayMs,
    maxDelayMs,
    maxAttempts: policyNumber(v, 'max-attempts'),
    recoveryBudget: policyNumber(v, 'recovery-budget'),
    json,
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
function otlpChoice(v: Values, env: NodeJS.ProcessEnv): TelemetryChoice | null {
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
function sharedTarget(command: string, v: Values, env: NodeJS.ProcessEnv) {
  const target = parseTarget(v, env);
  if (target.kind === 'stdio')
    throw new UsageError(
      `${command}: --stdio has no election: a private \`codex app-server\` child's engine cannot be reached by any other process; name the daemon with --codex-home, --socket or --url`,
    );
  return target;
}

/** `--codex-home DIR | --socket PATH | --url ws://… | --stdio`, default the daemon socket under $CODEX_HOME. */
function parseTarget(v: Values, env: NodeJS.ProcessEnv): TransportTarget {
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

/**
 * A number flag within the policy's bounds: `--base-delay S`, `--max-delay S` in seconds (fractions
 * allowed), as ms; `--max-attempts N`, `--recovery-budget N` a whole number.
 */
function policyNumber(v: Values, flag: keyof typeof NUMBER_FLAGS): number | undefined {
  const value = v[flag];
  if (typeof value !== 'string') return undefined;
  const key = NUMBER_FLAGS[flag];
  const inSeconds = key === 'baseDelaySeconds' || key === 'maxDelaySeconds';
  const n = Number(value);
  const { min, max } = POLICY_LIMITS[key];
  if (value.trim() === '' || !(inSeconds ? Number.isFinite(n) : Number.isSafeInteger(n)) || n < min || n > max)
    throw new UsageError(
      `--${flag} takes ${inSeconds ? 'a number of seconds' : 'a whole number'} ${range(key)} (got "${value}")`,
    );
  return inSeconds ? Math.round(n * 1000) : n;
}
