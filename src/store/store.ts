// Where the engine keeps its PersistedState, and the one way a stored document is read
// back: `parsePersisted`, shared by every store (the JSON file store for the headless
// runner, and the VS Code globalState store).
import { PersistedStateSchema, STATE_VERSION, WatchedThreadSchema, type PersistedState } from '../model/watch';

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
  /** Persists `state` as it is at the time of the call (later mutations are not saved). */
  save(state: PersistedState): Promise<void>;
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

/**
 * Validates (and migrates, when older) a stored document. Never resets silently: an
 * unknown or newer version, or a document that does not match the schema, is an error
 * the caller reports.
 */
export function parsePersisted(raw: unknown): { state: PersistedState } | { error: string } {
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
  const parsed = PersistedStateSchema.safeParse(doc);
  if (!parsed.success) return { error: `does not match the schema: ${describeIssues(parsed.error.issues)}` };
  return { state: parsed.data };
}

function describeIssues(issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>): string {
  const shown = issues.slice(0, 3).map((i) => `${i.path.length > 0 ? i.path.map(String).join('.') : '(root)'}: ${i.message}`);
  if (issues.length > 3) shown.push(`and ${issues.length - 3} more`);
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

  /** Throws an Error describing the first problem if the state is not valid. */
  serialize(state: PersistedState): string {
    const top = TopLevelSchema.safeParse(state);
    if (!top.success) throw new Error(describeIssues(top.error.issues));
    const checked = new Map<string, string>();
    const parts: string[] = [];
    for (const [id, watch] of Object.entries(state.watches)) {
      const json = JSON.stringify(watch);
      if (this.checked.get(id) !== json) {
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
