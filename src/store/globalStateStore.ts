// The extension's store: the watch state in VS Code's globalState (a Memento), under a
// namespaced, versioned key (machine state, never synced), and, given a journal path (under the
// extension's globalStorageUri), a crash journal beside it. A value that cannot be read is never
// silently dropped: it is kept aside under its own key (see `load`).
//
// Why a journal (docs/globalstate-durability.md): `globalState.update` resolves once the
// workbench holds the value in memory and writes it to disk later: a crash of the whole window
// or app loses what resolved but was not written yet, although the engine announced it. So every
// save also appends its changes to the journal (./journal.ts), fdatasync'd before the save
// resolves; globalState stays the snapshot, written whole at every save, and carries the journal
// generation it belongs to (its `journal` field). A load replays that generation's journal over
// it (records are whole watches: replaying one the snapshot has already is harmless) and writes
// the result back with a new generation (a fold). A fold keeps the journal it replaces as
// `<journal>.prev`: if the workbench then loses the new snapshot, the one it still has names the
// previous generation, and both journals are replayed. Folds also happen when the journal
// outgrows the snapshot (at least 1 MiB) and at a clean stop (`compact`).
import { makeDirs } from '../util/makeDirs';
import { promises as fsp } from 'node:fs';
import * as nodePath from 'node:path';
import { emptyState, STATE_VERSION, type PersistedState } from '../model/watch';
import { copyAside, exists, fileProblem, moveAside } from './aside';
import { JournalWriter, keepJournalAside, newGeneration } from './journal';
import { journalGeneration, journalLines, replayJournal } from './journalRecord';
import {
  parsePersisted,
  partialLoadProblem,
  refusedSave,
  stampOf,
  StateSerializer,
  type LoadResult,
  type ParsedState,
  type StateStore,
} from './store';
import { errorText } from '../util/errorText';
import { errCode } from '../util/errno';
import { checkFence, checkTerm, parseTerm, termText, type WriteGuard } from './guard';

/** The part of vscode.Memento this store uses (so it can be tested without VS Code). */
export interface MementoLike {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
  keys(): readonly string[];
}

export const STATE_KEY = 'codexGoalRecovery.state';
export const CORRUPT_PREFIX = 'codexGoalRecovery.state.corrupt.';
/** A larger value is not loaded (globalState lives in memory in every window). */
export const MAX_STATE_CHARS = 16 * 1024 * 1024;
/** A larger journal is not read (kept aside). */
export const MAX_JOURNAL_BYTES = 64 * 1024 * 1024;
/** The journal's file name in the extension's global storage directory. */
export const JOURNAL_FILE = 'state.journal';

export interface GlobalStateStoreOptions {
  /** The crash journal's path (a local file); omitted, globalState alone (no journal). */
  journalPath?: string;
  /** Clock for aside names and generations (tests). */
  now?: () => number;
  /** The journal is folded once larger than the snapshot and this; default 1 MiB. */
  minFoldBytes?: number;
  /** What the load found, one line (for the log). */
  info?: (line: string) => void;
  /** A journal that can no longer be written: said here once; the store goes on with globalState alone. */
  onProblem?: (message: string) => void;
  /**
   * Asked before every write that lands; its term is stamped into the value (./guard.ts). Every
   * window of a profile shares globalState and the journal: a stale leader window must not write.
   */
  guard?: WriteGuard;
}

/** What a journal file holds, read without changing anything (null: there is none). */
type JournalFile = null | { unusable: string } | { text: string; generation: string | null };

async function readJournalFile(path: string): Promise<JournalFile> {
  let st;
  try {
    st = await fsp.lstat(path);
  } catch (err) {
    // ENOTDIR: a file where its directory should be, so no journal there (saves will say so).
    if (errCode(err) === 'ENOENT' || errCode(err) === 'ENOTDIR') return null;
    return { unusable: errorText(err) };
  }
  const unusable = fileProblem(st, MAX_JOURNAL_BYTES);
  if (unusable !== null) return { unusable };
  try {
    const text = await fsp.readFile(path, 'utf8');
    return { text, generation: journalGeneration(text) };
  } catch (err) {
    return { unusable: `unreadable: ${errorText(err)}` };
  }
}

