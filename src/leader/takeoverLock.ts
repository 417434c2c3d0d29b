// The takeover lock `<name>.takeover`: only its holder may remove a socket that is not its own
// (the dead leader's, see electionAttempt.ts).
//
// A file created atomically with its owner's pid and a token (written to a temporary file, then
// `link`ed: exclusive, never seen half-written). A lock whose owner pid is dead, or older than
// 10 s, or that does not read as a lock, is stale: it is renamed aside (atomic; of two breakers
// only one succeeds), and the renamed file's token is checked to be the one judged stale (if
// not, it is put back).
import { promises as fsp } from 'node:fs';
import type { Log } from './emitter';
import { errCode, linkNew, pidAlive, removeIfStill, token, unlinkQuiet } from './files';

/** A takeover lock older than this is stale even if its owner pid seems alive (pid reuse). */
export const LOCK_STALE_MS = 10_000;

/** The takeover lock `<name>.takeover`: a file linked into place with `pid token time`. */
export class TakeoverLock {
  constructor(
    private readonly lockPath: string,
    private readonly log: Log,
  ) {}

  /** Acquires the lock, or returns null when a live candidate holds it. */
  async acquire(): Promise<{ release: () => Promise<void> } | null> {
    const mine = `${process.pid} ${token()} ${Date.now()}\n`;
    const tmp = `${this.lockPath}.${token()}.tmp`;
    await fsp.writeFile(tmp, mine, { mode: 0o600 }); // a private directory: nobody else writes there
    try {
      await this.breakIfStale(); // the lock in the way, if any and stale
      return (await linkNew(tmp, this.lockPath)) ? { release: () => this.release(mine) } : null;
    } finally {
      await unlinkQuiet(tmp);
    }
  }

  private async release(mine: string): Promise<void> {
    try {
      if ((await fsp.readFile(this.lockPath, 'utf8')) === mine) await fsp.unlink(this.lockPath);
      else this.log('leader election: the takeover lock was no longer ours at release');
    } catch {
      // gone
    }
  }

  /** Breaks the lock if its owner is dead or it is too old (or it does not read as a lock). */
  private async breakIfStale(): Promise<void> {
    let seen: string;
    try {
      seen = await fsp.readFile(this.lockPath, 'utf8');
    } catch (e) {
      if (errCode(e) === 'ENOENT') return; // none (or released meanwhile)
      throw e;
    }
    const [pidText, , atText] = seen.split(' '); // Number() ignores the newline
    const age = Date.now() - Number(atText);
    const deadOwner = !pidAlive(Number(pidText));
    if (!deadOwner && age <= LOCK_STALE_MS) return;
    // Another text: released and taken again since it was read, a live lock, put back. None there:
    // somebody else broke (or released) it.
    const same = async (aside: string) => (await fsp.readFile(aside, 'utf8')) === seen;
    const putBackFailed = () => this.log('leader election: could not restore a takeover lock moved by mistake');
    if ((await removeIfStill(this.lockPath, same, putBackFailed)) !== 'removed') return;
    const why = deadOwner ? 'dead' : `${Math.round(age)} ms old`;
    this.log(`leader election: broke a stale takeover lock (owner pid ${pidText}, ${why})`);
  }
}
