// The state as a JSON snapshot and a crash journal beside it (the headless runner's store).
//
// A save appends one small record per changed watch to `<path>.journal` and fdatasyncs it before
// it resolves (./journal.ts): what the engine announces or acts on after a save is on disk, at
// the cost of one short write, however many threads are watched. The journal is folded into a
// new snapshot when it outgrows the snapshot (at least 1 MiB), at a clean stop (`compact`) and at
// every load that replayed anything. Snapshot writes are atomic: a temp file in the same
// directory, fsynced, renamed over the target, then the directory fsynced; mode 0600, parent
// directory created 0700. Saves are serialized and coalesced. A file that cannot be used is
// never deleted: it is kept aside as `<path>.corrupt-<timestamp>` (see `load`).
import { makeDirs } from '../util/makeDirs';
import { promises as fsp } from 'node:fs';
import * as nodePath from 'node:path';
import { emptyState, STATE_VERSION, type PersistedState } from '../model/watch';
import { copyAside, exists, fileProblem, moveAside } from './aside';
import { JournalWriter, keepJournalAside, newGeneration, syncDir } from './journal';
import { journalLines, replayJournal, type Replayed } from './journalRecord';
import { excerpt } from '../protocol/lineSplitter';
import { checkFence, checkTerm, termText, type WriteGuard } from './guard';
import { checkDaemon } from './daemonStamp';
import { headOnDisk } from './snapshotHead';
import {
  parsePersisted,
  partialLoadProblem,
  refusedSave,
  stampOf,
  StateSerializer,
  type LoadResult,
  type StateStore,
} from './store';
import { errorText } from '../util/errorText';
import { errCode, pidAlive } from '../util/errno';

export const DEFAULT_MAX_STATE_BYTES = 64 * 1024 * 1024;
/** A leftover temp file older than this is removed even if its writer's pid is in use. */
const STALE_TEMP_MS = 10 * 60 * 1000;

export interface JsonFileStoreOptions {
  /** A state file larger than this is treated as corrupt; default 64 MiB. */
  maxBytes?: number;
  /** Clock for the `.corrupt-<timestamp>` name (tests). */
  now?: () => number;
  /** The journal is folded once larger than the snapshot and this; default 1 MiB. */
  minFoldBytes?: number;
  /** Asked before every write that lands; its term is stamped into snapshots (./guard.ts). */
  guard?: WriteGuard;
  /** The daemon whose state this file keeps, stamped into snapshots and checked (./daemonStamp.ts). */
  daemon?: string;
}

/** One save (or compaction) waiting to be written. */
interface Job {
  /** Journal lines to append; '' for none. */
  lines: string;
  /** A whole new snapshot instead (the lines are in it), with its journal generation. */
  fold: { document: string; generation: string } | null;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** What a state file and its journal hold, read without changing anything. */
export type StoredState =
  | { kind: 'missing' }
  | { kind: 'unusable'; reason: string }
  | {
      kind: 'state';
      state: PersistedState;
      /** Snapshot records left out (see parsePersisted). */
      dropped: string[];
      /** The snapshot's journal generation (null: written before the journal existed). */
      generation: string | null;
      /** The daemon its snapshot is stamped for (null: not stamped, as before 0.4.0). */
      daemon: string | null;
      /** What the journal added; null when there is none. */
      journal: Replayed | { unusable: string } | null;
    };

/**
 * Reads the snapshot at `path` and replays its journal over it, writing nothing (the `status`
 * command reads a running runner's state this way). Rejects only when a file cannot be looked at.
 */
export async function readStateFile(
  path: string,
  opts: { maxBytes?: number; now?: () => number } = {},
): Promise<StoredState> {
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_STATE_BYTES;
  const text = await readText(path, 'state file', maxBytes);
  if (text === null) return { kind: 'missing' };
  if (typeof text !== 'string') return { kind: 'unusable', reason: text.unusable };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // JSON.parse quotes the text around the error: binary garbage would put newlines and control
    // characters into a message that must stay one readable line.
    return {
      kind: 'unusable',
      reason: text.trim() === '' ? 'empty file' : `invalid JSON: ${printable(errorText(err))}`,
    };
  }
  const parsed = parsePersisted(raw, opts.now, true);
  if ('error' in parsed) return { kind: 'unusable', reason: parsed.error };
  const generation = stampOf(raw as object, 'journal');
  const journal = await readText(`${path}.journal`, 'journal', maxBytes);
  return {
    kind: 'state',
    ...parsed,
    generation,
    daemon: stampOf(raw as object, 'daemon'),
    // The journal, if there is one, replayed over the state (in place).
    journal: typeof journal === 'string' ? replayJournal(parsed.state, journal, generation) : journal,
  };
}

