// A faster path around a zod schema, for the records of a large state at load: a plain check
// compiled from the schema's own definition (so the schema stays the one definition), that
// answers `true` only for a value the schema accepts *as it is*: nothing it would strip (an
// unknown key), fill in (a default), or change (a preprocess that is not the identity on it).
// Anything else, and any construct it does not know, is `false`: the caller then asks zod, which
// gives the same answer as before, with its message. So the check can only be faster, never
// more lenient. With 10,000 watches, zod's parse (a copy of every record) was most of a load.
import type { $ZodType } from 'zod/v4/core';

/** A compiled check: `true` means the schema accepts `value` unchanged. */
export type FastCheck = (value: unknown) => boolean;

/** The parts of zod's (v4 core) definitions the check reads. */
interface Def {
  type: string;
  /** A format the schema itself checks (zod/mini's `z.int()` is a number of format `safeint`). */
  format?: string;
  checks?: ReadonlyArray<{ _zod: { def: CheckDef } }>;
  shape?: Record<string, Schema>;
  catchall?: Schema;
  innerType?: Schema;
  element?: Schema;
  entries?: Record<string, unknown>;
  values?: readonly unknown[];
  options?: readonly Schema[];
  discriminator?: string;
  keyType?: Schema;
  valueType?: Schema;
  in?: Schema;
  out?: Schema;
  transform?: (value: unknown, ctx: unknown) => unknown;
}
interface CheckDef {
  check: string;
  format?: string;
  value?: unknown;
  inclusive?: boolean;
  minimum?: number;
}
interface Schema {
  _zod: { def: Def };
}

const never: FastCheck = () => false;

export function compileFastCheck(schema: $ZodType): FastCheck {
  return compile(schema);
}

function compile(schema: Schema): FastCheck {
  const def = schema._zod.def;
  // A refinement on anything but a string or a number is not known here.
  if (def.checks?.length && def.type !== 'string' && def.type !== 'number') return never;
  switch (def.type) {
    case 'string':
      return def.format === undefined ? withChecks(def, (v) => typeof v === 'string') : never;
    case 'number':
      if (def.format === 'safeint') return withChecks(def, (v) => Number.isSafeInteger(v));
      return def.format === undefined ? withChecks(def, (v) => typeof v === 'number' && Number.isFinite(v)) : never;
    case 'boolean':
      return (v) => typeof v === 'boolean';
    case 'unknown':
      return (v) => v !== undefined;
    case 'literal': {
      const values = def.values ?? [];
      return (v) => values.includes(v);
    }
    case 'enum': {
      const values = new Set(Object.values(def.entries ?? {}));
      return (v) => (typeof v === 'string' || typeof v === 'number') && values.has(v);
    }
    case 'nullable': {
      const inner = compile(def.innerType!);
      return (v) => v === null || inner(v);
    }
    case 'optional': {
      const inner = compile(def.innerType!);
      return (v) => v === undefined || inner(v);
    }
    case 'default': {
      // Missing: zod fills it in (the value would change): left to zod.
      const inner = compile(def.innerType!);
      return (v) => v !== undefined && inner(v);
    }
    case 'array': {
      const element = compile(def.element!);
      return (v) => {
        if (!Array.isArray(v)) return false;
        for (let i = 0; i < v.length; i++) if (!element(v[i])) return false;
        return true;
      };
    }
    case 'object':
      return compileObject(def);
    case 'record': {
      if (def.keyType!._zod.def.type !== 'string' || def.keyType!._zod.def.checks?.length) return never;
      const value = compile(def.valueType!);
      return (v) => isPlainObject(v) && Object.values(v).every(value);
    }
    case 'union':
      return compileUnion(def);
    case 'pipe': {
      // A preprocess (a transform, then the schema): only where the transform leaves the value
      // as it is (the same reference), and the schema accepts it unchanged.
      const before = def.in!._zod.def;
      if (before.type !== 'transform' || typeof before.transform !== 'function') return never;
      const transform = before.transform;
      const after = compile(def.out!);
      return (v) => {
        try {
          const ctx = { value: v, issues: [] as unknown[] };
          return transform(v, ctx) === v && ctx.issues.length === 0 && after(v);
        } catch {
          return false;
        }
      };
    }
    default:
      return never;
  }
}

function withChecks(def: Def, base: FastCheck): FastCheck {
  const checks: FastCheck[] = [];
  for (const c of def.checks ?? []) {
    const d = c._zod.def;
    if (d.check === 'number_format' && d.format === 'safeint') checks.push((v) => Number.isSafeInteger(v));
    else if (d.check === 'greater_than' && typeof d.value === 'number') {
      const min = d.value;
      checks.push(d.inclusive ? (v) => (v as number) >= min : (v) => (v as number) > min);
    } else if (d.check === 'less_than' && typeof d.value === 'number') {
      const max = d.value;
      checks.push(d.inclusive ? (v) => (v as number) <= max : (v) => (v as number) < max);
    } else if (d.check === 'min_length' && typeof d.minimum === 'number') {
      const min = d.minimum;
      checks.push((v) => (v as string).length >= min);
    } else return never;
  }
  if (checks.length === 0) return base;
  return (v) => {
    if (!base(v)) return false;
    for (let i = 0; i < checks.length; i++) if (!checks[i](v)) return false;
    return true;
  };
}

function compileObject(def: Def): FastCheck {
  // A catch-all would keep (and check) unknown keys: not known here.
  if (def.catchall !== undefined) return never;
  const keys = Object.keys(def.shape ?? {});
  const checks = keys.map((key) => compile(def.shape![key]));
  const known = new Set(keys);
  return (v) => {
    if (!isPlainObject(v)) return false;
    // An unknown key would be stripped: the value would change.
    for (const key in v) if (!known.has(key)) return false;
    for (let i = 0; i < keys.length; i++) if (!checks[i](v[keys[i]])) return false;
    return true;
  };
}

function compileUnion(def: Def): FastCheck {
  const options = (def.options ?? []).map((o) => ({ schema: o, check: compile(o) }));
  const discriminator = def.discriminator;
  if (discriminator === undefined) return (v) => options.some((o) => o.check(v));
  // A discriminated union: the option whose literal matches.
  const byValue = new Map<unknown, FastCheck[]>();
  for (const o of options) {
    const field = o.schema._zod.def.shape?.[discriminator]?._zod.def;
    if (field?.type !== 'literal') return never;
    for (const value of field.values ?? []) byValue.set(value, [...(byValue.get(value) ?? []), o.check]);
  }
  return (v) => {
    if (!isPlainObject(v)) return false;
    const candidates = byValue.get(v[discriminator]);
    if (candidates === undefined) return false;
    for (let i = 0; i < candidates.length; i++) if (candidates[i](v)) return true;
    return false;
  };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
