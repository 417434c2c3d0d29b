// The protocol drift check: does everything the product reads from the Codex app-server (the zod
// schemas of src/protocol/schema.ts) still exist, with a type the product accepts, in the JSON
// schema a Codex binary generates for its own protocol (`codex app-server generate-json-schema`)?
//
// The product side is derived from the zod schemas themselves (their definitions are walked), so a
// field newly read in schema.ts is checked without touching this file. The pairing of a method
// with the schema its result, notification or request params are parsed with is the table READS,
// kept equal to src/protocol/client.ts by test/unit/protocolDrift.test.ts.
//
// What counts:
// - A field the product requires (no `.optional()`, no `.catch()`) that is gone, or whose type the
//   product would reject: a problem (the read fails with a protocol error).
// - A field read with `.optional()` or `.catch()` whose type changed: a problem too. The read no
//   longer fails, but `.catch()` turns every such value into its fallback (e.g. `updatedAt` 0,
//   which blinds the home scan) and an optional field of the wrong type still fails the read.
// - A field read with `.optional()` or `.catch()` that is gone: a note (the product copes; it
//   always sees the fallback from now on).
// - A field the product requires that cannot be null and is no longer `required` in the schema: a
//   problem (the generator marks no Option field required, yet the daemon writes those as null;
//   so a nullable field's `required` is not looked at).
// - Everything found in a read that client.ts parses with a fallback (a server request's
//   `threadId`: safeParse, else null) is a note.
// Types are compared as what the daemon may send against what the product accepts: every variant
// of the daemon's type must be accepted (integer is a number; an enum value the product does not
// list is rejected; a daemon type gaining null is a change). Unions are matched variant by variant: a
// daemon object variant is checked against the first product variant whose literal fields
// (e.g. ThreadStatus `type: "active"`) it can carry, the way zod's union tries its options in
// order; a product variant with literal fields that no daemon variant can carry has vanished.
import type * as z from 'zod/mini';
import * as schemas from '../../src/protocol/schema';
import {
  type DaemonAlt,
  type DaemonObject,
  type DaemonProtocol,
  type JsonSchema,
  methodIndex,
  paramsRef,
  Resolver,
  type Shape,
} from './protocolSchema';

// ---------------------------------------------------------------------------------------------
// What the product reads, and from where.

export type ReadKind = 'result' | 'notification' | 'request';

export interface Read {
  method: string;
  /** A request's result, a notification's params, or a server request's params. */
  kind: ReadKind;
  /** The export of src/protocol/schema.ts it is parsed with (the name, for the unit check). */
  name: keyof typeof schemas;
  schema: z.ZodMiniType;
  /**
   * Set when client.ts parses this with a fallback instead of failing (safeParse, then a default):
   * what it falls back to. Its findings are then notes, not problems.
   */
  fallback?: string;
}

const result = (method: string, name: keyof typeof schemas): Read => read(method, 'result', name);
const notification = (method: string, name: keyof typeof schemas): Read => read(method, 'notification', name);
function read(method: string, kind: ReadKind, name: keyof typeof schemas): Read {
  return { method, kind, name, schema: schemas[name] as unknown as z.ZodMiniType };
}

/**
 * Every read of src/protocol/client.ts: each `this.call('method', …, XSchema)`, each notification
 * case, and the params of the server requests (parsed for their `threadId`: the engine holds a
 * thread back while a request of its is pending, so a request without `threadId` is not noticed).
 */
export const READS: readonly Read[] = [
  result('initialize', 'InitializeResultSchema'),
  result('thread/loaded/list', 'LoadedListResultSchema'),
  result('thread/list', 'ThreadListResultSchema'),
  result('thread/goal/get', 'GoalResultSchema'),
  result('thread/read', 'ThreadResultSchema'),
  result('thread/turns/list', 'TurnsListResultSchema'),
  result('thread/resume', 'ResumeResultSchema'),
  result('thread/goal/set', 'GoalResultSchema'),
  result('account/rateLimits/read', 'RateLimitsResultSchema'),
  notification('thread/goal/updated', 'GoalUpdatedSchema'),
  notification('thread/goal/cleared', 'ThreadIdSchema'),
  notification('thread/status/changed', 'ThreadStatusChangedSchema'),
  notification('thread/started', 'ThreadStartedSchema'),
  notification('thread/closed', 'ThreadIdSchema'),
  notification('turn/started', 'TurnNotificationSchema'),
  notification('turn/completed', 'TurnNotificationSchema'),
  notification('error', 'ErrorNotificationSchema'),
  notification('thread/tokenUsage/updated', 'TokenUsageSchema'),
  notification('serverRequest/resolved', 'ServerRequestResolvedSchema'),
  notification('account/rateLimits/updated', 'RateLimitsUpdatedSchema'),
  ...schemas.SERVER_REQUEST_METHODS.map((m): Read => ({
    ...read(m, 'request', 'ServerRequestParamsSchema'),
    fallback: 'threadId null: no thread is held',
  })),
];

