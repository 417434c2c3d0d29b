// Which daemon a state file is kept for. The runner stamps its file's snapshots with the daemon's
// address (src/runner/stateFile.ts, `daemonKey`), among their first fields as the term is
// (./guard.ts); a store given that address refuses a file stamped for another daemon, at load and
// before each snapshot it writes (./jsonFileStore.ts), so two daemons' engines never share a file.
import { promises as fsp } from 'node:fs';

/** Thrown by a load or a write on a state file that another daemon's engine keeps. */
export class OtherDaemonError extends Error {
  constructor(path: string, theirs: string, mine: string) {
    super(
      `state file ${path} keeps the state of another daemon (${theirs}), not of ${mine}: each daemon needs a state file of its own (leave out --state and each gets one)`,
    );
    this.name = 'OtherDaemonError';
  }
}

/** The daemon a stored document's head names (before its watches), or null when it names none. */
export function daemonInHead(head: string): string | null {
  const end = head.indexOf('"watches"');
  const m = /"daemon":("(?:[^"\\]|\\.)*")/.exec(end < 0 ? head : head.slice(0, end));
  if (!m) return null;
  try {
    const value: unknown = JSON.parse(m[1]);
    return typeof value === 'string' ? value : null;
  } catch {
    return null;
  }
}

/** The daemon the snapshot at `path` is stamped for; null when none is, or there is no file. */
export async function daemonOnDisk(path: string): Promise<string | null> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(path, 'r');
    const buf = Buffer.alloc(4096);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return daemonInHead(buf.subarray(0, bytesRead).toString('utf8'));
  } catch {
    return null;
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/** Throws OtherDaemonError when `stamped` names a daemon other than `mine` (null: not stamped, taken). */
export function checkDaemon(path: string, stamped: string | null, mine: string | undefined): void {
  if (mine !== undefined && stamped !== null && stamped !== mine) throw new OtherDaemonError(path, stamped, mine);
}
