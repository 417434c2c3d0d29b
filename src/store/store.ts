// Where the engine keeps its PersistedState, and the one way every store reads a stored document
// back (`parsePersisted`) and writes one (`StateSerializer`).
import * as z from '../util/zod';
import { isRecord, PersistedStateSchema, STATE_VERSION, WatchedThreadSchema } from '../model/watch';
import type { PersistedState } from '../model/watch';
import { excerpt } from '../protocol/lineSplitter';
import { errorText } from '../util/errorText';
import { compileFastCheck } from './fastCheck';
import { keyedRecord, leftOutProto, PROTO_DISARM, storedWatch, wholeWatch, withThreadId } from './watchRecord';

export interface LoadResult {
  state: PersistedState;
  /** Null when the state loaded cleanly (or there was none); else what went wrong and what was done, for the user. */
  problem: string | null;
  /**
   * Threads whose watch in `state` differs from what the store holds (a store that merges
   * another source in: the leader handover): the engine's first save writes them. Omitted: none.
   */
  changed?: readonly string[];
}

export interface StateStore {
  load(): Promise<LoadResult>;
  /**
   * Persists `state` as it is at the time of the call (later mutations are not saved), durably:
   * when the promise resolves, a crash cannot lose it (the engine announces and acts on a
   * decision only after the save that holds it resolved).
   * `changed`: the threads whose watch may differ from the previous save through this store (a
   * hint a store may use to skip re-serializing the others); omitted, every one may have.
   */
  save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void>;
  /** Folds what the store keeps beside its snapshot (a journal) into it: a clean stop calls it after its last save. */
  compact?(): Promise<void>;
  /**
   * Lets go of the files it holds open between saves (a journal), writing nothing: a stale leader's
   * engine, dropped with its lease run out (./guard.ts), calls it instead of `compact`.
   */
  close?(): Promise<void>;
  /** Where the state lives, for messages (a file path, or a description). */
  readonly location: string;
}

/** The oldest document version this build can read. */
const OLDEST_VERSION = 1;
/** MIGRATIONS[n] turns a version-n document into a version-(n+1) one; every version from OLDEST_VERSION up has one. */
const MIGRATIONS: Readonly<Record<number, (doc: Record<string, unknown>) => Record<string, unknown>>> = {
  // Version 1 wrote every field of a watch; version 2 leaves out those at their default, and
  // reads a whole record as it is.
  1: (doc) => doc,
};

/** A stored document that can be used: the state, and the records of it that could not be. */
export interface ParsedState {
  state: PersistedState;
  /** One line per record left out (a watch not matching the schema) or repaired (a disarm whose time is unreadable). */
  dropped: string[];
}

/** The document around the records: what must be right for anything to be used. */
const DocumentSchema = z.extend(PersistedStateSchema, {
  watches: z.record(z.string(), z.unknown()),
  disarmed: z.record(z.string(), z.unknown()),
});
const DisarmTimeSchema = PersistedStateSchema.shape.disarmed._zod.def.valueType;

type StoredWatch = PersistedState['watches'][string];

/** `WatchedThreadSchema`'s own answer for what it accepts unchanged, without its copy (./fastCheck.ts). */
const watchAsItIs = compileFastCheck(WatchedThreadSchema);
/** The same for a record made whole (./watchRecord.ts): an object with no key but the schema's own. */
const wholeAsItIs = compileFastCheck(WatchedThreadSchema, { ownKeysOnly: true });

/**
 * A stored watch record (fields at their default left out: ./watchRecord.ts) checked against
 * `WatchedThreadSchema`. `owned`: the caller's own value (just parsed from JSON): made whole, it is
 * used as it is if the faster path accepts it; anything else goes through zod (its copy, its
 * defaults, its message). `key`: the thread id a document keys it by (its `threadId` if it has none).
 */
export function parseWatch(
  value: unknown,
  owned: boolean,
  key?: string,
): { success: true; data: StoredWatch } | { success: false; error: z.core.$ZodError } {
  if (owned) {
    const whole = wholeWatch(value, key);
    if (wholeAsItIs(whole)) return { success: true, data: whole as StoredWatch };
  }
  return WatchedThreadSchema.safeParse(key === undefined ? value : withThreadId(value, key));
}

