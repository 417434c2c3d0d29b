// The state as one JSON file (the headless runner's store).
//
// Writes are atomic: a temp file in the same directory, fsynced, renamed over the target,
// then the directory fsynced; mode 0600, parent directory created 0700. Saves are
// serialized and coalesced: the state of the last call is the one left on disk.
// A file that cannot be used is never deleted: it is moved aside to
// `<path>.corrupt-<timestamp>` and the load starts clean, saying so. A file with a few bad
// records is copied there, and the rest of it loads.
import { constants as fsConstants, promises as fsp } from 'node:fs';
import * as nodePath from 'node:path';
import { emptyState, type PersistedState } from '../model/watch';
import { parsePersisted, partialLoadProblem, StateSerializer, type LoadResult, type StateStore } from './store';

export const DEFAULT_MAX_STATE_BYTES = 64 * 1024 * 1024;
/** A leftover temp file older than this is removed even if its writer's pid is in use. */
const STALE_TEMP_MS = 10 * 60 * 1000;

export interface JsonFileStoreOptions {
  /** A state file larger than this is treated as corrupt; default 64 MiB. */
  maxBytes?: number;
  /** Clock for the `.corrupt-<timestamp>` name (tests). */
  now?: () => number;
}

interface Pending {
  json: string;
  waiters: Array<{ resolve: () => void; reject: (err: unknown) => void }>;
}

let tempCounter = 0;

export class JsonFileStore implements StateStore {
  readonly location: string;
  private readonly maxBytes: number;
  private readonly now: () => number;
  /** The newest state waiting to be written, with every save() call it answers. */
  private pending: Pending | null = null;
  private writing = false;
  private readonly serializer = new StateSerializer();