// ---------------------------------------------------------------------------------------------
// The product side: what a zod schema accepts, as alternatives.

export type Mode = 'required' | 'optional' | 'tolerant';

export interface Need {
  alts: Shape<Field>[];
}
export interface Field extends Need {
  mode: Mode;
}

interface ZodDef {
  type: string;
  innerType?: z.ZodMiniType;
  in?: z.ZodMiniType;
  element?: z.ZodMiniType;
  shape?: Record<string, z.ZodMiniType>;
  options?: z.ZodMiniType[];
  values?: unknown[];
  entries?: Record<string, unknown>;
  valueType?: z.ZodMiniType;
}

function defOf(schema: z.ZodMiniType): ZodDef {
  return (schema as unknown as { _zod: { def: ZodDef } })._zod.def;
}

/** What `schema` accepts as input, and whether it may be absent (optional) or falls back (tolerant). */
export function productField(schema: z.ZodMiniType): Field {
  const def = defOf(schema);
  switch (def.type) {
    case 'string':
      return required([{ t: 'string', values: null }]);
    case 'number':
      return required([{ t: 'number' }]);
    case 'boolean':
      return required([{ t: 'boolean' }]);
    case 'null':
      return required([{ t: 'null' }]);
    case 'unknown':
    case 'any':
      return required([{ t: 'any' }]);
    case 'literal':
    case 'enum': {
      const values = def.type === 'literal' ? (def.values ?? []) : Object.values(def.entries ?? {});
      if (!values.every((v): v is string => typeof v === 'string'))
        throw new Error(`protocolDrift: a non-string ${def.type} is not handled: ${JSON.stringify(values)}`);
      return required([{ t: 'string', values }]);
    }
    case 'nullable': {
      const inner = productField(def.innerType!);
      return { ...inner, alts: [...inner.alts, { t: 'null' }] };
    }
    case 'optional':
    case 'default': {
      const inner = productField(def.innerType!);
      return { ...inner, mode: inner.mode === 'tolerant' ? 'tolerant' : 'optional' };
    }
    case 'catch':
      return { ...productField(def.innerType!), mode: 'tolerant' };
    case 'pipe':
      return productField(def.in!); // the input side: what arrives on the wire
    case 'array':
      return required([{ t: 'array', items: productField(def.element!) }]);
    case 'record':
      return required([{ t: 'record', values: productField(def.valueType!) }]);
    case 'object': {
      const fields = new Map<string, Field>();
      for (const [name, s] of Object.entries(def.shape ?? {})) fields.set(name, productField(s));
      return required([{ t: 'object', fields }]);
    }
    case 'union': {
      const options = (def.options ?? []).map(productField);
      const mode: Mode = options.some((o) => o.mode === 'tolerant')
        ? 'tolerant'
        : options.some((o) => o.mode === 'optional')
          ? 'optional'
          : 'required';
      return { mode, alts: options.flatMap((o) => o.alts) };
    }
    default:
      // A construct this walker does not know would go unchecked: refuse it instead.
      throw new Error(`protocolDrift: zod type '${def.type}' is not handled; teach productField about it`);
  }
}

function required(alts: Shape<Field>[]): Field {
  return { mode: 'required', alts };
}

// ---------------------------------------------------------------------------------------------
// The check.

export interface Finding {
  method: string;
  kind: ReadKind;
  /** e.g. "data[].updatedAt" ("" for the whole value). */
  path: string;
  /** e.g. "vanished", "type number → string". */
  change: string;
}

export interface DriftReport {
  /** What the product requires and cannot get any more: the test fails on these. */
  problems: Finding[];
  /** What the product reads tolerantly and is gone: told, not failed. */
  notes: Finding[];
}

const KIND_TEXT: Record<ReadKind, string> = {
  result: 'result',
  notification: 'notification',
  request: 'request params',
};

