// Keeping an unusable file aside, never deleting it: `<file>.corrupt-<timestamp>[-n]`, a name
// nothing else uses, so two kept in the same millisecond never overwrite each other.
import { constants as fsConstants, promises as fsp, type Stats } from 'node:fs';
import { errorText } from '../util/errorText';

/** Fresh `<file>.corrupt-<timestamp>[-n]` names, in the order to try them. */
export function asideNames(file: string, now: number): string[] {
  const stamp = new Date(now).toISOString().replace(/[:.]/g, '-');
  return Array.from({ length: 1000 }, (_, n) => `${file}.corrupt-${stamp}${n === 0 ? '' : `-${n}`}`);
}

/** Copies `file` as it is to a fresh aside name (the original stays, mode 0600); returns that path. */
export async function copyAside(file: string, now: number, what: string): Promise<string> {
  for (const aside of asideNames(file, now)) {
    try {
      await fsp.copyFile(file, aside, fsConstants.COPYFILE_EXCL);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw new Error(`${what} has unusable records and could not be copied aside to ${aside}: ${errorText(err)}`, {
        cause: err,
      });
    }
    await fsp.chmod(aside, 0o600).catch(() => undefined);
    return aside;
  }
  throw new Error(`${what} has unusable records and no free name was found to copy it aside`);
}

/** Renames an unusable `file` (or directory) to a fresh aside name; returns that path. */
export async function moveAside(file: string, now: number, what: string, reason: string): Promise<string> {
  for (const aside of asideNames(file, now)) {
    if (await exists(aside)) continue;
    try {
      await fsp.rename(file, aside);
    } catch (err) {
      throw new Error(`${what} is unusable (${reason}) and could not be moved aside to ${aside}: ${errorText(err)}`, {
        cause: err,
      });
    }
    return aside;
  }
  throw new Error(`${what} is unusable (${reason}) and no free name was found to move it aside`);
}

export function exists(p: string): Promise<boolean> {
  return fsp.lstat(p).then(
    () => true,
    () => false,
  );
}

/**
 * Why what `st` describes cannot be read as a state file or journal (not a file, larger than
 * `maxBytes`), or null. `namesDirectory`: a directory is said to be one.
 */
export function fileProblem(st: Stats, maxBytes: number, namesDirectory = true): string | null {
  if (!st.isFile()) return namesDirectory && st.isDirectory() ? 'a directory, not a file' : 'not a regular file';
  return st.size > maxBytes ? `${st.size} bytes, more than the ${maxBytes}-byte limit` : null;
}
