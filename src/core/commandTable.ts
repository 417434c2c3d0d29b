// The user's commands, by name, and what each does to the engine: one mapping for every place
// an engine runs (a VS Code window, the headless runner) and for commands that come over the
// leader's channel from another engine's window.
import type { Engine } from './engine';

/**
 * Every command, by name: whether it names a thread, and the engine's method that carries it out.
 * The names, the type, the part of the engine the commands use and the dispatch derive from it.
 */
export const COMMAND_TABLE = {
  pauseAll: { thread: false, method: 'pauseAll' },
  resumeAll: { thread: false, method: 'resumeAll' },
  pauseGoal: { thread: true, method: 'pauseGoal' },
  arm: { thread: true, method: 'arm' },
  disarm: { thread: true, method: 'disarm' },
  rearm: { thread: true, method: 'rearm' },
  retryNow: { thread: true, method: 'retryNow' },
  refresh: { thread: false, method: 'resync' },
  reset: { thread: false, method: 'reset' },
} as const satisfies Record<string, { thread: boolean; method: keyof Engine }>;

export type ServiceCommand = keyof typeof COMMAND_TABLE;
export const COMMANDS = Object.keys(COMMAND_TABLE) as readonly ServiceCommand[];

export function isServiceCommand(name: string): name is ServiceCommand {
  return Object.hasOwn(COMMAND_TABLE, name);
}

/** The part of the engine the commands use. */
export type CommandTarget = Pick<Engine, (typeof COMMAND_TABLE)[ServiceCommand]['method']>;

/** Runs a command on an engine; thread commands need a thread id. */
export async function runCommand(engine: CommandTarget, command: ServiceCommand, threadId?: string): Promise<void> {
  const { thread, method } = COMMAND_TABLE[command];
  if (thread && !threadId) throw new Error(`${command} needs a thread`);
  const run = engine[method] as (this: CommandTarget, threadId?: string) => Promise<void>;
  return thread ? run.call(engine, threadId) : run.call(engine);
}

/** A command as it arrives over the leader's channel (`name`, `[threadId?]`), checked. */
export function parseChannelCommand(name: string, args: unknown[]): { command: ServiceCommand; threadId?: string } {
  if (!isServiceCommand(name)) throw new Error(`unknown command ${name}`);
  const threadId = typeof args[0] === 'string' ? args[0] : undefined;
  return threadId === undefined ? { command: name } : { command: name, threadId };
}
