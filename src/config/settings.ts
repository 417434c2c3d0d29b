// The extension's settings (`codexGoalRecovery.*`), read into engine options and a target.
// Where the daemon is and what runs are machine-scoped: a workspace cannot choose them.
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { DEFAULT_OPTIONS, POLICY_LIMITS, type EngineOptions } from '../core/options';
import { defaultCodexHome, defaultSocketPath } from '../protocol/socketSafety';
import type { SharedTarget } from '../protocol/transport';

export const SECTION = 'codexGoalRecovery';
export type NotificationLevel = 'attention' | 'all' | 'none';

export interface Settings {
  codexHome: string;
  socketPath: string;
  codexPath: string;
  notifications: NotificationLevel;
  options: EngineOptions;
  /** The opt-in OpenTelemetry export (docs/telemetry.md): empty and false, nothing is sent. */
  telemetry: { otlpEndpoint: string; useCodexOtelConfig: boolean };
}

/**
 * A machine-scoped setting: the user's (or the remote machine's) value, else the default; `fallback`
 * when that is not of the fallback's type (or not a finite number). Never a workspace or folder value,
 * even if one is there (VS Code ignores those for machine settings; this does not rely on it): a
 * workspace must not choose what runs or which socket is trusted.
 */
function machine<T>(config: vscode.WorkspaceConfiguration, key: string, fallback: T): T {
  const i = config.inspect<unknown>(key);
  const value = i?.globalValue ?? i?.defaultValue;
  return typeof value === typeof fallback && (typeof value !== 'number' || Number.isFinite(value))
    ? (value as T)
    : fallback;
}

// The engine's policy, machine-wide like the daemon it acts on: whichever window leads, and
// whatever workspace it has open (a trusted one or not), the same values. Each number is kept
// inside its range (POLICY_LIMITS, the manifest's `minimum` and `maximum`, the runner's bounds).
function machineNumber(config: vscode.WorkspaceConfiguration, key: keyof typeof POLICY_LIMITS, fallback: number) {
  const { min, max } = POLICY_LIMITS[key];
  return Math.min(max, Math.max(min, machine(config, key, fallback)));
}

export function readSettings(
  config: vscode.WorkspaceConfiguration = vscode.workspace.getConfiguration(SECTION),
  env: NodeJS.ProcessEnv = process.env,
): Settings {
  const home = expand(machine(config, 'codexHome', '').trim()) || defaultCodexHome(env);
  const socket = expand(machine(config, 'socketPath', '').trim()) || defaultSocketPath(home);
  const ms = (key: 'baseDelaySeconds' | 'maxDelaySeconds' | 'resyncIntervalSeconds', fallbackMs: number) =>
    Math.round(machineNumber(config, key, fallbackMs / 1000) * 1000);
  const baseDelayMs = ms('baseDelaySeconds', DEFAULT_OPTIONS.baseDelayMs);
  return {
    codexHome: home,
    socketPath: socket,
    codexPath: expand(machine(config, 'codexPath', 'codex').trim()) || 'codex',
    // How this window tells its person: a window's own choice.
    notifications: config.get<NotificationLevel>('notifications', 'attention'),
    options: {
      ...DEFAULT_OPTIONS,
      baseDelayMs,
      maxDelayMs: Math.max(baseDelayMs, ms('maxDelaySeconds', DEFAULT_OPTIONS.maxDelayMs)),
      maxAttempts: Math.floor(machineNumber(config, 'maxAttempts', DEFAULT_OPTIONS.maxAttempts)),
      recoveryBudget: Math.floor(machineNumber(config, 'recoveryBudget', DEFAULT_OPTIONS.recoveryBudget)),
      autoArm: machine(config, 'autoArm', DEFAULT_OPTIONS.autoArm),
      recoverUsageLimited: machine(config, 'recoverUsageLimited', DEFAULT_OPTIONS.recoverUsageLimited),
      resyncMs: ms('resyncIntervalSeconds', DEFAULT_OPTIONS.resyncMs),
    },
    // Machine-wide like the daemon: a workspace cannot send this machine's decisions anywhere.
    telemetry: {
      otlpEndpoint: machine(config, 'telemetry.otlpEndpoint', '').trim(),
      useCodexOtelConfig: machine(config, 'telemetry.useCodexOtelConfig', false),
    },
  };
}

export function targetOf(settings: Settings): SharedTarget {
  return { kind: 'socket', path: settings.socketPath };
}

function expand(p: string): string {
  if (p === '~') return os.homedir();
  if (p.startsWith('~/')) return path.join(os.homedir(), p.slice(2));
  return p;
}
