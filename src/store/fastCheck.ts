// A faster path around a zod schema, for the records of a large state at load (with 10,000
// watches, zod's parse, a copy of every record, was most of a load): a plain check compiled from
// the schema's own definition, that answers `true` only for a value the schema accepts *as it
// is*: nothing it would strip (an unknown key), fill in (a default) or change (a preprocess that
// is not the identity on it). Anything else, and any construct it does not know, is `false`: the
// caller then asks zod. So the check can only be faster, never more lenient.
import type { $ZodType } from 'zod/v4/core';

/** A compiled check: `true` means the schema accepts `value` unchanged. */
export type FastCheck = (value: unknown) => boolean;

/** The parts of zod's (v4 core) definitions read here (and by ./watchRecord.ts). */
export interface Def {
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
  /** A `_default`'s value. */
  defaultValue?: unknown;
}
interface CheckDef {
  check: string;
  format?: string;
  value?: unknown;
  inclusive?: boolean;
  minimum?: number;
}
export interface Schema {
  _zod: { def: Def };
}

/**
 * `ownKeysOnly`: the values checked are objects with no key but the schema's own (./watchRecord.ts
 * makes records whole that way): the top-level one is not searched for unknown keys (half the check).
 */
export function compileFastCheck(schema: $ZodType, options: { ownKeysOnly?: boolean } = {}): FastCheck {
  // One generated JavaScript function per object, array, record, union and preprocess of the
  // schema, each a straight run of tests: about four times faster than nested closures. Every
  // name, key and literal in the code comes from the schema's definition, quoted by
  // JSON.stringify, or is passed in as a value (`refs`).
  const gen = new Generator();
  const root = gen.test(schema, 'v', options.ownKeysOnly === true);
  const names = gen.refs.map((_, i) => `r${i}`);
  const body = `${gen.functions.join('\n')}\nreturn (v) => ${root};`;
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from the schema's own definition (above)
  const make = new Function(...names, body) as (...refs: unknown[]) => FastCheck;
  return make(...gen.refs);
}

/** Writes the check of each schema node as a JavaScript boolean expression over a variable. */
class Generator {
  readonly functions: string[] = [];
  readonly refs: unknown[] = [];

  /** A value the generated code reads as `rN`. */
  private ref(value: unknown): string {
    this.refs.push(value);
    return `r${this.refs.length - 1}`;
  }

  /** A function `fN(v)` of the generated code, `body` its statements; its name. */
  private fn(body: string): string {
    const name = `f${this.functions.length}`;
    this.functions.push(`function ${name}(v) {\n${body}\n}`);
    return name;
  }

  /**
   * The expression that is true when the value in `v` is accepted as it is. `ownKeysOnly`: `v` is
   * the checked value itself, known to have no key its schema does not have.
   */
  test(schema: Schema, v: string, ownKeysOnly = false): string {
    const def = schema._zod.def;
    // A refinement on anything but a string or a number is not known here.
    if (def.checks?.length && def.type !== 'string' && def.type !== 'number') return 'false';
    switch (def.type) {
      case 'string':
        return def.format === undefined ? this.withChecks(def, `typeof ${v} === "string"`, v) : 'false';
      case 'number':
        if (def.format === 'safeint') return this.withChecks(def, `Number.isSafeInteger(${v})`, v);
        return def.format === undefined
          ? this.withChecks(def, `(typeof ${v} === "number" && Number.isFinite(${v}))`, v)
          : 'false';
      case 'boolean':
        return `typeof ${v} === "boolean"`;
      case 'unknown':
        return `${v} !== undefined`;
      case 'literal':
        return `${this.ref(def.values ?? [])}.includes(${v})`;
      case 'enum': {
        const values = this.ref(new Set(Object.values(def.entries ?? {})));
        return `((typeof ${v} === "string" || typeof ${v} === "number") && ${values}.has(${v}))`;
      }
      case 'nullable':
        return `(${v} === null || ${this.test(def.innerType!, v)})`;
      case 'optional':
        return `(${v} === undefined || ${this.test(def.innerType!, v)})`;
      case 'default':
        // Missing: zod fills it in (the value would change): left to zod.
        return `(${v} !== undefined && ${this.test(def.innerType!, v)})`;
      case 'array': {
        const element = this.test(def.element!, 'e');
        const f = this.fn(
          `if (!Array.isArray(v)) return false;\nfor (let i = 0; i < v.length; i++) { const e = v[i]; if (!(${element})) return false; }\nreturn true;`,
        );
        return `${f}(${v})`;
      }
      case 'object':
        return this.object(def, v, ownKeysOnly);
      case 'record': {
        if (def.keyType!._zod.def.type !== 'string' || def.keyType!._zod.def.checks?.length) return 'false';
        const value = this.test(def.valueType!, 'e');
        const f = this.fn(`${PLAIN}\nfor (const e of Object.values(v)) if (!(${value})) return false;\nreturn true;`);
        return `${f}(${v})`;
      }
      case 'union':
        return this.union(def, v);
      case 'pipe': {
        // A preprocess (a transform, then the schema): only where the transform leaves the value
        // as it is (the same reference), and the schema accepts it unchanged.
        const before = def.in!._zod.def;
        if (before.type !== 'transform' || typeof before.transform !== 'function') return 'false';
        const transform = this.ref(before.transform);
        const after = this.test(def.out!, 'v', ownKeysOnly);
        const f = this.fn(
          `try { const ctx = { value: v, issues: [] }; return ${transform}(v, ctx) === v && ctx.issues.length === 0 && ${after}; } catch { return false; }`,
        );
        return `${f}(${v})`;
      }
      default:
        return 'false';
    }
  }

