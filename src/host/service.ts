// What the views and commands talk to, whichever window runs the engine: the state to show,
// a change event, and the user's commands. The leader implements it over its own engine; a
// follower over the leader's channel.
import type { ServiceCommand } from '../core/commandTable';
import type { EngineSnapshot } from '../model/snapshot';

export type { ServiceCommand };

export interface RecoveryService {
  snapshot(): EngineSnapshot;
  onDidChange(listener: () => void): { dispose(): void };
  /** Runs a user command where the engine is (this window, or the leader's). */
  run(command: ServiceCommand, threadId?: string): Promise<void>;
  /** "leader" runs the engine here; "follower" shows the leader's. */
  readonly role: 'leader' | 'follower';
  /** A follower: who leads, once it has welcomed this window (null before, or when it never did). */
  leaderInfo?(): { pid: number; who: string | null } | null;
}
