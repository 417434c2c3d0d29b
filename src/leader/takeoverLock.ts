// The takeover lock `<name>.takeover`: only its holder may remove a socket that is not its own
// (the dead leader's, see attempt.ts).
//
// A file created atomically with its owner's pid and a token (written to a temporary file, then
// `link`ed: exclusive, never seen half-written). A lock whose owner pid is dead, or older than
// 10 s, is stale: it is renamed aside (atomic; of two breakers only one succeeds), and the renamed
// file's token is checked to be the one judged stale (if not, it is put back).
import { promises as fsp, type Stats } from 'node:fs';
import type { Log } from './emitter';
import { errCode, pidAlive, token, unlinkQuiet } from './files';

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
    await fsp.writeFile(tmp, mine, { mode: 0o600, flag: 'wx' });
    try {
      for (let i = 0; i < 2; i++) {
        try {
          await fsp.link(tmp, this.lockPath);
          return { release: () => this.release(mine) };
        } catch (e) {
          if (errCode(e) !== 'EEXIST') throw e;
        }
        if (i === 0 && !(await this.breakIfStale())) return null;
      }
      return null;
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

  /** Breaks the lock if its owner is dead or it is too old; true if it is (now) gone. */
  private async breakIfStale(): Promise<boolean> {
    let seen: string;
    let st: Stats;
    try {
      st = await fsp.lstat(this.lockPath);
      seen = await fsp.readFile(this.lockPath, 'utf8');
    } catch (e) {
      if (errCode(e) === 'ENOENT') return true;
      throw e;
    }
    const [pidText, , atText] = seen.trim().split(' ');
    const pid = Number(pidText);
    const at = Number(atText);
    const age = Date.now() - (Number.isFinite(at) ? at : st.mtimeMs);
    const deadOwner = Number.isInteger(pid) && pid !== process.pid && !pidAlive(pid);
    if (!deadOwner && age <= LOCK_STALE_MS) return false;
    const aside = `${this.lockPath}.stale.${token()}`;
    try {
      await fsp.rename(this.lockPath, aside);
    } catch (e) {
      if (errCode(e) === 'ENOENT') return true; // somebody else broke (or released) it
      throw e;
    }
    let got = '';
    try {
      got = await fsp.readFile(aside, 'utf8');
    } catch {
      // vanished: treat as broken
    }
    if (got !== '' && got !== seen) {
      // We moved a newer, live lock: put it back if its place is still free.
      try {
        await fsp.link(aside, this.lockPath);
      } catch {
        this.log('leader election: could not restore a takeover lock moved by mistake');
      }
      await unlinkQuiet(aside);
      return false;
    }
    await unlinkQuiet(aside);
    this.log(
      `leader election: broke a stale takeover lock (owner pid ${pidText}, ${deadOwner ? 'dead' : `${Math.round(age)} ms old`})`,
    );
    return true;
  }
}
