// Where the engine keeps its PersistedState, and the one way a stored document is read
// back: `parsePersisted`, shared by every store (the JSON file store for the headless
// runner, and the VS Code globalState store).
import { z } from 'zod';
import { PersistedStateSchema, STATE_VERSION, WatchedThreadSchema, type PersistedState } from '../model/watch';
import { excerpt } from '../protocol/lineSplitter';

export interface LoadResult {
  state: PersistedState;
  /**
   * Null when the state loaded cleanly (or there was none yet). Otherwise what went wrong
   * and what was done about it, for the user, e.g.
   * "state file X was corrupt (…); kept aside as Y; starting clean".
   */
  problem: string | null;
}

export interface StateStore {
  load(): Promise<LoadResult>;
  /**
   * Persists `state` as it is at the time of the call (later mutations are not saved).
   * `changed`: the threads whose watch may differ from the previous save through this store (a
   * hint a store may use to skip re-serializing the others); omitted, every one may have.
   */
  save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void>;
  /** Where the state lives, for messages (a file path, or a description). */
  readonly location: string;
}

/** Upgrades a document of version n to version n + 1. */
type Migration = (doc: Record<string, unknown>) => Record<string, unknown>;

/** The oldest document version this build can read. */
const OLDEST_VERSION = 1;
/**
 * MIGRATIONS[n] turns a version-n document into a version-(n+1) one. When STATE_VERSION
 * goes to 2, add MIGRATIONS[1] here; every version from OLDEST_VERSION up must have one.
 */
const MIGRATIONS: Readonly<Record<number, Migration>> = {};

/** A stored document that can be used: the state, and the records of it that could not be. */
export interface ParsedState {
  state: PersistedState;
  /**
   * One line per record left out (a watch that does not match the schema) or repaired (a
   * disarm whose time is unreadable: the thread stays disarmed). Empty when all was read.
   */
  dropped: string[];
}

/** The document around the records: what must be right for anything to be used. */
const DocumentSchema = PersistedStateSchema.extend({
  watches: z.record(z.string(), z.unknown()),
  disarmed: z.record(z.string(), z.unknown()),
});
const DisarmTimeSchema = PersistedStateSchema.shape.disarmed.valueType;

/**
 * Validates (and migrates, when older) a stored document. Never resets silently: an unknown or
 * newer version, or a document whose own fields do not match the schema, is an error the caller
 * reports. Within a good document, a watch record that does not match is left out, and a disarm
 * whose time is unreadable is kept (dated `now`): the thread stays disarmed, as the user asked.
 * Both are listed in `dropped`, for the caller to report and keep the original.
 */
export function parsePersisted(raw: unknown, now: () => number = Date.now): ParsedState | { error: string } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { error: `not a state object (got ${raw === null ? 'null' : Array.isArray(raw) ? 'an array' : typeof raw})` };
  }
  let doc = raw as Record<string, unknown>;
  const version = doc.version;
  if (version === undefined) return { error: 'no "version" field' };
  if (typeof version !== 'number' || !Number.isSafeInteger(version)) {
    return { error: `"version" is not an integer (got ${JSON.stringify(version)})` };
  }
  if (version > STATE_VERSION) {
    return { error: `written by a newer version of the extension (state version ${version}; this one reads up to ${STATE_VERSION})` };
  }
  if (version < OLDEST_VERSION) return { error: `unknown state version ${version}` };
  for (let v = version; v < STATE_VERSION; v++) {
    const migrate = MIGRATIONS[v];
    if (!migrate) return { error: `no migration from state version ${v}` };
    try {
      doc = { ...migrate(doc), version: v + 1 };
    } catch (err) {
      return { error: `migration from state version ${v} failed: ${err instanceof Error ? err.message : String(err)}` };
    }
  }
  const outer = DocumentSchema.safeParse(doc);
  if (!outer.success) return { error: `does not match the schema: ${describeIssues(outer.error.issues)}` };

  const dropped: string[] = [];
  const watches: PersistedState['watches'] = {};
  for (const [key, value] of Object.entries(outer.data.watches)) {
    const name = `watch ${JSON.stringify(excerpt(key, 60))}`;
    if (key === '__proto__') {
      dropped.push(`${name}: not a usable thread id`);
      continue;
    }
    const w = WatchedThreadSchema.safeParse(value);
    if (!w.success) dropped.push(`${name}: ${describeIssues(w.error.issues, 1)}`);
    else if (w.data.threadId !== key) dropped.push(`${name}: its threadId is ${JSON.stringify(excerpt(w.data.threadId, 60))}`);
    else watches[key] = w.data;
  }
  const disarmed: PersistedState['disarmed'] = {};
  for (const [key, value] of Object.entries(outer.data.disarmed)) {
    if (key === '__proto__') {
      dropped.push(`disarm of ${JSON.stringify(key)}: not a usable thread id`);
      continue;
    }
    const at = DisarmTimeSchema.safeParse(value);
    if (at.success) disarmed[key] = at.data;
    else {
      disarmed[key] = now();
      dropped.push(`disarm of ${JSON.stringify(excerpt(key, 60))}: its time ${excerpt(JSON.stringify(value) ?? String(value), 40)} is unreadable; the thread stays disarmed`);
    }
  }
  // Every part is checked by now: the top level by DocumentSchema, each watch and disarm above
  // (checking the whole again would double the load time of a large state).
  return { state: { version: outer.data.version, pausedAt: outer.data.pausedAt, watches, disarmed }, dropped };
}