/**
 * Validates (and migrates, when older) a stored document. Never resets silently: an unknown or
 * newer version, or a document whose own fields do not match the schema, is an error the caller
 * reports. Within a good document, a watch record that does not match is left out, and a disarm
 * whose time is unreadable is kept (dated `now`): the thread stays disarmed, as the user asked.
 * Both are listed in `dropped`, for the caller to report and keep the original.
 */
export function parsePersisted(
  raw: unknown,
  now: () => number = Date.now,
  /** `raw` is the caller's own (just parsed from JSON): its records may be used as they are. */
  owned = false,
): ParsedState | { error: string } {
  if (!isRecord(raw)) {
    return {
      error: `not a state object (got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw})`,
    };
  }
  let doc = raw;
  const version = doc.version;
  if (version === undefined) return { error: 'no "version" field' };
  if (typeof version !== 'number' || !Number.isSafeInteger(version))
    return { error: `"version" is not an integer (got ${JSON.stringify(version)})` };
  if (version > STATE_VERSION) {
    return {
      error: `written by a newer version of the extension (state version ${version}; this one reads up to ${STATE_VERSION})`,
    };
  }
  if (version < OLDEST_VERSION) return { error: `unknown state version ${version}` };
  for (let v = version; v < STATE_VERSION; v++) {
    const migrate = MIGRATIONS[v];
    if (!migrate) return { error: `no migration from state version ${v}` };
    try {
      doc = { ...migrate(doc), version: v + 1 };
    } catch (err) {
      return { error: `migration from state version ${v} failed: ${errorText(err)}` };
    }
  }
  // The document around the records by zod (which sees an empty record in their place, or the value
  // itself when it is not an object); its records one by one below (zod's record parse copies
  // every entry first: with 10,000 watches, a fifth of a load).
  const rawWatches = doc.watches;
  const recordsApart = isRecord(rawWatches);
  const outer = DocumentSchema.safeParse(recordsApart ? { ...doc, watches: {} } : doc);
  if (!outer.success) return { error: `does not match the schema: ${describeIssues(outer.error.issues)}` };

  const dropped: string[] = [];
  const records = recordsApart ? rawWatches : outer.data.watches;
  // The caller's own records object is used as it is, less what cannot be used (with 10,000
  // watches, building a second one was a tenth of a load); anyone else's is copied.
  const inPlace = owned && recordsApart;
  const watches = (inPlace ? records : {}) as PersistedState['watches'];
  for (const key of Object.keys(records)) {
    const name = (): string => `watch ${JSON.stringify(excerpt(key, 60))}`;
    const w = key === '__proto__' ? null : parseWatch(records[key], owned, key);
    if (w === null) dropped.push(`${name()}: not a usable thread id`);
    else if (!w.success) dropped.push(`${name()}: ${describeIssues(w.error.issues, 1)}`);
    else if (w.data.threadId !== key)
      dropped.push(`${name()}: its threadId is ${JSON.stringify(excerpt(w.data.threadId, 60))}`);
    else {
      watches[key] = w.data;
      continue;
    }
    if (inPlace) delete watches[key];
  }
  const disarmed: PersistedState['disarmed'] = {};
  if (leftOutProto(doc.disarmed)) dropped.push(PROTO_DISARM);
  for (const [key, value] of Object.entries(outer.data.disarmed)) {
    const at = DisarmTimeSchema.safeParse(value);
    if (at.success) disarmed[key] = at.data;
    else {
      disarmed[key] = now();
      dropped.push(
        `disarm of ${JSON.stringify(excerpt(key, 60))}: its time ${excerpt(JSON.stringify(value) ?? String(value), 40)} is unreadable; the thread stays disarmed`,
      );
    }
  }
  // Every part is checked by now (checking the whole again would double a large state's load time).
  return { state: { version: outer.data.version, pausedAt: outer.data.pausedAt, watches, disarmed }, dropped };
}

/** What a store says when it loaded the document at `where` without some records, the original kept as `keptAs`. */
export function partialLoadProblem(where: string, parsed: ParsedState, keptAs: string): string {
  const kept = Object.keys(parsed.state.watches).length;
  return `${where}: ${describeDropped(parsed.dropped)}; ${keptAs}; the other ${kept} watch${kept === 1 ? '' : 'es'} loaded`;
}

