// The daemon side of the protocol drift check (test/support/protocolDrift.ts): one Codex binary's
// own description of its protocol (`codex app-server generate-json-schema`), read as the values
// it may send: `$ref`s resolved, unions (anyOf/oneOf, type lists, allOf, fields beside a union)
// flattened into alternatives, the method tables (ClientRequest, ServerNotification,
// ServerRequest) indexed by method.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { codexBinary, codexEnv, type CodexBuild } from '../../src/demo/codexBinary';

const run = promisify(execFile);

/** One alternative of what a value may be (the product: accepts; the daemon: may send). */
export type Shape<F> =
  | { t: 'any' }
  | { t: 'null' }
  | { t: 'boolean' }
  | { t: 'number' }
  /** `values` null: any string. */
  | { t: 'string'; values: readonly string[] | null }
  | { t: 'array'; items: F }
  | { t: 'object'; fields: ReadonlyMap<string, F> }
  | { t: 'record'; values: F };

export type JsonSchema = boolean | { [key: string]: unknown };

/** One Codex binary's protocol: the bundle `codex_app_server_protocol.schemas.json`. */
export interface DaemonProtocol {
  version: string;
  bundle: { definitions: Record<string, unknown> };
}

/**
 * `codex app-server generate-json-schema --experimental` of `build`. Experimental: the product
 * connects with `experimentalApi: true` (client.ts), so the daemon sends it the experimental
 * methods (thread/goal/*) and fields too. Run with a fresh, empty CODEX_HOME (nothing of the
 * machine's Codex config can change what it writes).
 */
