// A window that does not run the engine: it shows the leader's state and sends the user's
// commands to the leader.
import type { EngineSnapshot } from '../model/snapshot';
import { emptySnapshot, EngineSnapshotSchema } from '../model/snapshot';
import { Listeners } from './listeners';
import type { RecoveryService, ServiceCommand } from './service';

/** The leader, as a follower reaches it. */
export interface LeaderLink {
  onState(listener: (snapshot: unknown) => void): void;
  command(name: string, args: unknown[], timeoutMs?: number): Promise<unknown>;
}

export class FollowerHost implements RecoveryService {
  readonly role = 'follower' as const;
  private cached: EngineSnapshot;
  private readonly listeners = new Listeners();

  constructor(
    private readonly link: LeaderLink,
    target: string,
    onProblem: (message: string) => void,
  ) {
    this.cached = emptySnapshot(target, Date.now());
    this.cached.connection = { kind: 'connecting', detail: 'waiting for the window that runs the engine' };
    link.onState((value) => {
      const parsed = EngineSnapshotSchema.safeParse(value);
      if (!parsed.success)
        return onProblem(`ignored a malformed state from the leader: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      this.cached = parsed.data;
      this.listeners.fire();
    });
  }

  snapshot(): EngineSnapshot {
    return this.cached;
  }

  onDidChange(listener: () => void): { dispose(): void } {
    return this.listeners.add(listener);
  }

  async run(command: ServiceCommand, threadId?: string): Promise<void> {
    await this.link.command(command, threadId === undefined ? [] : [threadId], 30_000);
  }
}