/**
 * What a store says when it loaded a document without some of its records: `where` the
 * document was, what was left out, where the original is kept (`keptAs`), and what loaded.
 */
export function partialLoadProblem(where: string, parsed: ParsedState, keptAs: string): string {
  const kept = Object.keys(parsed.state.watches).length;
  return `${where}: ${describeDropped(parsed.dropped)}; ${keptAs}; the other ${kept} watch${kept === 1 ? '' : 'es'} loaded`;
}

/** "2 records could not be used (…; …)": the dropped list for a message, bounded. */
export function describeDropped(dropped: readonly string[]): string {
  const shown = dropped.slice(0, 3);
  if (dropped.length > 3) shown.push(`and ${dropped.length - 3} more`);
  return `${dropped.length} record${dropped.length === 1 ? '' : 's'} could not be used (${shown.join('; ')})`;
}

function describeIssues(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>, max = 3): string {
  const shown = issues.slice(0, max).map((i) => `${i.path.length > 0 ? i.path.map(String).join('.') : '(root)'}: ${i.message}`);
  if (max === 1 && issues.length > 1) return `${shown[0]} (+${issues.length - 1} more)`;
  if (issues.length > max) shown.push(`and ${issues.length - max} more`);
  return shown.join('; ');
}

const TopLevelSchema = PersistedStateSchema.omit({ watches: true });

/**
 * Turns a state into the JSON a store writes, refusing one that would not load back. Watches
 * are checked against the schema only when their JSON differs from what this serializer last
 * wrote: a save costs one stringify plus a check of what changed, not a check of every watch
 * (with 10,000 watches a full check takes about half a second here).
 */
export class StateSerializer {
  private checked = new Map<string, string>();

  /**
   * Throws an Error describing the first problem if the state is not valid. `changed`: only
   * these watches may differ from the previous call; the JSON of the others is reused.
   */
  serialize(state: PersistedState, changed?: ReadonlySet<string>): string {
    const top = TopLevelSchema.safeParse(state);
    if (!top.success) throw new Error(describeIssues(top.error.issues));
    const checked = new Map<string, string>();
    const parts: string[] = [];
    for (const [id, watch] of Object.entries(state.watches)) {
      const previous = this.checked.get(id);
      if (changed && previous !== undefined && !changed.has(id)) {
        checked.set(id, previous);
        parts.push(`${JSON.stringify(id)}:${previous}`);
        continue;
      }
      if (watch.threadId !== id) throw new Error(`watches.${id}: its threadId is ${JSON.stringify(watch.threadId)}`);
      const json = JSON.stringify(watch);
      if (previous !== json) {
        const parsed = WatchedThreadSchema.safeParse(watch);
        if (!parsed.success) throw new Error(describeIssues(parsed.error.issues.map((i) => ({ ...i, path: ['watches', id, ...i.path] }))));
      }
      checked.set(id, json);
      parts.push(`${JSON.stringify(id)}:${json}`);
    }
    this.checked = checked;
    return `{"version":${JSON.stringify(state.version)},"pausedAt":${JSON.stringify(state.pausedAt)},"watches":{${parts.join(',')}},"disarmed":${JSON.stringify(state.disarmed)}}\n`;
  }
}