/** A save's rejection when its state would not load back (`err`: why): nothing is written to `location`. */
export function refusedSave(location: string, err: unknown): Promise<never> {
  return Promise.reject(
    new Error(`refusing to save an invalid state to ${location}: ${errorText(err)}`, { cause: err }),
  );
}

/** A stamp a store puts into its document (`journal`: its generation, `daemon`): the string, or null. */
export function stampOf(document: object, field: 'journal' | 'daemon'): string | null {
  const value = (document as Record<string, unknown>)[field];
  return typeof value === 'string' && value.length > 0 ? value : null;
}

/** "2 records could not be used (…; …)": the dropped list for a message, bounded. */
export function describeDropped(dropped: readonly string[]): string {
  return `${dropped.length} record${dropped.length === 1 ? '' : 's'} could not be used (${listed(dropped, 3)})`;
}

function describeIssues(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>, max = 3): string {
  const shown = issues.map((i) => `${i.path.length > 0 ? i.path.map(String).join('.') : '(root)'}: ${i.message}`);
  if (max === 1 && issues.length > 1) return `${shown[0]} (+${issues.length - 1} more)`;
  return listed(shown, max);
}

/** The first `max` items, and how many more there are. */
function listed(items: readonly string[], max: number): string {
  const shown = items.slice(0, max);
  if (items.length > max) shown.push(`and ${items.length - max} more`);
  return shown.join('; ');
}

const TopLevelSchema = z.omit(PersistedStateSchema, { watches: true });

/** Throws an Error naming the first problem if the watch would not load back. */
function checkWatch(id: string, watch: StoredWatch): void {
  // What the faster path accepts, zod accepts (./fastCheck.ts); anything else is zod's to say.
  if (watchAsItIs(watch)) return;
  const parsed = WatchedThreadSchema.safeParse(watch);
  if (!parsed.success)
    throw new Error(describeIssues(parsed.error.issues.map((i) => ({ ...i, path: ['watches', id, ...i.path] }))));
}

/**
 * A 53-bit fingerprint of a watch's JSON (two 32-bit multiplicative hashes, one seeded with the
 * length): two different texts share one with a chance of about 1 in 10^16, so a save that finds
 * a watch's fingerprint unchanged takes it as unchanged.
 */
function fingerprint(json: string): number {
  let a = 0x811c9dc5;
  let b = 0x9e3779b9 ^ json.length;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return (a >>> 0) * 0x200000 + ((b >>> 0) & 0x1fffff);
}

/** What changed in a state since a serializer last looked: each a JSON text, already checked. */
export interface StateChanges {
  /** Watches whose JSON differs from the last look (new ones included), by thread id. */
  watches: Array<[string, string]>;
  /** Thread ids whose watch is gone since the last look. */
  removed: string[];
  /** `{"pausedAt":…,"disarmed":…}` when either differs from the last look; else null. */
  top: string | null;
}

/**
 * Turns a state into the JSON a store writes, refusing one that would not load back. A watch is
 * checked against the schema only when its JSON differs from what the serializer last took in
 * (with 10,000 watches a full check takes about half a second). `changes` gives what differs (a
 * journal appends just that); `document` the whole state as one JSON text.
 *
 * By default it keeps a 53-bit fingerprint of each watch's JSON (about 50 bytes, against about 560
 * for the JSON), and `document` serializes the state it last took in, as that state is now. With
 * `keepJson` (the globalState store writes the whole document at every save) it keeps each
 * watch's JSON, and `document` joins those texts, without serializing 10,000 watches every save.
 * A watch taken in by `loaded` has no fingerprint until it is first saved: a save that looks at
 * it writes it (the engine marks only what it changes, so that is a watch that changed).
 */
export class StateSerializer {
  /** Per watch: its JSON (`keepJson`) or its fingerprint; null: as loaded, not serialized since. */
  private known = new Map<string, string | number | null>();
  private pausedAt: string | null = null;
  private disarmed: string | null = null;
  /** The state last taken in (without `keepJson`, `document` serializes it). */
  private state: PersistedState | null = null;

  constructor(private readonly opts: { keepJson?: boolean } = {}) {}