  private withChecks(def: Def, base: string, v: string): string {
    const parts = [base];
    for (const c of def.checks ?? []) {
      const d = c._zod.def;
      if (d.check === 'number_format' && d.format === 'safeint') parts.push(`Number.isSafeInteger(${v})`);
      else if (d.check === 'greater_than' && finite(d.value))
        parts.push(`${v} ${d.inclusive ? '>=' : '>'} ${String(d.value)}`);
      else if (d.check === 'less_than' && finite(d.value))
        parts.push(`${v} ${d.inclusive ? '<=' : '<'} ${String(d.value)}`);
      else if (d.check === 'min_length' && finite(d.minimum)) parts.push(`${v}.length >= ${String(d.minimum)}`);
      else return 'false';
    }
    return `(${parts.join(' && ')})`;
  }

  private object(def: Def, v: string, ownKeysOnly: boolean): string {
    // A catch-all would keep (and check) unknown keys: not known here.
    if (def.catchall !== undefined) return 'false';
    const keys = Object.keys(def.shape ?? {});
    const known = this.ref(new Set(keys));
    const lines = [PLAIN];
    if (!ownKeysOnly) lines.push(`for (const k in v) if (!${known}.has(k)) return false;`); // an unknown key would be stripped
    keys.forEach((key, i) => {
      lines.push(`const x${i} = v[${JSON.stringify(key)}];`);
      lines.push(`if (!(${this.test(def.shape![key], `x${i}`)})) return false;`);
    });
    lines.push('return true;');
    return `${this.fn(lines.join('\n'))}(${v})`;
  }

  private union(def: Def, v: string): string {
    const options = def.options ?? [];
    const discriminator = def.discriminator;
    if (discriminator === undefined)
      return options.length === 0 ? 'false' : `(${options.map((o) => this.test(o, v)).join(' || ')})`;
    // A discriminated union: the options whose literal matches.
    const byValue = new Map<unknown, Schema[]>();
    for (const o of options) {
      const field = o._zod.def.shape?.[discriminator]?._zod.def;
      if (field?.type !== 'literal') return 'false';
      for (const value of field.values ?? []) byValue.set(value, [...(byValue.get(value) ?? []), o]);
    }
    const lines = [PLAIN, `const d = v[${JSON.stringify(discriminator)}];`];
    for (const [value, candidates] of byValue) {
      lines.push(`if (d === ${this.ref(value)}) return ${candidates.map((o) => this.test(o, 'v')).join(' || ')};`);
    }
    lines.push('return false;');
    return `${this.fn(lines.join('\n'))}(${v})`;
  }
}

/** The first statement of a function whose `v` must be a plain object. */
const PLAIN = 'if (typeof v !== "object" || v === null || Array.isArray(v)) return false;';

/** A bound the generated code can write as a number literal. */
function finite(n: unknown): n is number {
  return typeof n === 'number' && Number.isFinite(n);
}
