// Small file helpers the election's steps share: a file's identity (device and inode), random
// tokens for private names (an errno's code and whether a pid is alive: src/util/errno.ts).
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
