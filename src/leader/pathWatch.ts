// The leader's backstop: every `checkMs` it checks that `<name>.sock` is still its own socket
// (device and inode) and that its server is still open, and steps down if not. The lease is the
// rule: a leader woken from a stall whose watch runs before its renewal says its lease ran out
// (election.ts asks the lease first).
import type { Log } from './emitter';
import { fileKey, lstatOrNull } from './files';

export interface PathWatchOptions {
  socketPath: string;
  /** The leader's socket file (`dev:ino`). */
  key: string;
  everyMs: number;
  log: Log;
  /** Still the leader this watch was started for. */
  current(): boolean;
  serverClosed(): boolean;
  /** The path (or the server) is no longer ours: step down. */
  lost(reason: string): Promise<void>;
}

export class PathWatch {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: PathWatchOptions) {}

  start(): void {
    this.stop();
    this.timer = setTimeout(() => void this.tick(), this.opts.everyMs);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async tick(): Promise<void> {
    const o = this.opts;
    if (!o.current()) return;
    let reason: string | null = null;
    try {
      const st = await lstatOrNull(o.socketPath);
      if (st === null) reason = 'its socket path was removed';
      else if (fileKey(st) !== o.key) reason = 'its socket path now refers to another socket';
    } catch (e) {
      o.log(`leader election: cannot check ${o.socketPath}: ${(e as Error).message}`);
    }
    if (!o.current()) return;
    if (reason === null && o.serverClosed()) reason = 'its server closed';
    if (reason !== null) {
      await o.lost(reason);
      return;
    }
    this.timer = setTimeout(() => void this.tick(), o.everyMs);
  }
}
