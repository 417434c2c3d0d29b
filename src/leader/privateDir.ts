// The election's private directory and the names in it.
//
// A Unix socket at a path in a private directory (`<dir>/<name>.sock`, dir 0700 and ours), not
// Linux's abstract namespace: it works the same on macOS, and the directory's permissions keep
// other users out (abstract sockets have no permissions at all). Beside the socket: the takeover
// lock `<name>.takeover` (takeoverLock.ts) and candidates' temporary sockets `.<pid><random>.s`
// (exclusiveListen.ts); what a candidate that died mid-step left behind is swept by a new leader.
import { makeDirs } from '../util/makeDirs';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { lstatOrNull, token, unlinkQuiet } from './files';

/** Longest socket path accepted (sun_path is 104 bytes on macOS, 108 on Linux, NUL included). */
export const MAX_SOCKET_PATH_BYTES = 103;
/** Leftover temporary files older than this are swept by a new leader. */
const LEFTOVER_MS = 60_000;

/**
 * Creates `dir` (0700) if missing; throws a clear Error if it is not a directory, not owned by
 * the current user, or writable by group or others (checked on its real path). Returns the
 * absolute path.
 */
export async function ensurePrivateDir(dir: string): Promise<string> {
  const abs = path.resolve(dir);
  let created: string | undefined;
  try {
    created = await makeDirs(abs, 0o700);
  } catch (e) {
    throw new Error(`leader election: cannot create the directory ${abs}: ${(e as Error).message}`, { cause: e });
  }
  if (created !== undefined) await fsp.chmod(abs, 0o700); // exactly 0700, whatever the umask
  const real = await fsp.realpath(abs);
  const st = await fsp.stat(real);
  const shown = real === abs ? abs : `${abs} (-> ${real})`;
  if (!st.isDirectory()) throw new Error(`leader election: refusing ${shown}: it is not a directory`);
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  if (uid !== undefined && st.uid !== uid) {
    throw new Error(
      `leader election: refusing directory ${shown}: it is owned by uid ${st.uid}, not by you (uid ${uid})`,
    );
  }
  if ((st.mode & 0o022) !== 0) {
    const mode = `0${(st.mode & 0o7777).toString(8)}`;
    throw new Error(
      `leader election: refusing directory ${shown}: it is writable by group or others (mode ${mode}); ` +
        `use a private directory (chmod 700 ${real})`,
    );
  }
  // The path as given, not the real one: socket paths are short (macOS's /var -> /private/var).
  return abs;
}

/** `<dir>/<name>.sock`: the leader's socket. */
export function leaderSocketPath(dir: string, name: string): string {
  return path.join(dir, `${name}.sock`);
}

/** `<dir>/<name>.takeover`: the takeover lock. */
export function takeoverLockPath(dir: string, name: string): string {
  return path.join(dir, `${name}.takeover`);
}

/** `<dir>/<name>.leader`: who leads, its term, its last renewal (lease.ts). */
export function leaderFilePath(dir: string, name: string): string {
  return path.join(dir, `${name}.leader`);
}

/** `<dir>/.<pid><random>.s`: short, so that it fits wherever `<name>.sock` does. */
export function tmpSocketPath(dir: string): string {
  return path.join(dir, `.${process.pid.toString(36)}${token()}.s`);
}

/** Throws when the socket paths under `dir` would not fit in a socket address. */
export function checkSocketPathLength(dir: string, socketPath: string): void {
  const longest = Math.max(Buffer.byteLength(socketPath), Buffer.byteLength(tmpSocketPath(dir)));
  if (longest > MAX_SOCKET_PATH_BYTES) {
    throw new Error(
      `leader election: socket paths under ${dir} would be longer than ${MAX_SOCKET_PATH_BYTES} bytes; use a shorter directory or name`,
    );
  }
}

/** Removes temporary files left by candidates that died mid-step (best effort). */
export async function sweepLeftovers(dir: string, name: string): Promise<void> {
  try {
    const prefix = `${name}.`;
    for (const entry of await fsp.readdir(dir)) {
      const tmpSocket = /^\.[0-9a-z]+[0-9a-f]{8}\.s$/.test(entry);
      const ours = entry.startsWith(prefix) && (entry.endsWith('.tmp') || entry.includes('.stale.'));
      if (!tmpSocket && !ours) continue;
      const p = path.join(dir, entry);
      const st = await lstatOrNull(p);
      if (st && Date.now() - st.mtimeMs > LEFTOVER_MS) await unlinkQuiet(p);
    }
  } catch {
    // best effort
  }
}
