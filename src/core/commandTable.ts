// The user's commands, by name, and what each does to the engine: one mapping for every place
// an engine runs (a VS Code window, the headless runner) and for commands that come over the
// leader's channel from another engine's window.
import type { UserActions } from './userActions';

/**
 * Every command, by name (the name of the `UserActions` method that carries it out), and whether
 * it names a thread. The names, the type, the part of the engine the commands use and the dispatch
 * derive from it; the engine's `commands` is that part.
 */
export const COMMAND_TABLE = {
  pauseAll: { thread: false },
  resumeAll: { thread: false },
  pauseGoal: { thread: true },
  arm: { thread: true },
  disarm: { thread: true },
  rearm: { thread: true },
  retryNow: { thread: true },
  refresh: { thread: false },
  reset: { thread: false },
} as const satisfies Record<string, { thread: boolean }>;

export type ServiceCommand = keyof typeof COMMAND_TABLE;
export const COMMANDS = Object.keys(COMMAND_TABLE) as readonly ServiceCommand[];

export function isServiceCommand(name: string): name is ServiceCommand {
  return Object.hasOwn(COMMAND_TABLE, name);
}

/** The part of the engine the commands use (`Engine.commands`): one method a command, of its name. */
export type CommandTarget = Pick<UserActions, ServiceCommand>;

/** Runs a command on an engine's commands; thread commands need a thread id. */
export async function runCommand(target: CommandTarget, command: ServiceCommand, threadId?: string): Promise<void> {
  const { thread } = COMMAND_TABLE[command];
  if (thread && !threadId) throw new Error(`${command} needs a thread`);
  const run = target[command] as (this: CommandTarget, threadId?: string) => Promise<void>;
  return thread ? run.call(target, threadId) : run.call(target);
}

/** A command as it arrives over the leader's channel (`name`, `[threadId?]`), checked. */
export function parseChannelCommand(name: string, args: unknown[]): { command: ServiceCommand; threadId?: string } {
  if (!isServiceCommand(name)) throw new Error(`unknown command ${name}`);
  const threadId = typeof args[0] === 'string' ? args[0] : undefined;
  return threadId === undefined ? { command: name } : { command: name, threadId };
}
