// Small file and process helpers the election's steps share: an errno's code, a file's identity
// (device and inode), random tokens for private names, whether a pid is alive.
import { promises as fsp, type Stats } from 'node:fs';
import * as crypto from 'node:crypto';

export const errCode = (e: unknown): string | undefined => (e as NodeJS.ErrnoException)?.code;
export const fileKey = (st: Stats): string => `${st.dev}:${st.ino}`;
export const token = (): string => crypto.randomBytes(4).toString('hex');

export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return errCode(e) === 'EPERM';
  }
}

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