  constructor(readonly path: string, opts: JsonFileStoreOptions = {}) {
    this.path = nodePath.resolve(path);
    this.location = this.path;
    this.maxBytes = opts.maxBytes ?? DEFAULT_MAX_STATE_BYTES;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Missing file: empty state, no problem. Unusable file (corrupt, wrong shape or version, too
   * large, unreadable, a directory or anything else that is not a file): moved aside, empty
   * state, `problem` says so. A good file with some bad records: the rest is loaded, the file
   * as it was is copied aside, the good part written back, and `problem` lists what was left
   * out. Rejects only when the file cannot be looked at or kept aside (the directory's
   * permissions...): starting clean then would overwrite it on the next save.
   */
  async load(): Promise<LoadResult> {
    await this.removeStaleTemps();
    let st;
    try {
      st = await fsp.stat(this.path);
    } catch (err) {
      if (errCode(err) === 'ENOENT') return { state: emptyState(), problem: null };
      throw new Error(`cannot read state file ${this.path}: ${errText(err)}`, { cause: err });
    }
    const result = !st.isFile()
      ? { reason: st.isDirectory() ? 'a directory, not a file' : 'not a regular file' }
      : st.size > this.maxBytes
        ? { reason: `${st.size} bytes, more than the ${this.maxBytes}-byte limit` }
        : await this.read();
    if ('state' in result) {
      if (result.dropped.length === 0) return { state: result.state, problem: null };
      const aside = await this.copyAside();
      await this.save(result.state);
      return { state: result.state, problem: partialLoadProblem(`state file ${this.path}`, result, `the file as it was is kept as ${aside}`) };
    }
    const aside = await this.moveAside(result.reason);
    return {
      state: emptyState(),
      problem: `state file ${this.path} was unusable (${result.reason}); kept aside as ${aside}; starting clean`,
    };
  }

  private async read(): Promise<{ state: PersistedState; dropped: string[] } | { reason: string }> {
    let text: string;
    try {
      text = await fsp.readFile(this.path, 'utf8');
    } catch (err) {
      // Not ours to read any more (mode, ACL): unusable, and moved aside like any bad file.
      if (errCode(err) === 'EACCES' || errCode(err) === 'EPERM') return { reason: `unreadable: ${errText(err)}` };
      throw new Error(`cannot read state file ${this.path}: ${errText(err)}`, { cause: err });
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      return { reason: text.trim() === '' ? 'empty file' : `invalid JSON: ${errText(err)}` };
    }
    const parsed = parsePersisted(raw, this.now);
    return 'state' in parsed ? parsed : { reason: parsed.error };
  }

  /**
   * Writes `state` as it is now. Calls made while a write is running are coalesced: the
   * last one's state is written next, and all of them resolve once it is on disk.
   * Rejects (writing nothing) if the state would not load back.
   */
  save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void> {
    let json: string;
    try {
      json = this.serializer.serialize(state, changed);
    } catch (err) {
      return Promise.reject(new Error(`refusing to save an invalid state to ${this.path}: ${errText(err)}`, { cause: err }));
    }
    return new Promise<void>((resolve, reject) => {
      if (this.pending) {
        this.pending.json = json;
        this.pending.waiters.push({ resolve, reject });
      } else {
        this.pending = { json, waiters: [{ resolve, reject }] };
      }
      if (!this.writing) void this.pump();
    });
  }

  private async pump(): Promise<void> {
    this.writing = true;
    try {
      while (this.pending) {
        const job = this.pending;
        this.pending = null;
        try {
          await this.writeAtomic(job.json);
          for (const w of job.waiters) w.resolve();
        } catch (err) {
          for (const w of job.waiters) w.reject(err);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  private async writeAtomic(json: string): Promise<void> {
    const dir = nodePath.dirname(this.path);
    const tmp = `${this.path}.tmp-${process.pid}-${++tempCounter}-${Math.random().toString(36).slice(2, 8)}`;
    try {
      await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
      const fh = await fsp.open(tmp, 'wx', 0o600);
      try {
        await fh.writeFile(json, 'utf8');
        await fh.chmod(0o600).catch(() => undefined); // mode given to open() is masked by the umask
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.rename(tmp, this.path);
    } catch (err) {
      await fsp.unlink(tmp).catch(() => undefined);
      throw new Error(`cannot save state to ${this.path}: ${errText(err)}`, { cause: err });
    }
    await syncDir(dir);
  }

  /** A fresh `<path>.corrupt-<timestamp>[-n]` name: nothing is ever overwritten. */
  private asideNames(): string[] {
    const stamp = new Date(this.now()).toISOString().replace(/[:.]/g, '-');
    return Array.from({ length: 1000 }, (_, n) => `${this.path}.corrupt-${stamp}${n === 0 ? '' : `-${n}`}`);
  }

  /** Copies the file as it is to a fresh aside name (the original stays); returns that path. */
  private async copyAside(): Promise<string> {
    for (const aside of this.asideNames()) {
      try {
        await fsp.copyFile(this.path, aside, fsConstants.COPYFILE_EXCL);
      } catch (err) {
        if (errCode(err) === 'EEXIST') continue;
        throw new Error(`state file ${this.path} has unusable records and could not be copied aside to ${aside}: ${errText(err)}`, { cause: err });
      }
      await fsp.chmod(aside, 0o600).catch(() => undefined);
      return aside;
    }
    throw new Error(`state file ${this.path} has unusable records and no free name was found to copy it aside`);
  }

  /** Renames the unusable file to a fresh `<path>.corrupt-<timestamp>`; returns that path. */
  private async moveAside(reason: string): Promise<string> {
    for (const aside of this.asideNames()) {
      if (await exists(aside)) continue;
      try {
        await fsp.rename(this.path, aside);
      } catch (err) {
        throw new Error(
          `state file ${this.path} is unusable (${reason}) and could not be moved aside to ${aside}: ${errText(err)}`,
          { cause: err },
        );
      }
      return aside;
    }
    throw new Error(`state file ${this.path} is unusable (${reason}) and no free name was found to move it aside`);
  }

  /** Removes temp files left by a crashed writer (dead pid, or older than 10 minutes). */
  private async removeStaleTemps(): Promise<void> {
    const dir = nodePath.dirname(this.path);
    const prefix = `${nodePath.basename(this.path)}.tmp-`;
    let names: string[];
    try {
      names = await fsp.readdir(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.startsWith(prefix)) continue;
      const full = nodePath.join(dir, name);
      const pid = Number(name.slice(prefix.length).split('-')[0]);
      let stale = Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && !processAlive(pid);
      if (!stale) {
        const st = await fsp.stat(full).catch(() => null);
        stale = st !== null && Date.now() - st.mtimeMs > STALE_TEMP_MS;
      }
      if (stale) await fsp.unlink(full).catch(() => undefined);
    }
  }
}

async function syncDir(dir: string): Promise<void> {
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

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errCode(err) === 'EPERM';
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await fsp.lstat(p);
    return true;
  } catch {
    return false;
  }
}

function errCode(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
