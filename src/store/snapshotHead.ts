// What a snapshot's head says: the term that wrote it (./guard.ts) and the daemon it is kept for
// (./daemonStamp.ts), both among its first fields (StateSerializer.document). A store reads them
// before each snapshot it writes, so only the head is read (a state file may be megabytes).
import { promises as fsp } from 'node:fs';
import { parseTerm, type Term } from './guard';

export interface SnapshotHead {
  /** The term that wrote it; null when it names none. */
  term: Term | null;
  /** The daemon it is stamped for; null when it names none. */
  daemon: string | null;
}

/** How much of a file is its head: the fields before the watches, with room for a long daemon address. */
const HEAD_BYTES = 4096;

/** What a stored document's head names before its watches (a goal's text may say anything). */
export function readHead(head: string): SnapshotHead {
  const end = head.indexOf('"watches"');
  const before = end < 0 ? head : head.slice(0, end);
  const term = /"term":"([^"]{1,90})"[,}]/.exec(before);
  return { term: term ? parseTerm(term[1]) : null, daemon: daemonIn(before) };
}

function daemonIn(text: string): string | null {
  const m = /"daemon":("(?:[^"\\]|\\.)*")/.exec(text);
  if (!m) return null;
  try {
    // A JSON string's text parses to a string, or throws. An empty one names no daemon, as the
    // whole file's reader takes it (readStateFile): the check before a save and the load agree.
    return (JSON.parse(m[1]) as string) || null;
  } catch {
    return null; // not JSON ("\x")
  }
}

/** The head of the snapshot at `path`; names nothing when there is no file or it cannot be read. */
export async function headOnDisk(path: string): Promise<SnapshotHead> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(path, 'r');
    const buf = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return readHead(buf.subarray(0, bytesRead).toString('utf8'));
  } catch {
    return { term: null, daemon: null };
  } finally {
    await fh?.close().catch(() => undefined);
  }
}