export class GlobalStateStore implements StateStore {
  readonly location = `VS Code globalState "${STATE_KEY}"`;
  private readonly opts: GlobalStateStoreOptions;
  private readonly now: () => number;
  private readonly journalPath: string | null;
  private readonly prevPath: string | null;
  private readonly serializer = new StateSerializer({ keepJson: true });
  private readonly writer: JournalWriter | null;
  /** Whether saves append to the journal (false: none configured, or it failed). */
  private journaling: boolean;
  /** The journal generation of the snapshot in globalState; null: the next save writes a new one. */
  private generation: string | null = null;
  private snapshotChars = 0;
  /** Saves and folds, one at a time, in order. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly memento: MementoLike,
    options: GlobalStateStoreOptions | (() => number) = {},
  ) {
    this.opts = typeof options === 'function' ? { now: options } : options;
    this.now = this.opts.now ?? Date.now;
    this.journalPath = this.opts.journalPath ? nodePath.resolve(this.opts.journalPath) : null;
    this.prevPath = this.journalPath ? `${this.journalPath}.prev` : null;
    this.writer = this.journalPath ? new JournalWriter(this.journalPath) : null;
    this.journaling = this.writer !== null;
  }

  /**
   * Missing value: empty state, no problem. Unusable value: kept aside under its own key (its
   * journals as files), empty state, `problem` says so. A value or journal with some bad records:
   * the rest is loaded, the original kept aside, `problem` lists what was left out.
   */
  async load(): Promise<LoadResult> {
    const raw = this.memento.get<unknown>(STATE_KEY);
    const problems: string[] = [];
    const parsed = raw === undefined ? null : parseStored(raw, this.now);
    const usable = parsed !== null && 'state' in parsed;
    const state = usable ? parsed.state : emptyState();
    const generation = usable ? stampOf(raw as object, 'journal') : null;
    const dropped = usable && parsed.dropped.length > 0;
    if (dropped) {
      // Keep the value as it was; the part that can be used is written back below.
      const aside = await this.keepAside(raw);
      problems.push(partialLoadProblem('the stored watch state', parsed, `the value as it was is kept as "${aside}"`));
    } else if (parsed !== null && 'error' in parsed) {
      const aside = await this.keepAside(raw);
      await this.memento.update(STATE_KEY, undefined);
      problems.push(
        `the stored watch state could not be used: ${parsed.error}; kept aside as "${aside}"; starting clean`,
      );
    }

    let replayed = 0;
    /** Journals that were replayed or reported: folded into a new snapshot below. */
    let journalsUsed = false;
    if (this.journalPath && this.prevPath) {
      const prev = { path: this.prevPath, file: await readJournalFile(this.prevPath) };
      const cur = { path: this.journalPath, file: await readJournalFile(this.journalPath) };
      if (!usable) {
        // Journals belong to a snapshot that cannot be read: kept, never replayed.
        const why =
          raw === undefined ? 'no watch state in globalState beside it' : 'the watch state in globalState is unusable';
        for (const { path, file } of [prev, cur]) {
          if (file === null) continue;
          const aside = await moveAside(path, this.now(), `journal ${path}`, why);
          problems.push(`journal ${path} could not be replayed (${why}); kept aside as ${aside}`);
          journalsUsed = true;
        }
      } else {
        // The journals that follow the snapshot: the current one, or the previous one then the current one.
        const follows = (f: JournalFile) =>
          f !== null && 'text' in f && f.generation === generation && generation !== null;
        const chain = follows(cur.file) ? [cur] : follows(prev.file) ? [prev, cur] : [];
        for (const { path, file } of [prev, cur]) {
          if (file !== null && 'unusable' in file) {
            await keepJournalAside(path, file, this.now, 'the watch state', problems);
            journalsUsed = true;
          } else if (file !== null && file.generation === null && file.text.includes('\n')) {
            // A header that cannot be read (one cut short is a journal nothing was written to).
            const aside = await copyAside(path, this.now(), `journal ${path}`);
            problems.push(
              `journal ${path}: its header is unreadable; kept aside as ${aside}; the watch state loaded without the changes it held`,
            );
            journalsUsed = true;
          }
        }
        for (const { path, file } of chain) {
          if (file === null || 'unusable' in file || file.generation === null) continue;
          journalsUsed = true;
          const r = replayJournal(state, file.text, file.generation);
          replayed += r.applied;
          await keepJournalAside(path, r, this.now, 'the watch state', problems);
        }
      }
    }

    this.serializer.loaded(state);
    if (this.journaling) {
      // Anything to fold in (or no generation yet): a new snapshot now, and the journal starts
      // empty, so a torn or stale tail is never appended to.
      if (journalsUsed || generation === null || dropped) {
        await this.compact();
      } else {
        // A journal of another generation was folded into this snapshot already: the first append
        // replaces it (the previous one stays as it is).
        await this.prepareDir().catch((err: unknown) => this.journalFailed(err));
        await this.writer!.reset(generation);
        this.generation = generation;
        this.snapshotChars = JSON.stringify(raw).length;
      }
    } else if (dropped) {
      await this.put(JSON.parse(this.serializer.document(state.version)));
    }
    const n = Object.keys(state.watches).length;
    this.opts.info?.(
      `state loaded from globalState: ${n} watch${n === 1 ? '' : 'es'}${this.journalPath ? `; crash journal: ${replayed} record${replayed === 1 ? '' : 's'} replayed` : ''}`,
    );
    return { state, problem: problems.length > 0 ? problems.join('; ') : null };
  }

