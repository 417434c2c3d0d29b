// The extension's settings (`codexGoalRecovery.*`), read into engine options and a target.
// Where the daemon is and what runs are machine-scoped: a workspace cannot choose them.
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { DEFAULT_OPTIONS, type EngineOptions } from '../core/options';
import { defaultCodexHome, defaultSocketPath } from '../protocol/socketSafety';
import type { TransportTarget } from '../protocol/transport';

export const SECTION = 'codexGoalRecovery';
export type NotificationLevel = 'attention' | 'all' | 'none';

export interface Settings {
  codexHome: string;
  socketPath: string;
  codexPath: string;
  notifications: NotificationLevel;
  options: EngineOptions;
}

/**
 * A machine-scoped setting: the user's (or the remote machine's) value, else the default. Never a
 * workspace or folder value, even if one is there (VS Code ignores those for machine settings;
 * this does not rely on it): a workspace must not choose what runs or which socket is trusted.
 */
function machineSetting(config: vscode.WorkspaceConfiguration, key: string, fallback: string): string {
  const i = config.inspect<unknown>(key);
  const value = i?.globalValue ?? i?.defaultValue;
  return typeof value === 'string' ? value : fallback;
}

export function readSettings(
  config: vscode.WorkspaceConfiguration = vscode.workspace.getConfiguration(SECTION),
  env: NodeJS.ProcessEnv = process.env,
): Settings {
  const home = expand(machineSetting(config, 'codexHome', '').trim()) || defaultCodexHome(env);
  const socket = expand(machineSetting(config, 'socketPath', '').trim()) || defaultSocketPath(home);
  const seconds = (key: string, fallbackMs: number, min: number) =>
    Math.round(Math.max(min, config.get<number>(key, fallbackMs / 1000)) * 1000);
  const baseDelayMs = seconds('baseDelaySeconds', DEFAULT_OPTIONS.baseDelayMs, 0.1);
  return {
    codexHome: home,
    socketPath: socket,
    codexPath: expand(machineSetting(config, 'codexPath', 'codex').trim()) || 'codex',
    notifications: config.get<NotificationLevel>('notifications', 'attention'),
    options: {
      ...DEFAULT_OPTIONS,
      baseDelayMs,
      maxDelayMs: Math.max(baseDelayMs, seconds('maxDelaySeconds', DEFAULT_OPTIONS.maxDelayMs, 0.1)),
      maxAttempts: Math.max(1, Math.floor(config.get<number>('maxAttempts', DEFAULT_OPTIONS.maxAttempts))),
      autoArm: config.get<boolean>('autoArm', true),
      recoverUsageLimited: config.get<boolean>('recoverUsageLimited', true),
      resyncMs: seconds('resyncIntervalSeconds', DEFAULT_OPTIONS.resyncMs, 1),
    },
  };
}

export function targetOf(settings: Settings): TransportTarget {
  return { kind: 'socket', path: settings.socketPath };
}

function expand(p: string): string {
  if (p === '~') return os.homedir();
  if (p.startsWith('~/')) return path.join(os.homedir(), p.slice(2));
  return p;
}
