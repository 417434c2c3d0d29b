// What the views and commands talk to, whichever window runs the engine: the state to show,
// a change event, and the user's commands. The leader implements it over its own engine; a
// follower over the leader's channel.
import type { EngineSnapshot } from '../model/snapshot';

export const COMMANDS = ['pauseAll', 'resumeAll', 'pauseGoal', 'disarm', 'rearm', 'retryNow', 'refresh', 'reset'] as const;
export type ServiceCommand = (typeof COMMANDS)[number];

export function isServiceCommand(name: string): name is ServiceCommand {
  return (COMMANDS as readonly string[]).includes(name);
}

export interface RecoveryService {
  snapshot(): EngineSnapshot;
  onDidChange(listener: () => void): { dispose(): void };
  /** Runs a user command where the engine is (this window, or the leader's). */
  run(command: ServiceCommand, threadId?: string): Promise<void>;
  /** "leader" runs the engine here; "follower" shows the leader's. */
  readonly role: 'leader' | 'follower';
}