/**
 * The text of the state file or journal at `path`: null when there is none, `{unusable}` when it
 * cannot be used (not a file, too large, not ours to read). Rejects only when it cannot be looked
 * at. Read in one piece of the file's size (fs.readFile's 512 KiB pieces each cost a trip through
 * the thread pool: with 10,000 watches, a tenth of a load), then to its end if it grew meanwhile.
 */
async function readText(
  path: string,
  what: 'state file' | 'journal',
  maxBytes: number,
): Promise<string | null | { unusable: string }> {
  let st;
  try {
    st = await fsp.stat(path);
  } catch (err) {
    if (errCode(err) === 'ENOENT') return null;
    const named = what === 'journal' ? 'the journal' : what;
    throw new Error(`cannot read ${named} ${path}: ${errorText(err)}`, { cause: err });
  }
  const unusable = fileProblem(st, maxBytes, what === 'state file');
  if (unusable !== null) return { unusable };
  try {
    const fh = await fsp.open(path, 'r');
    try {
      const { size } = await fh.stat();
      const pieces: Buffer[] = [];
      for (let piece = Buffer.allocUnsafe(Math.max(size, 1)); ; piece = Buffer.allocUnsafe(64 * 1024)) {
        const { bytesRead } = await fh.read(piece, 0, piece.length, null);
        if (bytesRead === 0) break;
        pieces.push(piece.subarray(0, bytesRead));
      }
      return (pieces.length === 1 ? pieces[0] : Buffer.concat(pieces)).toString('utf8');
    } finally {
      await fh.close();
    }
  } catch (err) {
    if (errCode(err) === 'EACCES' || errCode(err) === 'EPERM') return { unusable: `unreadable: ${errorText(err)}` };
    throw new Error(`cannot read ${what} ${path}: ${errorText(err)}`, { cause: err });
  }
}

let tempCounter = 0;

export class JsonFileStore implements StateStore {
  readonly path: string;
  readonly location: string;
  readonly journalPath: string;
  private readonly now: () => number;
  private readonly serializer = new StateSerializer();
  private readonly journal: JournalWriter;
  /** Saves not written yet, in order. */
  private queue: Job[] = [];
  private writing: Promise<void> | null = null;
  /** The journal generation of the snapshot on disk; null: the next save writes a snapshot. */
  private generation: string | null = null;
  private snapshotBytes = 0;

  constructor(
    path: string,
    private readonly opts: JsonFileStoreOptions = {},
  ) {
    this.path = nodePath.resolve(path);
    this.location = this.path;
    this.journalPath = `${this.path}.journal`;
    this.now = opts.now ?? Date.now;
    this.journal = new JournalWriter(this.journalPath);
  }

