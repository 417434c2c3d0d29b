// The headless runner's command line: a public contract that outside checks rely on.
//   codex-goal-recovery watch [--codex-home DIR | --socket PATH | --url ws://… | --stdio]
//                             [--state FILE] [--base-delay S] [--max-delay S] [--max-attempts N] [--json]
//   codex-goal-recovery status [--state FILE]
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { checkWsUrl, defaultCodexHome, defaultSocketPath } from '../protocol/socketSafety';
import type { TransportTarget } from '../protocol/transport';
import { errorText } from '../util/errorText';

export const USAGE = `Usage:
  codex-goal-recovery watch [--codex-home DIR | --socket PATH | --url ws://… | --stdio]
                            [--state FILE] [--base-delay S] [--max-delay S] [--max-attempts N] [--json]
  codex-goal-recovery status [--state FILE]

watch   Runs the recovery engine against a Codex app-server until SIGINT or SIGTERM.
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
  --json             one JSON object per line for every decision
status  Prints the watched threads and their states from the state file.`;

export interface WatchArgs {
  command: 'watch';
  target: TransportTarget;
  statePath: string;
  baseDelayMs?: number;
  maxDelayMs?: number;
  maxAttempts?: number;
  json: boolean;
}
export interface StatusArgs {
  command: 'status';
  statePath: string;
  json: boolean;
}
export type CliArgs = WatchArgs | StatusArgs | { command: 'help' } | { command: 'version' };

export class UsageError extends Error {}

export function defaultStatePath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME?.trim() || path.join(env.HOME?.trim() || os.homedir(), '.local', 'state');
  return path.join(base, 'codex-goal-recovery', 'state.json');
}

export function parseCli(argv: string[], env: NodeJS.ProcessEnv = process.env): CliArgs {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h')
    return { command: 'help' };
  if (command === '--version' || command === 'version') return { command: 'version' };
  if (command !== 'watch' && command !== 'status') throw new UsageError(`unknown command "${command}"`);
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options:
        command === 'watch'
          ? {
              'codex-home': { type: 'string' },
              socket: { type: 'string' },
              url: { type: 'string' },
              stdio: { type: 'boolean' },
              state: { type: 'string' },
              'base-delay': { type: 'string' },
              'max-delay': { type: 'string' },
              'max-attempts': { type: 'string' },
              json: { type: 'boolean' },
              help: { type: 'boolean', short: 'h' },
            }
          : { state: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    throw new UsageError(errorText(error));
  }
  const v = parsed.values as Record<string, string | boolean | undefined>;
  if (v.help) return { command: 'help' };
  const statePath = path.resolve(typeof v.state === 'string' ? v.state : defaultStatePath(env));
  if (command === 'status') return { command, statePath, json: v.json === true };

  const chosen = ['socket', 'url', 'stdio'].filter((k) => v[k] !== undefined);
  if (chosen.length > 1)
    throw new UsageError(`choose one of --socket, --url and --stdio (got ${chosen.map((c) => `--${c}`).join(', ')})`);
  if (v.socket !== undefined && v['codex-home'] !== undefined)
    throw new UsageError('--codex-home and --socket both name the socket: choose one');
  const codexHome = typeof v['codex-home'] === 'string' ? path.resolve(v['codex-home']) : undefined;
  let target: TransportTarget;
  if (typeof v.url === 'string') {
    const check = checkWsUrl(v.url);
    if (!check.ok) throw new UsageError(check.reason);
    target = { kind: 'url', url: v.url };
  } else if (v.stdio) {
    const command = env.CODEX_GOAL_RECOVERY_CODEX?.trim() || 'codex';
    target = {
      kind: 'stdio',
      command,
      args: ['app-server'],
      env: codexHome ? { ...env, CODEX_HOME: codexHome } : { ...env },
    };
  } else {
    const socket =
      typeof v.socket === 'string' ? path.resolve(v.socket) : defaultSocketPath(codexHome ?? defaultCodexHome(env));
    target = { kind: 'socket', path: socket };
  }
  return {
    command,
    target,
    statePath,
    baseDelayMs: seconds(v['base-delay'], '--base-delay'),
    maxDelayMs: seconds(v['max-delay'], '--max-delay'),
    maxAttempts: whole(v['max-attempts'], '--max-attempts'),
    json: v.json === true,
  };
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
