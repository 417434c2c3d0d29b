// The user's commands, by name, and what each does to the engine: one mapping for every place
// an engine runs (a VS Code window, the headless runner) and for commands that come over the
// leader's channel from another engine's window.
import type { Engine } from './engine';

export const COMMANDS = [
  'pauseAll',
  'resumeAll',
  'pauseGoal',
  'arm',
  'disarm',
  'rearm',
  'retryNow',
  'refresh',
  'reset',
] as const;
export type ServiceCommand = (typeof COMMANDS)[number];

export function isServiceCommand(name: string): name is ServiceCommand {
  return (COMMANDS as readonly string[]).includes(name);
}

/** The part of the engine the commands use. */
export type CommandTarget = Pick<
  Engine,
  'pauseAll' | 'resumeAll' | 'pauseGoal' | 'arm' | 'disarm' | 'rearm' | 'retryNow' | 'resync' | 'reset'
>;

/** Runs a command on an engine; thread commands need a thread id. */
export async function runCommand(engine: CommandTarget, command: ServiceCommand, threadId?: string): Promise<void> {
  const need = (): string => {
    if (!threadId) throw new Error(`${command} needs a thread`);
    return threadId;
  };
  switch (command) {
    case 'pauseAll':
      return engine.pauseAll();
    case 'resumeAll':
      return engine.resumeAll();
    case 'pauseGoal':
      return engine.pauseGoal(need());
    case 'arm':
      return engine.arm(need());
    case 'disarm':
      return engine.disarm(need());
    case 'rearm':
      return engine.rearm(need());
    case 'retryNow':
      return engine.retryNow(need());
    case 'refresh':
      return engine.resync();
    case 'reset':
      return engine.reset();
  }
}

/** A command as it arrives over the leader's channel (`name`, `[threadId?]`), checked. */
export function parseChannelCommand(name: string, args: unknown[]): { command: ServiceCommand; threadId?: string } {
  if (!isServiceCommand(name)) throw new Error(`unknown command ${name}`);
  const threadId = typeof args[0] === 'string' ? args[0] : undefined;
  return threadId === undefined ? { command: name } : { command: name, threadId };
}