/** "thread/list result: data[].updatedAt: vanished". */
export function findingText(f: Finding): string {
  return `${f.method} ${KIND_TEXT[f.kind]}: ${f.path === '' ? '(the value)' : f.path}: ${f.change}`;
}

/** Every read of `reads` checked against one binary's protocol. */
export function checkDrift(protocol: DaemonProtocol, reads: readonly Read[] = READS): DriftReport {
  const report: DriftReport = { problems: [], notes: [] };
  const resolver = new Resolver(protocol.bundle);
  const index = {
    result: methodIndex(resolver, 'ClientRequest'),
    notification: methodIndex(resolver, 'ServerNotification'),
    request: methodIndex(resolver, 'ServerRequest'),
  };
  for (const r of reads) {
    const note = (p: string, change: string) => report.notes.push({ method: r.method, kind: r.kind, path: p, change });
    const problem = (p: string, change: string) =>
      r.fallback === undefined
        ? report.problems.push({ method: r.method, kind: r.kind, path: p, change })
        : note(p, `${change} (client.ts falls back to ${r.fallback})`);
    const params = index[r.kind].get(r.method);
    if (params === undefined) {
      problem('', 'method vanished');
      continue;
    }
    let node: JsonSchema | undefined;
    if (r.kind === 'result') {
      // The generator names a method's result after its params: ThreadListParams → ThreadListResponse.
      const ref = paramsRef(params);
      const responseRef = ref?.replace(/Params$/, 'Response');
      node = responseRef !== undefined ? resolver.pointer(responseRef) : undefined;
      if (node === undefined) {
        problem('', `no result type in the schema (params ${ref ?? 'unnamed'}, looked for ${responseRef ?? '?'})`);
        continue;
      }
    } else node = params;
    compare(resolver, productField(r.schema), node, '', { problem, note });
  }
  return report;
}

interface Sink {
  problem(path: string, change: string): void;
  note(path: string, change: string): void;
}

const TOLERANT_WHY: Record<Mode, string> = {
  required: '',
  optional: ' (read with .optional(): a value of this type fails the read)',
  tolerant: ' (read with .catch(): every such value reads as the fallback)',
};

const VANISHED_WHY: Record<Mode, string> = {
  required: '',
  optional: ' (read with .optional(): the product copes, and now never sees it)',
  tolerant: ' (read with .catch(): the product copes, and now always sees the fallback)',
};

function kindText(alts: readonly (Shape<unknown> | DaemonAlt)[]): string {
  const names = alts.map((a) =>
    a.t === 'string' && a.values ? a.values.map((v) => JSON.stringify(v)).join('|') : a.t === 'record' ? 'object' : a.t,
  );
  return [...new Set(names)].join('|') || 'nothing';
}

function sameKind(need: Shape<Field>['t'], sent: DaemonAlt['t']): boolean {
  return need === sent || (need === 'record' && sent === 'object');
}

/** Checks that every value the daemon may send at `node` is one `need` accepts. */
function compare(resolver: Resolver, need: Field, node: JsonSchema, at: string, sink: Sink): void {
  if (need.alts.some((a) => a.t === 'any')) return; // read as unknown: presence is all it needs
  const sent = resolver.alts(node);
  const why = TOLERANT_WHY[need.mode];
  const typeChanged = () => sink.problem(at, `type ${kindText(need.alts)} → ${kindText(sent)}${why}`);
  if (sent.some((d) => d.t === 'any')) return typeChanged();
  if (sent.some((d) => !need.alts.some((a) => sameKind(a.t, d.t)))) return typeChanged();

  // Strings: a daemon enum must stay within what the product lists.
  const needStrings = need.alts.filter((a) => a.t === 'string');
  if (!needStrings.some((a) => a.values === null)) {
    const accepted = new Set(needStrings.flatMap((a) => a.values ?? []));
    for (const d of sent) {
      if (d.t !== 'string') continue;
      if (d.values === null) sink.problem(at, `type ${kindText(needStrings)} → any string${why}`);
      else {
        const extra = d.values.filter((v) => !accepted.has(v));
        if (extra.length) sink.problem(at, `gained ${extra.map((v) => JSON.stringify(v)).join(', ')}${why}`);
      }
    }
  }

  // Arrays and records: their items, as one need.
  const items = need.alts.flatMap((a) => (a.t === 'array' ? [a.items] : []));
  for (const d of sent) if (d.t === 'array') compare(resolver, mergeNeeds(items, need.mode), d.items, `${at}[]`, sink);
  const recordValues = need.alts.flatMap((a) => (a.t === 'record' ? [a.values] : []));
  const needObjects = need.alts.flatMap((a) => (a.t === 'object' ? [a] : []));
  for (const d of sent) {
    if (d.t !== 'object') continue;
    if (needObjects.length === 0) {
      // A record: every value the daemon allows (additionalProperties) must be accepted.
      compare(resolver, mergeNeeds(recordValues, need.mode), d.additional ?? true, `${at}{}`, sink);
      continue;
    }
    const variant = needObjects.find((p) => canCarry(resolver, p.fields, d));
    if (!variant) {
      sink.problem(at, `variant ${variantText(resolver, d)} is accepted by no variant the product reads${why}`);
      continue;
    }
    compareObject(resolver, variant.fields, d, at, need.mode, sink);
  }

  // A product variant with literal fields (a discriminated union) that no daemon variant can carry.
  const sentObjects = sent.flatMap((d) => (d.t === 'object' ? [d] : []));
  for (const p of needObjects) {
    if (literalFields(p.fields).length === 0) continue;
    if (!sentObjects.some((d) => canCarry(resolver, p.fields, d)))
      sink.problem(at, `variant ${needVariantText(p.fields)} vanished${why}`);
  }
}