  /**
   * What differs from the previous call, checked; throws an Error describing the first problem
   * (and then has taken nothing in). `changed`: only these watches may differ, be new or be gone
   * (omitted: every one is looked at); the engine marks every watch it adds, changes or removes
   * (its test "saves only what changed, and what it saves equals a full save" holds it to that).
   */
  changes(state: PersistedState, changed?: ReadonlySet<string>): StateChanges {
    const topCheck = TopLevelSchema.safeParse(state);
    if (!topCheck.success) throw new Error(describeIssues(topCheck.error.issues));
    const hinted = changed !== undefined;
    const ids: Iterable<string> = hinted ? changed : Object.keys(state.watches);
    const watches: Array<[string, string]> = [];
    /** What `known` takes for each of `watches`, once every one has been checked. */
    const marks = new Map<string, string | number>();
    const removed = new Set<string>();
    for (const id of ids) {
      const watch = Object.hasOwn(state.watches, id) ? state.watches[id] : undefined;
      const previous = this.known.get(id);
      if (!watch) {
        if (previous !== undefined) removed.add(id);
        continue;
      }
      if (watch.threadId !== id) throw new Error(`watches.${id}: its threadId is ${JSON.stringify(watch.threadId)}`);
      const json = storedWatch(watch);
      const mark = this.opts.keepJson ? json : fingerprint(json);
      if (previous === mark) continue;
      checkWatch(id, watch);
      watches.push([id, json]);
      marks.set(id, mark);
    }
    if (!hinted) for (const id of this.known.keys()) if (!Object.hasOwn(state.watches, id)) removed.add(id);
    for (const [id, mark] of marks) this.known.set(id, mark);
    for (const id of removed) this.known.delete(id);
    const pausedAt = JSON.stringify(state.pausedAt);
    const disarmed = JSON.stringify(state.disarmed);
    const topChanged = pausedAt !== this.pausedAt || disarmed !== this.disarmed;
    this.pausedAt = pausedAt;
    this.disarmed = disarmed;
    this.state = state;
    return {
      watches,
      removed: [...removed],
      top: topChanged ? `{"pausedAt":${pausedAt},"disarmed":${disarmed}}` : null,
    };
  }

  /**
   * Takes in a state a store has just read back, checked record by record (`parsePersisted`,
   * a journal's replay), without checking it again, and without serializing it (with 10,000
   * watches, that was most of the load): each watch is known as loaded until it is saved. With
   * `keepJson`, each watch's JSON is kept now. Any earlier look is forgotten.
   */
  loaded(state: PersistedState): void {
    this.known = new Map();
    for (const id in state.watches) this.known.set(id, this.opts.keepJson ? storedWatch(state.watches[id]) : null);
    this.pausedAt = JSON.stringify(state.pausedAt);
    this.disarmed = JSON.stringify(state.disarmed);
    this.state = state;
  }

  /**
   * The whole state as one JSON text: with `keepJson`, as the last `changes` (or `loaded`) took it
   * in; without, the state it took in as it is now (a watch changed since is checked first: throws
   * if it would not load back). `extra`: the store's own top-level fields, each as JSON text.
   */
  document(version: number, extra: Record<string, string> = {}): string {
    const parts: string[] = [];
    if (this.opts.keepJson) {
      for (const [id, json] of this.known) parts.push(keyedRecord(id, json as string));
    } else if (this.state) {
      for (const [id, mark] of this.known) {
        const watch = Object.hasOwn(this.state.watches, id) ? this.state.watches[id] : undefined;
        if (!watch) continue; // removed since it was taken in: its removal is the next save's
        const json = storedWatch(watch);
        // Checked at its last save if unchanged since; else (loaded, or changed before a compaction) now.
        if (mark === null || mark !== fingerprint(json)) checkWatch(id, watch);
        parts.push(keyedRecord(id, json));
      }
    }
    const more = Object.entries(extra)
      .map(([k, v]) => `,${JSON.stringify(k)}:${v}`)
      .join('');
    return `{"version":${JSON.stringify(version)}${more},"pausedAt":${this.pausedAt ?? 'null'},"watches":{${parts.join(',')}},"disarmed":${this.disarmed ?? '{}'}}\n`;
  }

  /** Throws an Error describing the first problem if the state is not valid; else its whole JSON. */
  serialize(state: PersistedState, changed?: ReadonlySet<string>): string {
    this.changes(state, changed);
    return this.document(state.version);
  }
}