  /**
   * Missing file: empty state, no problem. Unusable file (corrupt, wrong shape or version, too
   * large, unreadable, not a file): moved aside (with its journal), empty state, `problem` says so.
   * A file or journal with some bad records: the rest is loaded, the original copied aside,
   * `problem` lists what was left out. Rejects only when a file cannot be looked at or kept aside
   * (the directory's permissions...): starting clean then would overwrite it on the next save.
   */
  async load(): Promise<LoadResult> {
    await this.removeStaleTemps();
    const stored = await readStateFile(this.path, { maxBytes: this.opts.maxBytes, now: this.now });
    if (stored.kind === 'missing') {
      if (!(await exists(this.journalPath))) return { state: emptyState(), problem: null };
      // A journal without its snapshot belongs to nothing that can be read: kept, never replayed.
      const orphan = await this.moveAside(this.journalPath, 'a journal without its state file');
      const problem = `journal ${this.journalPath} had no state file beside it; kept aside as ${orphan}; starting clean`;
      return { state: emptyState(), problem };
    }
    if (stored.kind === 'unusable') {
      const aside = await this.moveAside(this.path, stored.reason);
      let problem = `state file ${this.path} was unusable (${stored.reason}); kept aside as ${aside}`;
      if (await exists(this.journalPath))
        problem += ` (its journal as ${await this.moveAside(this.journalPath, 'its state file is unusable')})`;
      return { state: emptyState(), problem: `${problem}; starting clean` };
    }
    checkDaemon(this.path, stored.daemon, this.opts.daemon);
    const problems: string[] = [];
    if (stored.dropped.length > 0) {
      const aside = await copyAside(this.path, this.now(), `state file ${this.path}`);
      problems.push(partialLoadProblem(`state file ${this.path}`, stored, `the file as it was is kept as ${aside}`));
    }
    const j = stored.journal;
    if (j) await keepJournalAside(this.journalPath, j, this.now, 'the state file', problems);
    this.serializer.loaded(stored.state);
    this.generation = stored.generation;
    // Anything to fold in (or a snapshot from before the journal, or not stamped for its daemon):
    // a new snapshot now, so the journal starts empty and a torn or stale tail is never appended to.
    const unstamped = this.opts.daemon !== undefined && stored.daemon !== this.opts.daemon;
    if (j !== null || stored.generation === null || stored.dropped.length > 0 || unstamped) {
      await this.compact();
    } else {
      await this.journal.reset(stored.generation); // there is none: the first append starts it
      this.snapshotBytes = (await fsp.stat(this.path)).size;
    }
    return { state: stored.state, problem: problems.length > 0 ? problems.join('; ') : null };
  }

  /**
   * Makes `state`, as it is now, durable: its changes since the last save go to the journal
   * (fdatasync'd) before this resolves; a save that changed nothing resolves once the saves
   * before it are on disk. Rejects (writing nothing) if the state would not load back.
   */
  save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void> {
    let lines: string;
    try {
      lines = journalLines(this.serializer.changes(state, changed));
    } catch (err) {
      return refusedSave(this.path, err);
    }
    const fold =
      this.generation === null || this.journal.outgrows(lines.length, this.snapshotBytes, this.opts.minFoldBytes);
    if (lines === '' && !fold) return this.writing ?? Promise.resolve();
    return this.enqueue(lines, fold ? this.nextSnapshot(state.version) : null);
  }

  /** Folds the journal into a new snapshot (a clean stop calls it; so does a load that replayed one). */
  compact(): Promise<void> {
    return this.enqueue('', this.nextSnapshot(STATE_VERSION));
  }

  /** Waits for what is being written, then lets go of the journal file (nothing is folded). */
  async close(): Promise<void> {
    await this.writing;
    await this.journal.close();
  }

  private nextSnapshot(version: number): { document: string; generation: string } {
    const generation = newGeneration(this.now());
    const term = this.opts.guard?.term() ?? null;
    const extra: Record<string, string> = { journal: JSON.stringify(generation) };
    if (term !== null) extra.term = JSON.stringify(termText(term));
    if (this.opts.daemon !== undefined) extra.daemon = JSON.stringify(this.opts.daemon);
    return { document: this.serializer.document(version, extra), generation };
  }