function mergeNeeds(needs: Field[], mode: Mode): Field {
  return { mode: needs.some((n) => n.mode === 'tolerant') ? 'tolerant' : mode, alts: needs.flatMap((n) => n.alts) };
}

function compareObject(
  resolver: Resolver,
  fields: ReadonlyMap<string, Field>,
  d: DaemonObject,
  at: string,
  outer: Mode,
  sink: Sink,
): void {
  for (const [name, own] of fields) {
    const sub = at === '' ? name : `${at}.${name}`;
    // Inside a value read with .catch(), whatever fails falls back as a whole: tolerant too.
    const field: Field = outer === 'tolerant' ? { ...own, mode: 'tolerant' } : own;
    const node = Object.hasOwn(d.props, name) ? d.props[name] : undefined;
    if (node === undefined) {
      if (field.mode === 'required') sink.problem(sub, 'vanished');
      else sink.note(sub, `vanished${VANISHED_WHY[field.mode]}`);
      continue;
    }
    // The generator lists no Option field as required, though the daemon writes it (as null):
    // only a field that cannot be null and is no longer required may really be left out.
    if (field.mode === 'required' && !d.required.has(name) && !resolver.alts(node).some((a) => a.t === 'null'))
      sink.problem(sub, 'no longer required (the daemon may leave it out)');
    compare(resolver, field, node, sub, sink);
  }
}

/** Required fields of a product variant that accept only listed strings (its discriminators). */
function literalFields(fields: ReadonlyMap<string, Field>): [string, readonly string[]][] {
  const out: [string, readonly string[]][] = [];
  for (const [name, f] of fields) {
    if (f.mode !== 'required' || f.alts.length === 0) continue;
    if (!f.alts.every((a) => a.t === 'string' && a.values !== null)) continue;
    out.push([name, f.alts.flatMap((a) => (a.t === 'string' ? (a.values ?? []) : []))]);
  }
  return out;
}

/** Whether a daemon object variant can carry the literal values a product variant demands. */
function canCarry(resolver: Resolver, fields: ReadonlyMap<string, Field>, d: DaemonObject): boolean {
  return literalFields(fields).every(([name, values]) => {
    const node = Object.hasOwn(d.props, name) ? d.props[name] : undefined;
    if (node === undefined) return false;
    return resolver
      .alts(node)
      .some(
        (a) => a.t === 'any' || (a.t === 'string' && (a.values === null || a.values.some((v) => values.includes(v)))),
      );
  });
}

function variantText(resolver: Resolver, d: DaemonObject): string {
  const literals = Object.entries(d.props).flatMap(([name, node]) => {
    const alts = resolver.alts(node);
    return alts.length === 1 && alts[0].t === 'string' && alts[0].values?.length === 1
      ? [`${name}=${alts[0].values[0]}`]
      : [];
  });
  return `{${literals.length ? literals.join(', ') : Object.keys(d.props).join(', ')}}`;
}

function needVariantText(fields: ReadonlyMap<string, Field>): string {
  return `{${literalFields(fields)
    .map(([name, values]) => `${name}=${values.join('|')}`)
    .join(', ')}}`;
}
