// The drift check's pairing table (test/support/protocolDrift.ts READS) is the product's: every
// method src/protocol/client.ts calls or listens to, with the schema it parses it with, is in the
// table, and nothing else; every schema client.ts imports from src/protocol/schema.ts is in it.
// And the walk of the zod schemas sees what the product requires, what it reads tolerantly, and
// refuses a zod construct it does not know (which would otherwise go unchecked).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import * as z from 'zod/mini';
import * as schemas from '../../src/protocol/schema';
import { productField, READS } from '../support/protocolDrift';

const root = path.resolve(__dirname, '../../..');
const client = fs.readFileSync(path.join(root, 'src/protocol/client.ts'), 'utf8');

describe('the drift check reads what client.ts reads', () => {
  it('each call and each notification of client.ts, with its schema, is in READS, and nothing else', () => {
    const calls = [...client.matchAll(/this\.call\(\s*'([^']+)',[\s\S]*?,\s*(\w+Schema),?\s*\)/g)].map(
      ([, method, schema]) => `result ${method} ${schema}`,
    );
    const notifications = [...client.matchAll(/case '([^']+)':\s*return read\((\w+Schema),/g)].map(
      ([, method, schema]) => `notification ${method} ${schema}`,
    );
    assert.ok(calls.length >= 9 && notifications.length >= 9, 'the patterns still find client.ts reads');
    const fromClient = new Set([...calls, ...notifications]);
    const inTable = new Set(READS.filter((r) => r.kind !== 'request').map((r) => `${r.kind} ${r.method} ${r.name}`));
    assert.deepEqual(
      [...fromClient].filter((x) => !inTable.has(x)),
      [],
      'read by client.ts, missing in READS',
    );
    assert.deepEqual(
      [...inTable].filter((x) => !fromClient.has(x)),
      [],
      'in READS, not read by client.ts',
    );
  });

  it('server requests: their params are parsed for threadId, and READS has each known request', () => {
    assert.match(client, /ServerRequestParamsSchema\.safeParse\(r\.params\)/);
    assert.deepEqual(
      READS.filter((r) => r.kind === 'request').map((r) => `${r.method} ${r.name}`),
      schemas.SERVER_REQUEST_METHODS.map((m) => `${m} ServerRequestParamsSchema`),
    );
  });

  it('every schema client.ts imports from schema.ts is in READS, as that very export', () => {
    const imported = /import \{([^}]*)\} from '\.\/schema';/.exec(client)?.[1] ?? '';
    const names = imported
      .split(',')
      .map((n) => n.trim())
      .filter((n) => /^[A-Z]\w*Schema$/.test(n));
    assert.ok(names.length >= 15, `the import list is found (${names.join(', ')})`);
    const inTable = new Set(READS.map((r) => r.name));
    assert.deepEqual(
      names.filter((n) => !inTable.has(n as keyof typeof schemas)),
      [],
    );
    for (const r of READS) assert.equal(r.schema, schemas[r.name], `${r.method}: READS holds the export ${r.name}`);
  });
});

describe('the walk of the zod schemas', () => {
  it('tells required, optional and tolerant fields apart, and reads the input side of a transform', () => {
    const thread = productField(schemas.ThreadSchema).alts[0];
    assert.equal(thread.t, 'object');
    const modes = Object.fromEntries([...thread.fields].map(([name, f]) => [name, f.mode]));
    assert.deepEqual(modes, {
      id: 'required',
      status: 'required',
      path: 'optional',
      preview: 'tolerant',
      name: 'optional',
      updatedAt: 'tolerant',
      modelProvider: 'tolerant',
      model: 'tolerant',
    });
    assert.deepEqual(
      thread.fields.get('path')?.alts.map((a) => a.t),
      ['string', 'null'],
      'nullable().optional().transform(): a string or null, perhaps absent',
    );
  });

  it('a union keeps its variants in order, with their literal fields', () => {
    const status = productField(schemas.ThreadStatusSchema);
    assert.deepEqual(
      status.alts.map((a) => (a.t === 'object' ? a.fields.get('type')?.alts : a)),
      [
        [{ t: 'string', values: ['active'] }],
        [{ t: 'string', values: ['notLoaded', 'idle', 'systemError'] }],
        [{ t: 'string', values: null }],
      ],
    );
  });

  it('refuses a zod construct it does not know instead of skipping it', () => {
    assert.throws(() => productField(z.object({ at: z.date() })), /zod type 'date' is not handled/);
    assert.throws(() => productField(z.literal(3)), /non-string literal/);
  });
});
