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

/** Starts the watch; returns what stops it. */
export function watchPath(o: PathWatchOptions): () => void {
  let timer: NodeJS.Timeout | undefined;
  const tick = async (): Promise<void> => {
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
    if (reason !== null) return o.lost(reason);
    timer = setTimeout(() => void tick(), o.everyMs);
  };
  timer = setTimeout(() => void tick(), o.everyMs);
  return () => clearTimeout(timer);
}
