// A window that does not run the engine: it shows the leader's state and sends the user's
// commands to the leader.
import type { LeaderView } from '../leader/electedEngine';
import type { EngineSnapshot } from '../model/snapshot';
import { emptySnapshot } from '../model/snapshot';
import { Listeners } from './listeners';
import type { RecoveryService, ServiceCommand } from './service';

export class FollowerHost implements RecoveryService {
  readonly role = 'follower' as const;
  private cached: EngineSnapshot;
  private readonly listeners = new Listeners();
  private welcomedBy: { pid: number; who: string | null } | null = null;

  /** `leader` hands over each snapshot parsed (the elected engine checks them, once). */
  constructor(
    private readonly leader: LeaderView,
    target: string,
  ) {
    this.cached = emptySnapshot(target, Date.now());
    this.cached.connection = { kind: 'connecting', detail: 'waiting for the engine that leads' };
    leader.welcomed.then(
      (by) => (this.welcomedBy = by),
      () => undefined,
    );
    leader.onState((snapshot) => {
      this.cached = snapshot;
      this.listeners.fire();
    });
  }

  snapshot(): EngineSnapshot {
    return this.cached;
  }

  leaderInfo(): { pid: number; who: string | null } | null {
    return this.welcomedBy;
  }

  onDidChange(listener: () => void): { dispose(): void } {
    return this.listeners.add(listener);
  }

  async run(command: ServiceCommand, threadId?: string): Promise<void> {
    await this.leader.command(command, threadId, 30_000);
  }
}