  /**
   * Makes `state`, as it is now, durable: globalState gets it whole, its changes since the last save
   * go to the journal (fdatasync'd) before this resolves. Rejects (writing nothing) if it would not load back.
   */
  save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void> {
    let lines: string;
    let document: string;
    try {
      lines = journalLines(this.serializer.changes(state, changed));
      document = this.serializer.document(state.version);
    } catch (err) {
      return refusedSave(this.location, err);
    }
    return this.enqueue(async () => {
      if (!this.journaling) return this.put(JSON.parse(document));
      const fold =
        this.generation === null ||
        this.writer!.outgrows(Buffer.byteLength(lines), this.snapshotChars, this.opts.minFoldBytes);
      checkFence(this.opts.guard);
      if (fold) {
        // The lines go to the journal first: it is kept (as .prev) until the fold after this one,
        // so the changes survive if the workbench loses the new snapshot.
        if (this.generation !== null) await this.writer!.append(lines).catch((err: unknown) => this.journalFailed(err));
        return this.fold(document);
      }
      const [, appended] = await Promise.all([
        this.put(withGeneration(document, this.generation!)),
        this.writer!.append(lines).then(
          () => true,
          (err: unknown) => this.journalFailed(err),
        ),
      ]);
      if (!appended) this.generation = null;
    });
  }

  /** Waits for what is being written, then lets go of the journal file (nothing is folded). */
  async close(): Promise<void> {
    await this.chain.catch(() => undefined);
    await this.writer?.close();
  }

  /** Folds the journal into a new snapshot (a clean stop calls it). */
  compact(): Promise<void> {
    if (!this.journaling) return this.chain;
    return this.enqueue(() => this.fold(this.serializer.document(STATE_VERSION)));
  }

  /**
   * The state to globalState, stamped with this writer's term, unless the guard says no or the value
   * there is a newer term's (another window took over while this one was stopped).
   */
  private put(value: unknown): Promise<void> {
    const guard = this.opts.guard;
    if (guard) {
      checkTerm(guard, parseTerm(this.memento.get<{ term?: unknown } | null>(STATE_KEY)?.term), 'globalState');
      checkFence(guard);
      const term = guard.term();
      if (term !== null) (value as Record<string, unknown>).term = termText(term);
    }
    return Promise.resolve(this.memento.update(STATE_KEY, value));
  }

  /** `document` to globalState with a new generation, then a new journal for it (the old one kept as `.prev`). */
  private async fold(document: string): Promise<void> {
    const generation = newGeneration(this.now());
    await this.put(withGeneration(document, generation));
    this.generation = generation;
    this.snapshotChars = document.length;
    if (!this.journaling) return;
    try {
      await this.writer!.close();
      await this.prepareDir();
      await fsp.rm(this.prevPath!, { force: true });
      if (await exists(this.journalPath!)) await fsp.rename(this.journalPath!, this.prevPath!);
      await this.writer!.reset(generation);
    } catch (err) {
      this.journalFailed(err);
    }
  }

  /** The journal's directory, private (0700), created if missing. */
  private async prepareDir(): Promise<void> {
    const dir = nodePath.dirname(this.journalPath!);
    await makeDirs(dir, 0o700);
    await fsp.chmod(dir, 0o700).catch(() => undefined);
  }

  /** The journal cannot be written: go on with globalState alone, and say so once. */
  private journalFailed(err: unknown): false {
    if (this.journaling) {
      this.journaling = false;
      void this.writer?.close();
      this.opts.onProblem?.(
        `could not write the crash journal ${this.journalPath}: ${errorText(err)}; the watch state is kept in globalState alone (a crash of the whole window may lose its last changes)`,
      );
    }
    return false;
  }

  private enqueue(job: () => Promise<void>): Promise<void> {
    const run = this.chain.then(job);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Keeps `value` under a key not in use yet (two bad values in one millisecond must not overwrite each other). */
  private async keepAside(value: unknown): Promise<string> {
    const base = `${CORRUPT_PREFIX}${new Date(this.now()).toISOString()}`;
    const taken = new Set(this.memento.keys());
    let key = base;
    for (let n = 1; taken.has(key); n++) key = `${base}-${n}`;
    await this.memento.update(key, value);
    return key;
  }
}

/** The value in globalState parsed (parsePersisted), or why it cannot be used. */
function parseStored(raw: unknown, now: () => number): ParsedState | { error: string } {
  let size: number;
  try {
    size = JSON.stringify(raw)?.length ?? 0;
  } catch (e) {
    return { error: `not serializable (${errorText(e)})` };
  }
  if (size > MAX_STATE_CHARS) return { error: `too large (${size} characters; the limit is ${MAX_STATE_CHARS})` };
  return parsePersisted(raw, now);
}

/** The snapshot value: the state's document with the journal generation it belongs to. */
function withGeneration(document: string, generation: string): unknown {
  return { ...(JSON.parse(document) as object), journal: generation };
}
