// The crash journal's records (journal.ts writes them), its header, and its replay over its
// snapshot. Pure: text in, state and a report out.
//
// Format: newline-delimited JSON. The first line names the snapshot the journal belongs to,
// `{"journal":1,"generation":"<g>"}`; the snapshot carries the same `"journal":"<g>"`. A
// journal whose generation is not the snapshot's was folded into it already (a crash between
// writing the new snapshot and removing the old journal) and is not replayed. Each later line
// is one record: `{"watch":{…}}` (a watch, whole), `{"removed":"<threadId>"}` or
// `{"top":{"pausedAt":…,"disarmed":{…}}}`. A torn last line (a crash in the middle of an
// append) is ignored: that save never resolved, so nothing was announced or sent on it. A bad
// record anywhere else is reported, never silently dropped.
import * as z from '../util/zod';
import { isRecord, PersistedStateSchema, type PersistedState } from '../model/watch';
import { excerpt } from '../protocol/lineSplitter';
import { parseWatch, type StateChanges } from './store';
import { leftOutProto, PROTO_DISARM } from './watchRecord';

export const JOURNAL_FORMAT = 1;

const HeaderSchema = z.object({ journal: z.literal(JOURNAL_FORMAT), generation: z.string().check(z.minLength(1)) });
const TopSchema = z.pick(PersistedStateSchema, { pausedAt: true, disarmed: true });

/** The journal lines (each ending in a newline) for one save's changes; '' when nothing changed. */
export function journalLines(changes: StateChanges): string {
  let out = '';
  for (const [, json] of changes.watches) out += `{"watch":${json}}\n`;
  for (const id of changes.removed) out += `{"removed":${JSON.stringify(id)}}\n`;
  if (changes.top !== null) out += `{"top":${changes.top}}\n`;
  return out;
}

export function journalHeader(generation: string): string {
  return `${JSON.stringify({ journal: JOURNAL_FORMAT, generation })}\n`;
}

/** The generation a journal's text names in its header; null when it has no readable header. */
export function journalGeneration(text: string): string | null {
  const end = text.indexOf('\n');
  if (end === -1) return null; // no complete header line
  const h = HeaderSchema.safeParse(parseLine(text.slice(0, end)));
  return h.success ? h.data.generation : null;
}

export interface Replayed {
  /** Records applied. */
  applied: number;
  /** One line per record that could not be used (left out, reported). */
  dropped: string[];
  /** The last line was cut short (a crash during an append): ignored. */
  torn: boolean;
  /** The journal belongs to another snapshot (already folded into this one): nothing replayed. */
  stale: boolean;
}

/** Applies the journal `text` to `state` (in place) when its generation is `generation`; never throws. */
export function replayJournal(state: PersistedState, text: string, generation: string | null): Replayed {
  const result: Replayed = { applied: 0, dropped: [], torn: false, stale: false };
  if (text.length === 0) return result;
  const complete = text.endsWith('\n');
  const lines = text.split('\n');
  if (complete) lines.pop(); // the empty string after the last newline
  const last = lines.length - 1;
  // The header itself cut short: nothing after it was ever written.
  if (!complete && last === 0) return { ...result, torn: true };
  const h = HeaderSchema.safeParse(parseLine(lines[0]));
  if (!h.success) {
    result.dropped.push(`journal header unreadable (${excerpt(lines[0], 60)}): no record of it could be replayed`);
    return result;
  }
  if (h.data.generation !== generation) return { ...result, stale: true };
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (i === last && !complete) {
      result.torn = true; // cut short: its save never resolved, so nothing was acted on it
      break;
    }
    const raw = parseLine(line);
    const problem = apply(state, raw);
    if (problem === null) {
      result.applied += 1;
      if (leftOutProto((raw as { top?: { disarmed?: unknown } }).top?.disarmed))
        result.dropped.push(`journal record ${i}: ${PROTO_DISARM}; the rest applied`);
    } else result.dropped.push(`journal record ${i}: ${problem}${raw === undefined ? ` (${excerpt(line, 60)})` : ''}`);
  }
  return result;
}

/** The value of a line of JSON; undefined when it is not JSON. */
function parseLine(line: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    // not JSON: undefined
  }
  return value;
}

/** Applies one record; null when it applied, else what was wrong with it. */
function apply(state: PersistedState, record: unknown): string | null {
  if (!isRecord(record)) return record === undefined ? 'not JSON' : 'not a record';
  if ('watch' in record) {
    const w = parseWatch(record.watch, true); // just parsed: the record made whole is used as it is
    if (!w.success) {
      const issue = w.error.issues[0]; // zod names at least one
      const id = (record.watch as { threadId?: unknown } | null)?.threadId;
      const which = typeof id === 'string' ? JSON.stringify(excerpt(id, 60)) : '(no thread id)';
      return `watch ${which}: ${issue.path.map(String).join('.') || '(root)'}: ${issue.message}`;
    }
    if (w.data.threadId === '__proto__') return 'not a usable thread id';
    state.watches[w.data.threadId] = w.data;
    return null;
  }
  if ('removed' in record) {
    if (typeof record.removed !== 'string') return 'removed: not a thread id';
    delete state.watches[record.removed];
    return null;
  }
  if ('top' in record) {
    const top = TopSchema.safeParse(record.top);
    if (!top.success) return `top: ${top.error.issues[0].message}`;
    state.pausedAt = top.data.pausedAt;
    state.disarmed = top.data.disarmed;
    return null;
  }
  return `unknown record (${excerpt(JSON.stringify(record), 60)})`;
}
