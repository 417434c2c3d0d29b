// Protocol drift, per installed Codex build: the binary describes its own protocol
// (`codex app-server generate-json-schema --experimental`), and everything the product reads
// (src/protocol/schema.ts, paired with its method by test/support/protocolDrift.ts's READS) must
// still be there with a type the product accepts. A finding names the method, the field path and
// what changed. Then the check is shown to bite: copies of the generated schema, doctored one
// change at a time (a field removed, a type changed, a union variant dropped, an enum value added,
// a method removed), each report exactly that change, at every method that reads it. The real
// files are never edited.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as z from 'zod/mini';
import { codexBuilds } from '../../src/demo/codexBinary';
import { ThreadResultSchema, ThreadSchema } from '../../src/protocol/schema';
import { checkDrift, type DriftReport, findingText, READS, type Read } from '../support/protocolDrift';
import { type DaemonProtocol, generateProtocol } from '../support/protocolSchema';

type Node = Record<string, any>;

/** A named type of the generated bundle (v2 types live under definitions.v2). */
function definition(bundle: DaemonProtocol['bundle'], name: string): Node {
  const defs = bundle.definitions as Node;
  const found = (defs.v2 as Node | undefined)?.[name] ?? defs[name];
  assert.ok(found, `the generated schema has a type ${name}`);
  return found as Node;
}

const texts = (report: DriftReport) => ({
  problems: report.problems.map(findingText),
  notes: report.notes.map(findingText),
});

/** Which methods read a Thread (its status, its fields): the doctored Thread shows up at each. */
const THREAD_READERS = [
  ['thread/list result', 'data[]'],
  ['thread/read result', 'thread'],
  ['thread/resume result', 'thread'],
  ['thread/started notification', 'thread'],
] as const;
const GOAL_READERS = [
  ['thread/goal/get result', 'goal'],
  ['thread/goal/set result', 'goal'],
  ['thread/goal/updated notification', 'goal'],
] as const;

