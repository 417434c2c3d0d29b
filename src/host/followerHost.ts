// A window that does not run the engine: it shows the leader's state and sends the user's
// commands to the leader. While the leader has not answered for a while (stopped or blocked:
// src/leader/lease.ts) it shows that instead of the leader's last countdown.
import type { LeaderView } from '../leader/electedEngine';
import type { Quiet } from '../leader/election';
import { emptySnapshot, type EngineSnapshot } from '../model/snapshot';
import { Listeners } from './listeners';
import type { RecoveryService, ServiceCommand } from './service';

export class FollowerHost implements RecoveryService {
  readonly role = 'follower' as const;
  private cached: EngineSnapshot;
  private readonly listeners = new Listeners();
  private welcomedBy: { pid: number; who: string | null } | null = null;
  private quiet: Quiet | null = null;

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
    leader.onQuiet((quiet) => {
      this.quiet = quiet;
      this.listeners.fire();
    });
  }

  snapshot(): EngineSnapshot {
    const q = this.quiet;
    if (q === null) return this.cached;
    // What the leader pushed last is stale: no countdown, and the reason instead.
    return { ...this.cached, connection: { kind: 'unresponsive', detail: silentText(q) }, nextDueAt: null };
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

/** "the engine (runner, pid 4711) has not answered for 12 s" */
export function silentText(q: Quiet): string {
  const who = q.leaderPid === null ? '' : ` (${q.leaderWho ?? 'engine'}, pid ${q.leaderPid})`;
  return `the engine${who} has not answered for ${Math.floor(q.silentMs / 1000)} s`;
}
