// An errno's code, and whether a pid is alive: the small process facts the stores and the
// election's steps share.

/** The `code` of a Node system error (ENOENT, EACCES, …), if it has one. */
export function errCode(e: unknown): string | undefined {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Whether a process with this pid exists (one of another user's too: EPERM). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return errCode(e) === 'EPERM';
  }
}
