// Small file helpers the election's steps share: a file's identity (device and inode), random
// tokens for private names, an exclusive link, a checked removal (an errno's code and whether a
// pid is alive: src/util/errno.ts).
import { promises as fsp, type Stats } from 'node:fs';
import * as crypto from 'node:crypto';
import { errCode } from '../util/errno';

export { errCode, pidAlive } from '../util/errno';
export const fileKey = (st: Stats): string => `${st.dev}:${st.ino}`;
export const token = (): string => crypto.randomBytes(4).toString('hex');

export async function lstatOrNull(p: string): Promise<Stats | null> {
  try {
    return await fsp.lstat(p);
  } catch (e) {
    if (errCode(e) === 'ENOENT') return null;
    throw e;
  }
}

export async function unlinkQuiet(p: string): Promise<void> {
  try {
    await fsp.unlink(p);
  } catch {
    // already gone
  }
}

/** `link(from, to)`: atomic and exclusive; false if `to` exists already. */
export async function linkNew(from: string, to: string): Promise<boolean> {
  try {
    await fsp.link(from, to);
    return true;
  } catch (e) {
    if (errCode(e) === 'EEXIST') return false;
    throw e;
  }
}

/**
 * Removes `p` only if it is still the file `same` expects: renamed aside first (atomic; of two
 * removers only one succeeds), checked, and put back if it turns out to be another file
 * (`putBackFailed` when its place was taken meanwhile). 'gone': nothing was at `p`.
 */
export async function removeIfStill(
  p: string,
  same: (aside: string) => Promise<boolean>,
  putBackFailed: () => void,
): Promise<'removed' | 'gone' | 'kept'> {
  const aside = `${p}.stale.${token()}`;
  try {
    await fsp.rename(p, aside);
  } catch (e) {
    if (errCode(e) === 'ENOENT') return 'gone';
    throw e;
  }
  const removed = await same(aside);
  if (!removed) await fsp.link(aside, p).catch(putBackFailed);
  await unlinkQuiet(aside);
  return removed ? 'removed' : 'kept';
}