for (const codex of codexBuilds())
  describe(`protocol drift: what the product reads is in the protocol of codex ${codex.version}`, () => {
    let protocol: DaemonProtocol;
    let baseline: { problems: string[]; notes: string[] };

    /** The check on a copy of the generated schema after `doctor`, minus the notes it has anyway. */
    const doctored = (doctor: (bundle: DaemonProtocol['bundle']) => void, reads: readonly Read[] = READS) => {
      const copy = structuredClone(protocol);
      doctor(copy.bundle);
      const found = texts(checkDrift(copy, reads));
      return { problems: found.problems, notes: found.notes.filter((n) => !baseline.notes.includes(n)) };
    };

    before(async () => {
      protocol = await generateProtocol(codex);
      baseline = texts(checkDrift(protocol));
    });

    it(`every field the product reads is there, with a type it accepts, codex ${codex.version}`, (t) => {
      for (const note of baseline.notes) t.diagnostic(`note: ${note}`);
      assert.deepEqual(
        baseline.problems,
        [],
        `codex ${codex.version} changed what the product reads:\n  ${baseline.problems.join('\n  ')}` +
          (baseline.notes.length ? `\nnotes (read tolerantly):\n  ${baseline.notes.join('\n  ')}` : ''),
      );
    });

    it(`bites: a required field removed is reported at its method, codex ${codex.version}`, () => {
      const found = doctored((b) => delete definition(b, 'ErrorNotification').properties.willRetry);
      assert.deepEqual(found, { problems: ['error notification: willRetry: vanished'], notes: [] });
    });

    it(`bites: a type changed is reported at its method, codex ${codex.version}`, () => {
      const found = doctored((b) => {
        definition(b, 'ThreadStatusChangedNotification').properties.threadId = { type: 'integer' };
      });
      assert.deepEqual(found, {
        problems: ['thread/status/changed notification: threadId: type string → number'],
        notes: [],
      });
    });

    it(`bites: a shared type ($ref) changed is reported at every method that reads it, codex ${codex.version}`, () => {
      // Thread.updatedAt is read with .catch(0): a string would read as 0 everywhere (the home
      // scan would never see a thread move), so a type change of a tolerant field is a problem.
      const found = doctored((b) => {
        definition(b, 'Thread').properties.updatedAt = { type: 'string' };
      });
      assert.deepEqual(found, {
        problems: THREAD_READERS.map(
          ([where, at]) =>
            `${where}: ${at}.updatedAt: type number → string (read with .catch(): every such value reads as the fallback)`,
        ),
        notes: [],
      });
    });

    it(`bites: null added to a required field, and a field no longer required, codex ${codex.version}`, () => {
      const found = doctored((b) => {
        const error = definition(b, 'ErrorNotification');
        error.properties.threadId = { type: ['string', 'null'] };
        error.required = (error.required as string[]).filter((f) => f !== 'willRetry');
      });
      assert.deepEqual(found, {
        problems: [
          'error notification: threadId: type string → string|null',
          'error notification: willRetry: no longer required (the daemon may leave it out)',
        ],
        notes: [],
      });
    });

    it(`bites: a tolerant field removed is a note, not a problem, codex ${codex.version}`, () => {
      const found = doctored((b) => delete definition(b, 'ThreadListResponse').properties.nextCursor);
      assert.deepEqual(found, {
        problems: [],
        notes: [
          'thread/list result: nextCursor: vanished (read with .optional(): the product copes, and now never sees it)',
        ],
      });
    });

    it(`bites: a union variant's field, and the variant itself, codex ${codex.version}`, () => {
      const variants = (b: DaemonProtocol['bundle']) => definition(b, 'ThreadStatus').oneOf as Node[];
      const isActive = (v: Node) => (v.properties?.type?.enum as string[] | undefined)?.includes('active');
      // In READS order: thread/status/changed comes before thread/started.
      const statusReaders = [
        ...THREAD_READERS.slice(0, 3).map(([where, at]) => [where, `${at}.status`]),
        ['thread/status/changed notification', 'status'],
        ['thread/started notification', 'thread.status'],
      ];
      // activeFlags is read with .catch([]): gone, it is a note at every reader of a ThreadStatus.
      const flags = doctored((b) => delete variants(b).find(isActive)!.properties.activeFlags);
      assert.deepEqual(flags, {
        problems: [],
        notes: statusReaders.map(
          ([where, at]) =>
            `${where}: ${at}.activeFlags: vanished (read with .catch(): the product copes, and now always sees the fallback)`,
        ),
      });
      // Without the `active` variant the product would never see a running turn.
      const active = doctored((b) => {
        definition(b, 'ThreadStatus').oneOf = variants(b).filter((v) => !isActive(v));
      });
      assert.deepEqual(active, {
        problems: statusReaders.map(([where, at]) => `${where}: ${at}: variant {type=active} vanished`),
        notes: [],
      });
    });

    it(`bites: a field beside a union (a flattened enum) is read in every variant, codex ${codex.version}`, () => {
      // The MCP elicitation's params: threadId sits beside a oneOf of five modes. Server requests
      // are parsed with a fallback (client.ts: threadId null), so this is a note, once per variant.
      const found = doctored((b) => delete definition(b, 'McpServerElicitationRequestParams').properties.threadId);
      const variants = (definition(protocol.bundle, 'McpServerElicitationRequestParams').oneOf as Node[]).length;
      assert.ok(variants > 1, 'the elicitation params are a union');
      assert.deepEqual(found, {
        problems: [],
        notes: Array.from(
          { length: variants },
          () =>
            'mcpServer/elicitation/request request params: threadId: vanished (client.ts falls back to threadId null: no thread is held)',
        ),
      });
    });

    it(`bites: an enum value the product does not know, codex ${codex.version}`, () => {
      const found = doctored((b) => (definition(b, 'ThreadGoalStatus').enum as string[]).push('archived'));
      assert.deepEqual(found, {
        problems: GOAL_READERS.map(([where, at]) => `${where}: ${at}.status: gained "archived"`),
        notes: [],
      });
    });

    it(`bites: a method removed, codex ${codex.version}`, () => {
      const found = doctored((b) => {
        const requests = definition(b, 'ClientRequest');
        requests.oneOf = (requests.oneOf as Node[]).filter((v) => v.properties.method.enum[0] !== 'thread/goal/get');
      });
      assert.deepEqual(found, { problems: ['thread/goal/get result: (the value): method vanished'], notes: [] });
    });

    it(`a field newly read in schema.ts is checked without listing it anywhere, codex ${codex.version}`, () => {
      // The product side comes from the zod schemas: a schema that reads one more field (one the
      // daemon does not have) is reported with no change to the check.
      const extended = z.extend(ThreadResultSchema, { thread: z.extend(ThreadSchema, { reason: z.string() }) });
      const reads = READS.map((r) => (r.method === 'thread/read' ? { ...r, schema: extended } : r));
      assert.deepEqual(
        doctored(() => undefined, reads),
        { problems: ['thread/read result: thread.reason: vanished'], notes: [] },
      );
    });
  });
