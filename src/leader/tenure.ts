// A leader's tenure: its term, its lease and its renewals (lease.ts says why and how long).
// Begun when a candidate holds the path: the term is one above every term known (the leader
// file's, and any a follower heard of), written into a new leader file; then every `renewMs` the
// lease is renewed, the followers get a beat and the file its renewal time. A renewal that comes
// after the lease ran out renews nothing: `lost` is called, and the leader steps down.
import type { Log } from './emitter';
import { Lease, LeaderFileWriter, readLeaderFile } from './lease';

export interface TenureOptions {
  /** The leader file (`<name>.leader`). */
  filePath: string;
  /** The highest term this process heard of as a follower. */
  seenTerm: number;
  leaseMs: number;
  /** How often the lease is renewed (RENEW_MS). */
  renewMs: number;
  who: string;
  /** The leader's socket file (`dev:ino`). */
  socketKey: string;
  /** The leader's server: told the term, and beats at every renewal. */
  server: { setTerm(term: number): void; beat(): void };
  log: Log;
  /** The lease ran out before a renewal: step down. */
  lost(reason: string): void;
}

export class Tenure {
  private timer: NodeJS.Timeout | undefined;
  private file: LeaderFileWriter | undefined;

  private constructor(
    readonly term: number,
    private readonly lease: Lease,
    private readonly opts: TenureOptions,
  ) {}

  /** Takes the next term and starts renewing. */
  static async begin(opts: TenureOptions): Promise<Tenure> {
    const lease = new Lease(opts.leaseMs);
    let fileTerm = 0;
    try {
      fileTerm = (await readLeaderFile(opts.filePath))?.term ?? 0;
    } catch (e) {
      opts.log(`leader election: cannot read the leader file ${opts.filePath}: ${(e as Error).message}`);
    }
    const tenure = new Tenure(Math.max(fileTerm, opts.seenTerm) + 1, lease, opts);
    opts.server.setTerm(tenure.term);
    const now = Date.now();
    try {
      tenure.file = await LeaderFileWriter.create(opts.filePath, {
        term: tenure.term,
        pid: process.pid,
        who: opts.who,
        socket: opts.socketKey,
        since: now,
        renewedAt: now,
      });
    } catch (e) {
      opts.log(`leader election: cannot write the leader file ${opts.filePath}: ${(e as Error).message}`);
    }
    tenure.schedule();
    return tenure;
  }

  /** Null while the lease holds; else why this leader may not act. */
  check(): string | null {
    return this.lease.check();
  }

  /** Ends the lease now (for good). */
  revoke(reason: string): void {
    this.lease.revoke(reason);
  }

  /**
   * Stops renewing, ends the lease and closes the leader file (left in place: it keeps the term).
   * Nothing renews after it: the one pending renewal is cleared, and a renewal running calls it
   * only from `lost`, after which it schedules nothing.
   */
  end(reason: string): void {
    clearTimeout(this.timer);
    this.lease.revoke(`this engine no longer leads (${reason})`);
    void this.file?.close();
  }

  private schedule(): void {
    this.timer = setTimeout(() => this.renew(), this.opts.renewMs);
    this.timer.unref();
  }

  private renew(): void {
    const lost = this.lease.check();
    if (lost !== null) {
      this.opts.lost(lost);
      return;
    }
    this.lease.renew();
    this.opts.server.beat();
    this.file?.renew(Date.now()).catch((e: unknown) => {
      this.opts.log(`leader election: cannot renew the leader file: ${(e as Error).message}`);
    });
    this.schedule();
  }
}
