// A watch as the stores write it, and as they read it back. A stored record leaves out every
// field at the default `WatchedThreadSchema` gives it (null, 0, an empty list): a watch that never
// failed is about half its whole JSON, and with 10,000 watches a load is mostly `JSON.parse`.
// Read back, a record is made whole again before it is checked, so the check sees what the engine
// will use. Both functions are generated from the schema's own definition: adding a field to the
// schema is all a new field needs. A document keys each record by its thread id, and leaves the
// record's `threadId` out.
import type { $ZodType } from 'zod/v4/core';
import { noEntries } from '../model/sharedState';
import { isRecord, WatchedThreadSchema, type WatchedThread } from '../model/watch';
import type { Def } from './fastCheck';

/** A field of the record, and the value a stored record leaves out (null: none, always written). */
interface Field {
  key: string;
  leftOut: null | { value: null | 0 | 'empty list' };
}

export function recordFields(schema: $ZodType): Field[] {
  let def = schema._zod.def as unknown as Def;
  if (def.type === 'pipe') def = def.out!._zod.def; // a preprocess (old state files), then the object
  if (!def.shape) throw new Error('internal: a watch record is an object schema'); // only an object has a shape
  return Object.entries(def.shape).map(([key, field]) => {
    const d = field._zod.def;
    if (d.type !== 'default') return { key, leftOut: null };
    const value = d.defaultValue;
    if (value === null || value === 0) return { key, leftOut: { value } };
    if (Array.isArray(value) && value.length === 0) return { key, leftOut: { value: 'empty list' } };
    throw new Error(`internal: the default of ${key} (${JSON.stringify(value)}) is not one a record leaves out`);
  });
}

const FIELDS = recordFields(WatchedThreadSchema);

/**
 * The JSON a store writes for `w`: its fields in the schema's order, less those at their
 * default. `undefined` fields are left out too (as JSON.stringify does); the caller's check of
 * the watch itself says what is wrong with such a watch.
 */
export const storedWatch: (w: WatchedThread) => string = generate(
  'w',
  [
    'const o = {};',
    ...FIELDS.map(({ key, leftOut }) => {
      const v = `w[${JSON.stringify(key)}]`;
      const set = `o[${JSON.stringify(key)}] = ${v};`;
      if (leftOut === null) return set;
      const isDefault =
        leftOut.value === 'empty list' ? `(Array.isArray(${v}) && ${v}.length === 0)` : `${v} === ${leftOut.value}`;
      return `if (!(${isDefault})) ${set}`;
    }),
    'return JSON.stringify(o);',
  ].join(''), // each statement ends in its semicolon
);

/**
 * A stored record made whole: a new object with every field of the schema in its order, each one
 * left out at its default (an empty list: the one shared frozen list), the others as the record has
 * them (not copied), unknown keys left out (zod would strip them); its `threadId`, if it has none,
 * the key `id`. Anything but a plain object is returned as it is, for the check to refuse.
 */
export const wholeWatch: (record: unknown, id?: string) => unknown = generate(
  'v, id',
  [
    'if (typeof v !== "object" || v === null || Array.isArray(v)) return v;',
    'return {',
    ...FIELDS.map(({ key, leftOut }) => {
      const v = `v[${JSON.stringify(key)}]`;
      if (key === 'threadId') return `${JSON.stringify(key)}: ${v} === undefined ? id : ${v},`;
      if (leftOut === null) return `${JSON.stringify(key)}: ${v},`;
      const value = leftOut.value === 'empty list' ? 'NONE' : String(leftOut.value);
      return `${JSON.stringify(key)}: ${v} === undefined ? ${value} : ${v},`;
    }),
    '};',
  ].join(''), // each statement and property ends in its semicolon or comma
);

/** A record as a document holds it (`"<id>":{…}`): `json` (storedWatch's) without the `threadId` its key says. */
export function keyedRecord(id: string, json: string): string {
  const key = JSON.stringify(id);
  const prefix = `{"threadId":${key},`;
  return json.startsWith(prefix) ? `${key}:{${json.slice(prefix.length)}` : `${key}:${json}`;
}

/** `record` with the `threadId` its key `id` gives, if it has none (a copy: zod copies it anyway); else as it is. */
export function withThreadId(record: unknown, id: string): unknown {
  if (!isRecord(record)) return record;
  return { threadId: id, ...record }; // its own threadId, if it has one, comes after the key's
}

function generate<F>(param: string, body: string): F {
  // Every key in the code comes from the schema's definition, quoted by JSON.stringify; the
  // defaults are null, 0 or the shared empty list (recordFields refuses any other).
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from the schema's own definition (above)
  const make = new Function('NONE', `return function (${param}) {\n${body}\n};`) as (none: unknown) => F;
  return make(noEntries());
}

/** What is said of a disarm stored under "__proto__" (no thread has that id). */
export const PROTO_DISARM = 'the disarm of "__proto__" is not a usable thread id: left out';

/**
 * Whether a record of disarms read from JSON holds the key "__proto__" (JSON.parse makes it an own
 * key): zod's record leaves it out, so it is said instead of lost without a word.
 */
export function leftOutProto(disarmed: unknown): boolean {
  return typeof disarmed === 'object' && disarmed !== null && Object.hasOwn(disarmed, '__proto__');
}