export async function generateProtocol(build: CodexBuild): Promise<DaemonProtocol> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'codex-schema-'));
  try {
    const home = path.join(dir, 'home');
    const out = path.join(dir, 'out');
    await run(codexBinary(build), ['app-server', 'generate-json-schema', '--experimental', '--out', out], {
      env: codexEnv(home),
      timeout: 60_000,
    });
    const text = await readFile(path.join(out, 'codex_app_server_protocol.schemas.json'), 'utf8');
    return { version: build.version, bundle: JSON.parse(text) as DaemonProtocol['bundle'] };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface DaemonObject {
  props: Record<string, JsonSchema>;
  required: ReadonlySet<string>;
  additional: JsonSchema | undefined;
}
export type DaemonAlt =
  Exclude<Shape<JsonSchema>, { t: 'object' } | { t: 'record' }> | ({ t: 'object' } & DaemonObject);

export class Resolver {
  constructor(private readonly root: DaemonProtocol['bundle']) {}

  /** The node a `#/definitions/…` pointer names, or undefined. */
  pointer(ref: string): JsonSchema | undefined {
    if (!ref.startsWith('#/')) throw new Error(`protocolDrift: only local $refs are handled, not ${ref}`);
    let node: unknown = this.root;
    for (const part of ref.slice(2).split('/')) {
      if (node === null || typeof node !== 'object') return undefined;
      node = (node as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    }
    return node as JsonSchema | undefined;
  }

  /** The alternatives a schema node allows. */
  alts(node: JsonSchema, depth = 0): DaemonAlt[] {
    if (depth > 50) throw new Error('protocolDrift: $ref chain too deep');
    if (node === true) return [{ t: 'any' }];
    if (node === false) return [];
    if (typeof node.$ref === 'string') {
      const target = this.pointer(node.$ref);
      if (target === undefined) throw new Error(`protocolDrift: $ref ${node.$ref} names nothing`);
      return this.alts(target, depth + 1);
    }
    const union = (node.anyOf ?? node.oneOf) as JsonSchema[] | undefined;
    if (union) {
      const variants = union.flatMap((n) => this.alts(n, depth + 1));
      if (!node.properties && !node.required) return variants;
      // Common fields beside the variants (a flattened Rust enum, e.g. the MCP elicitation's
      // params): every variant has them too.
      const rest = Object.fromEntries(Object.entries(node).filter(([k]) => k !== 'anyOf' && k !== 'oneOf'));
      const [base] = this.alts(rest, depth + 1);
      if (base?.t !== 'object') throw new Error('protocolDrift: fields beside a union, on a non-object');
      return variants.map((v) => (v.t === 'object' ? mergeObjects([base, v]) : v));
    }
    const all = node.allOf as JsonSchema[] | undefined;
    if (all) {
      // Beside allOf the generator writes only notes (description, default); fields would merge.
      const rest = Object.fromEntries(Object.entries(node).filter(([k]) => k !== 'allOf'));
      return this.allOf(node.properties || node.required ? [...all, rest] : all, depth);
    }
    const values = (node.enum ?? ('const' in node ? [node.const] : undefined)) as unknown[] | undefined;
    let types = (Array.isArray(node.type) ? node.type : node.type === undefined ? [] : [node.type]) as string[];
    if (types.length === 0) {
      if (values) types = [...new Set(values.map((v) => (v === null ? 'null' : typeof v)))];
      else if (node.properties || node.additionalProperties !== undefined) types = ['object'];
      else if (node.items) types = ['array'];
      else return [{ t: 'any' }];
    }
    return types.map((type): DaemonAlt => {
      switch (type) {
        case 'null':
          return { t: 'null' };
        case 'boolean':
          return { t: 'boolean' };
        case 'integer':
        case 'number':
          return { t: 'number' };
        case 'string':
          return { t: 'string', values: values ? values.filter((v): v is string => typeof v === 'string') : null };
        case 'array':
          return { t: 'array', items: (node.items as JsonSchema | undefined) ?? true };
        case 'object':
          return {
            t: 'object',
            props: (node.properties as Record<string, JsonSchema> | undefined) ?? {},
            required: new Set((node.required as string[] | undefined) ?? []),
            additional: node.additionalProperties as JsonSchema | undefined,
          };
        default:
          throw new Error(`protocolDrift: JSON schema type '${type}' is not handled`);
      }
    });
  }

  /** `allOf`: one member is that member (the generator's way to describe a $ref); objects merge. */
  private allOf(members: JsonSchema[], depth: number): DaemonAlt[] {
    const each = members.map((m) => this.alts(m, depth + 1));
    if (each.length === 1) return each[0];
    if (!each.every((alts) => alts.length === 1 && alts[0].t === 'object'))
      throw new Error('protocolDrift: an allOf of several non-object members is not handled');
    return [mergeObjects(each.map((alts) => alts[0] as DaemonObjectAlt))];
  }
}

type DaemonObjectAlt = Extract<DaemonAlt, { t: 'object' }>;

function mergeObjects(objects: DaemonObjectAlt[]): DaemonObjectAlt {
  return {
    t: 'object',
    props: Object.assign({}, ...objects.map((o) => o.props)) as Record<string, JsonSchema>,
    required: new Set(objects.flatMap((o) => [...o.required])),
    additional: objects.find((o) => o.additional !== undefined)?.additional,
  };
}

/** method → its `params` schema, from a oneOf of `{method: {enum: [m]}, params}` (ClientRequest …). */
export function methodIndex(resolver: Resolver, definition: string): Map<string, JsonSchema> {
  const node = resolver.pointer(`#/definitions/${definition}`);
  if (node === undefined || typeof node !== 'object' || !Array.isArray(node.oneOf))
    throw new Error(`protocolDrift: the schema has no ${definition} oneOf`);
  const byMethod = new Map<string, JsonSchema>();
  for (const variant of node.oneOf as { properties?: Record<string, { enum?: unknown[] } & JsonSchema> }[]) {
    const method = variant.properties?.method?.enum?.[0];
    if (typeof method === 'string') byMethod.set(method, variant.properties?.params ?? true);
  }
  return byMethod;
}

/** The `$ref` of a params schema (`{$ref}` or `{anyOf: [{$ref}, {type: null}]}`). */
export function paramsRef(params: JsonSchema): string | undefined {
  if (typeof params !== 'object') return undefined;
  if (typeof params.$ref === 'string') return params.$ref;
  const union = (params.anyOf ?? params.oneOf) as JsonSchema[] | undefined;
  return union?.map(paramsRef).find((r) => r !== undefined);
}