  private enqueue(lines: string, fold: Job['fold']): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ lines, fold, resolve, reject });
      this.writing ??= this.pump();
    });
  }

  /**
   * Writes what is queued: the newest snapshot among the jobs (it holds every change before it),
   * then the journal lines of the jobs after it, in one append and one fdatasync.
   */
  private async pump(): Promise<void> {
    // Never settles before the caller has kept it in `writing` (a refused write throws at once).
    await Promise.resolve();
    try {
      while (this.queue.length > 0) {
        const jobs = this.queue;
        this.queue = [];
        let fold: Job['fold'] = null;
        let lines = '';
        for (const job of jobs) {
          if (job.fold) fold = job.fold;
          lines = job.fold ? '' : lines + job.lines;
        }
        try {
          if (fold) {
            await this.writeAtomic(fold.document);
            await this.journal.reset(fold.generation);
            this.generation = fold.generation;
            this.snapshotBytes = fold.document.length;
          }
          if (lines !== '') {
            checkFence(this.opts.guard);
            await this.journal.append(lines);
          }
          for (const j of jobs) j.resolve();
        } catch (err) {
          // The journal may end in a torn record now: the next save writes a whole snapshot.
          this.generation = null;
          const error = new Error(`cannot save state to ${this.path}: ${errorText(err)}`, { cause: err });
          for (const j of jobs) j.reject(error);
        }
      }
    } finally {
      this.writing = null;
    }
  }

  private async writeAtomic(json: string): Promise<void> {
    const dir = nodePath.dirname(this.path);
    const tmp = `${this.path}.tmp-${process.pid}-${++tempCounter}-${Math.random().toString(36).slice(2, 8)}`;
    try {
      await makeDirs(dir, 0o700);
      const fh = await fsp.open(tmp, 'wx', 0o600);
      try {
        await fh.writeFile(json, 'utf8');
        await fh.chmod(0o600).catch(() => undefined); // mode given to open() is masked by the umask
        await fh.sync();
      } finally {
        await fh.close();
      }
      const head = this.opts.daemon !== undefined || this.opts.guard ? await headOnDisk(this.path) : null;
      checkDaemon(this.path, head?.daemon ?? null, this.opts.daemon); // no daemon, no guard: no-ops
      checkTerm(this.opts.guard, head?.term ?? null, `state file ${this.path}`);
      checkFence(this.opts.guard); // the last word before the rename: no await in between
      await fsp.rename(tmp, this.path);
    } catch (err) {
      await fsp.unlink(tmp).catch(() => undefined);
      throw err;
    }
    await syncDir(dir);
  }

  private moveAside(file: string, reason: string): Promise<string> {
    const what = file === this.path ? `state file ${file}` : `journal ${file}`;
    return moveAside(file, this.now(), what, reason);
  }

  /** Removes temp files left by a crashed writer (dead pid, or older than 10 minutes). */
  private async removeStaleTemps(): Promise<void> {
    const dir = nodePath.dirname(this.path);
    const prefix = `${nodePath.basename(this.path)}.tmp-`;
    for (const name of await fsp.readdir(dir).catch(() => [])) {
      if (!name.startsWith(prefix)) continue;
      const full = nodePath.join(dir, name);
      const pid = Number(name.slice(prefix.length).split('-')[0]);
      let stale = pid !== process.pid && Number.isSafeInteger(pid) && pid > 0 && !pidAlive(pid);
      if (!stale) {
        const st = await fsp.stat(full).catch(() => null);
        stale = st !== null && Date.now() - st.mtimeMs > STALE_TEMP_MS;
      }
      if (stale) await fsp.unlink(full).catch(() => undefined);
    }
  }
}

/** One line of printable text: whitespace folded, other control characters shown as U+FFFD, bounded. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is this function's job
  return excerpt(text, 200).replace(/[\u0000-\u001f\u007f]/g, '\ufffd');
}
