// The crash journal: an append-only file beside a snapshot of the state, one small record per
// change (their format: journalRecord.ts), each write fsync'd before the save that made it
// resolves. A restarted engine reads the snapshot, then replays the journal over it; from time to
// time (and at a clean stop) the journal is folded into a new snapshot and starts again empty.
import { promises as fsp } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as nodePath from 'node:path';
import { journalHeader, type Replayed } from './journalRecord';
import { describeDropped } from './store';
import { copyAside, moveAside } from './aside';

/** The journal is folded once it is larger than the snapshot and this. */
export const MIN_FOLD_BYTES = 1024 * 1024;

/** A new journal generation, for a new snapshot: the time (base 36) and 48 random bits. */
export function newGeneration(now: number): string {
  return `${now.toString(36)}-${randomBytes(6).toString('hex')}`;
}

/**
 * Appends to one journal file: the first append after a `reset` creates it with its header (and
 * fsyncs the directory, so that the new file survives a power loss); every append is fdatasync'd
 * before it resolves. Not safe for concurrent appends: its owner serializes them.
 */
export class JournalWriter {
  private handle: fsp.FileHandle | null = null;
  private generation: string | null = null;
  /** Bytes written to the current journal (0 until its first append). */
  bytes = 0;

  constructor(readonly path: string) {}

  /** The next append starts a new journal for `generation` (call after its snapshot is on disk). */
  async reset(generation: string): Promise<void> {
    await this.close();
    await fsp.unlink(this.path).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    this.generation = generation;
    this.bytes = 0;
  }

  /** Whether `added` more bytes make the journal larger than its snapshot and `min`: time to fold. */
  outgrows(added: number, snapshot: number, min = MIN_FOLD_BYTES): boolean {
    return this.bytes + added > Math.max(min, snapshot);
  }

  async append(lines: string): Promise<void> {
    if (this.generation === null) throw new Error('internal: journal append before its snapshot');
    if (lines.length === 0) return;
    let created = false;
    if (!this.handle) {
      // 'w': a stale journal left by a failed unlink is replaced, never appended to.
      this.handle = await fsp.open(this.path, this.bytes === 0 ? 'w' : 'a', 0o600);
      if (this.bytes === 0) {
        await this.handle.chmod(0o600).catch(() => undefined);
        lines = journalHeader(this.generation) + lines;
        created = true;
      }
    }
    try {
      await this.handle.write(lines);
      await this.handle.datasync();
    } catch (err) {
      // What was half written is a torn tail or worse: the owner folds into a new snapshot next.
      await this.close();
      throw err;
    }
    this.bytes += Buffer.byteLength(lines);
    if (created) await syncDir(nodePath.dirname(this.path));
  }

  async close(): Promise<void> {
    const h = this.handle;
    this.handle = null;
    await h?.close().catch(() => undefined);
  }
}

/** fsyncs a directory, so that a file created or renamed in it survives a power loss. */
export async function syncDir(dir: string): Promise<void> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(dir, 'r');
    await fh.sync();
  } catch {
    // Directories cannot be opened or fsynced on some platforms (Windows); the rename is done.
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/**
 * Keeps aside a journal a load could not use whole, and says so in `problems`: moved when it is
 * unusable (`what` loaded without it), copied when its replay left records out.
 */
export async function keepJournalAside(
  path: string,
  j: Replayed | { unusable: string },
  now: () => number,
  what: string,
  problems: string[],
): Promise<void> {
  if ('unusable' in j) {
    const aside = await moveAside(path, now(), `journal ${path}`, j.unusable);
    problems.push(
      `journal ${path} was unusable (${j.unusable}); kept aside as ${aside}; ${what} loaded without the changes it held`,
    );
  } else if (j.dropped.length > 0) {
    const aside = await copyAside(path, now(), `journal ${path}`);
    problems.push(
      `journal ${path}: ${describeDropped(j.dropped)}; the journal as it was is kept as ${aside}; its other ${j.applied} record${j.applied === 1 ? '' : 's'} loaded`,
    );
  }
}
