// Fault injection, item 3: malformed input from the daemon's side.
//
// Generated scripts (fast-check) of frames go to a real client session over both framings: the
// stdio line framing (the byte stream cut into random chunks: lines split over chunks, several
// lines per chunk, multi-byte characters cut) and the WebSocket framing through the socket
// transport used for the daemon's Unix control socket. Valid notifications, server requests and
// replies to the client's own requests are interleaved with garbage: invalid JSON, wrong types,
// unknown methods, huge strings, deep nesting, frames joined and split, invalid UTF-8, replies
// to requests nobody sent, over-long lines.
//
// Reproduce a failure with FAULTS_SEED=<seed printed by fast-check>.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RpcError } from '../../src/protocol/daemon';
import { excerpt } from '../../src/protocol/lineSplitter';
import { OPT_OUT_NOTIFICATIONS, SERVER_REQUEST_METHODS } from '../../src/protocol/schema';
import {
  type Frame,
  liveBytes,
  type Reported,
  stdioSession,
  unixWsServer,
  websocketSession,
  type WireSession,
} from '../support/wireFuzz';
import { makeHarness, TEST_OPTIONS } from '../support/engineHarness';
import { sleep } from '../support/wait';

const SEED = process.env.FAULTS_SEED ? Number(process.env.FAULTS_SEED) : undefined;
const MAX_LINE_BYTES = 1024 * 1024;
const REQUESTS = 6;

// ---- what a step is and what it must cause ----------------------------------------------------

type Transport = 'stdio' | 'websocket';

interface Step {
  frames: Frame[];
  /** Listener events it must cause, in order. */
  events: Reported[];
  /** "dropped malformed frame" reports it must cause. */
  frameProblems: number;
  /** Methods of known notifications with bad params: one "ignored malformed <method> notification" each. */
  badNotifications: string[];
  /** Replies to no pending request: one report each. */
  strays: number;
  /** Lines over the cap (stdio): one report each. */
  overlong: number;
  /** A reply to the client's request number `reply` (filled in when the script is assembled). */
  reply?: { error: boolean };
  /** Where the step can be sent. */
  only?: Transport;
}

const step = (frames: Frame[], s: Partial<Omit<Step, 'frames'>> = {}): Step => ({
  frames,
  events: [],
  frameProblems: 0,
  badNotifications: [],
  strays: 0,
  overlong: 0,
  ...s,
});
/** A value nested `depth` arrays deep, written into the frame's text as it is (JSON.stringify would overflow). */
class Deep {
  constructor(readonly depth: number) {}
}
/** Arrays nested `n` deep: valid JSON that a recursive reader would not survive. */
const deepArray = (n: number) => '['.repeat(n) + ']'.repeat(n);
const text = (value: unknown): Frame => ({
  text: JSON.stringify(value, (_k, v: unknown) => (v instanceof Deep ? `\u0000deep:${v.depth}\u0000` : v)).replace(
    /"\\u0000deep:(\d+)\\u0000"/g,
    (_m, n: string) => deepArray(Number(n)),
  ),
});

// ---- arbitraries --------------------------------------------------------------------------------

const anyText = (maxLength = 16) => fc.string({ unit: 'binary', maxLength });
const threadIdA = anyText(12);
const smallJson = fc.jsonValue({ maxDepth: 3 });
const junkFields = fc.option(
  fc.oneof(
    fc.record({ extra: smallJson }),
    fc.integer({ min: 1000, max: 60_000 }).map((n) => ({ deep: new Deep(n) })),
    fc.record({ emittedAtMs: fc.integer() }),
  ),
  { nil: {} },
);
const GOAL_STATUS = ['active', 'paused', 'blocked', 'usageLimited', 'budgetLimited', 'complete'] as const;
const objective = fc.oneof(
  { weight: 400, arbitrary: anyText(40) },
  // Up to 900 KB of UTF-8 (the stdio runs cap lines at 1 MiB; larger frames have a test of their own).
  { weight: 1, arbitrary: fc.integer({ min: 256 * 1024, max: 900 * 1024 }).map((n) => 'é'.repeat(Math.floor(n / 2))) },
);

/** Valid notifications the client reads, and the event each must cause. */
const knownNotification: fc.Arbitrary<Step> = fc.oneof(
  fc
    .record({
      threadId: threadIdA,
      turnId: fc.option(anyText(8), { nil: null }),
      status: fc.constantFrom(...GOAL_STATUS),
      objective,
      junk: junkFields,
    })
    .map(({ threadId, turnId, status, objective: obj, junk }) =>
      step(
        [
          text({
            method: 'thread/goal/updated',
            params: {
              threadId,
              turnId,
              goal: {
                threadId,
                objective: obj,
                status,
                tokenBudget: null,
                tokensUsed: 1,
                timeUsedSeconds: 2,
                createdAt: 3,
                updatedAt: 4,
              },
              ...junk,
            },
          }),
        ],
        { events: [['goalUpdated', threadId, status, obj.length, turnId]] },
      ),
    ),
  fc.record({ threadId: threadIdA, junk: junkFields }).map(({ threadId, junk }) =>
    step([text({ method: 'thread/goal/cleared', params: { threadId, ...junk } })], {
      events: [['goalCleared', threadId]],
    }),
  ),
  fc
    .record({
      threadId: threadIdA,
      type: fc.oneof(fc.constantFrom('active', 'idle', 'notLoaded', 'systemError'), anyText(10)),
    })
    .map(({ threadId, type }) =>
      step(
        [
          text({
            method: 'thread/status/changed',
            params: { threadId, status: type === 'active' ? { type, activeFlags: ['waitingOnApproval'] } : { type } },
          }),
        ],
        { events: [['threadStatus', threadId, type]] },
      ),
    ),
  fc.record({ id: threadIdA, name: fc.option(anyText(8), { nil: null }) }).map(({ id, name }) =>
    step(
      [
        text({
          method: 'thread/started',
          params: { thread: { id, status: { type: 'idle' }, path: null, preview: 'p', name, cwd: '/', turns: [] } },
        }),
      ],
      { events: [['threadStarted', id]] },
    ),
  ),
  threadIdA.map((threadId) =>
    step([text({ method: 'thread/closed', params: { threadId } })], { events: [['threadClosed', threadId]] }),
  ),
  fc
    .record({ threadId: threadIdA, turnId: anyText(8) })
    .map(({ threadId, turnId }) =>
      step(
        [text({ method: 'turn/started', params: { threadId, turn: { id: turnId, status: 'inProgress', items: [] } } })],
        { events: [['turnStarted', threadId, turnId]] },
      ),
    ),
  fc
    .record({
      threadId: threadIdA,
      turnId: anyText(8),
      status: fc.constantFrom('completed', 'failed', 'interrupted', 'somethingNew'),
      info: fc.oneof(
        smallJson,
        fc.integer({ min: 1000, max: 30_000 }).map((n) => new Deep(n) as unknown),
      ),
    })
    .map(({ threadId, turnId, status, info }) =>
      step(
        [
          text({
            method: 'turn/completed',
            params: {
              threadId,
              turn: {
                id: turnId,
                status,
                error: status === 'failed' ? { message: 'm', codexErrorInfo: info, additionalDetails: null } : null,
              },
            },
          }),
        ],
        { events: [['turnCompleted', threadId, turnId, status]] },
      ),
    ),
  fc
    .record({
      threadId: threadIdA,
      turnId: fc.option(anyText(8), { nil: null }),
      message: anyText(30),
      willRetry: fc.boolean(),
    })
    .map(({ threadId, turnId, message, willRetry }) =>
      step(
        [
          text({
            method: 'error',
            params: {
              threadId,
              turnId,
              willRetry,
              error: { message, codexErrorInfo: 'internalServerError', additionalDetails: null },
            },
          }),
        ],
        { events: [['error', threadId, turnId, message.length, willRetry]] },
      ),
    ),
  fc.record({ threadId: threadIdA, requestId: fc.oneof(fc.integer(), anyText(6)) }).map(({ threadId, requestId }) =>
    step([text({ method: 'serverRequest/resolved', params: { threadId, requestId } })], {
      events: [['serverRequestResolved', threadId, requestId]],
    }),
  ),
);

/** Requests from the daemon (approvals, and methods this build does not know): reported, never answered. */
const serverRequest: fc.Arbitrary<Step> = fc
  .record({
    // The ids may collide with the client's own.
    id: fc.oneof(fc.integer({ min: -5, max: 1e9 }), anyText(8), fc.constantFrom(0, 1, 2, 3)),
    method: fc.oneof(
      fc.constantFrom(...SERVER_REQUEST_METHODS),
      anyText(12).map((s) => `x/${s}`),
    ),
    params: fc.oneof(
      threadIdA.map((threadId) => ({ threadId, itemId: 'i' })),
      fc.constant(undefined),
      fc.constant([1, 2]),
      fc.record({ threadId: fc.integer() }),
    ),
  })
  .map(({ id, method, params }) => {
    const threadId =
      params &&
      typeof params === 'object' &&
      !Array.isArray(params) &&
      typeof (params as { threadId?: unknown }).threadId === 'string'
        ? (params as { threadId: string }).threadId
        : null;
    return step([text(params === undefined ? { id, method } : { id, method, params })], {
      events: [['serverRequest', threadId, id, method]],
    });
  });

/** Valid notifications the client does not read: no event, no report. */
const ignoredNotification: fc.Arbitrary<Step> = fc.oneof(
  fc
    .record({
      m: anyText(12),
      params: fc.option(fc.dictionary(anyText(6), smallJson, { maxKeys: 4 }), { nil: undefined }),
    })
    .map(({ m, params }) => step([text({ method: `fuzz/${m}`, params })])),
  fc
    .constantFrom(...OPT_OUT_NOTIFICATIONS, 'thread/name/updated')
    .map((method) => step([text({ method, params: { threadId: 't', delta: 'x' } })])),
  // Cancellations concern the daemon's own requests, which this client never handles.
  fc
    .oneof(
      fc.constant(undefined),
      fc.constant(null),
      smallJson.map((id) => ({ id })),
    )
    .map((params) =>
      step([text(params === undefined ? { method: '$/cancelRequest' } : { method: '$/cancelRequest', params })]),
    ),
);

/** Known notifications whose params do not match: one "ignored malformed" report each. */
const badNotification: fc.Arbitrary<Step> = fc
  .record({
    method: fc.constantFrom(
      'thread/goal/updated',
      'thread/goal/cleared',
      'thread/status/changed',
      'thread/started',
      'thread/closed',
      'turn/started',
      'turn/completed',
      'error',
      'serverRequest/resolved',
    ),
    params: fc.oneof(
      fc.constant(undefined),
      fc.constant(null),
      fc.array(smallJson, { maxLength: 3 }),
      fc.record({
        threadId: fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 })),
      }),
      fc.record({ thread: fc.record({ id: fc.integer() }) }),
    ),
  })
  .map(({ method, params }) =>
    step([text(params === undefined ? { method } : { method, params })], { badNotifications: [method] }),
  );

/** What no reader may deliver: one "dropped malformed frame" report each. */
function isPlainObjectJson(s: string): boolean {
  try {
    const v: unknown = JSON.parse(s);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}
/** Text that is one frame/line, not blank, and not a JSON object (objects are built on purpose below). */
const usableGarbage = (s: string) => !s.includes('\n') && s.trim().length > 0 && !isPlainObjectJson(s);
const validFrameText = knownNotification
  .map((s) => (s.frames[0] as { text: string }).text)
  .filter((t) => t.length < 200_000);
const garbage: fc.Arbitrary<Step> = fc.oneof(
  // invalid JSON and JSON that is not an object
  {
    weight: 30,
    arbitrary: fc
      .string({ unit: 'binary', minLength: 1, maxLength: 80 })
      .filter(usableGarbage)
      .map((s) => step([{ text: s }], { frameProblems: 1 })),
  },
  {
    weight: 10,
    arbitrary: smallJson
      .map((v) => JSON.stringify(v))
      .filter(usableGarbage)
      .map((s) => step([{ text: s }], { frameProblems: 1 })),
  },
  // objects of the wrong shape or with wrongly typed fields
  {
    weight: 25,
    arbitrary: fc
      .oneof(
        fc.dictionary(
          fc.string({ maxLength: 6 }).filter((k) => !['id', 'method', 'params', 'result', 'error'].includes(k)),
          smallJson,
          { maxKeys: 4 },
        ),
        fc.record({
          method: fc.oneof(
            fc.integer(),
            fc.boolean(),
            fc.constant(null),
            fc.constant(''),
            fc.array(fc.string(), { maxLength: 2 }),
            fc.constant({}),
          ),
        }),
        fc.record({
          method: anyText(8),
          id: fc.oneof(fc.constant(null), fc.boolean(), fc.constant({}), fc.array(fc.integer(), { maxLength: 2 })),
        }),
        fc.record({ method: anyText(8), params: fc.oneof(fc.string(), fc.integer(), fc.boolean()) }),
        fc.record({ id: fc.oneof(fc.integer(), fc.string()) }),
        fc.record({
          id: fc.oneof(fc.integer(), fc.string()),
          error: fc.oneof(
            fc.string(),
            fc.integer(),
            fc.record({ code: fc.string(), message: fc.string() }),
            fc.record({ message: fc.string() }),
          ),
        }),
        fc.record({
          id: fc.oneof(fc.constant({}), fc.constant([]), fc.boolean()),
          result: smallJson.filter((r) => r !== null),
        }),
      )
      .map((v) => step([text(v)], { frameProblems: 1 })),
  },
  // two messages joined in one frame/line: neither is delivered
  {
    weight: 6,
    arbitrary: fc
      .tuple(validFrameText, validFrameText, fc.constantFrom('', ' ', ','))
      .map(([a, b, sep]) => step([{ text: `${a}${sep}${b}` }], { frameProblems: 1 })),
  },
  // raw bytes (invalid UTF-8 among them): a line on stdio, a text or binary frame on WebSocket
  {
    weight: 10,
    arbitrary: fc
      .record({ bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }), asText: fc.boolean() })
      .map(({ bytes, asText }) => ({ bytes: bytes.map((b) => (b === 0x0a ? 0xff : b)), asText }))
      .filter(({ bytes }) => usableGarbage(Buffer.from(bytes).toString('utf8')))
      .map((f) => step([f], { frameProblems: 1 })),
  },
  // deep nesting
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.integer({ min: 1000, max: 100_000 }), fc.constantFrom('array', 'object', 'unbalanced'))
      .map(([n, shape]) => {
        // Each under the 1 MiB line cap of the stdio runs (over-long lines are a fault of their own).
        const t =
          shape === 'array'
            ? deepArray(n)
            : shape === 'object'
              ? `${'{"a":'.repeat(n)}0${'}'.repeat(n)}`
              : '{"method":['.repeat(Math.floor(n / 2));
        return step([{ text: t }], { frameProblems: 1 });
      }),
  },
  // huge frames
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 512 * 1024, max: 900 * 1024 }), fc.constantFrom('string', 'broken', 'params'))
      .map(([n, shape]) => {
        const big = 'x'.repeat(n);
        const t =
          shape === 'string'
            ? JSON.stringify(big)
            : shape === 'broken'
              ? `{"method":"thread/closed","params":{"threadId":"${big}`
              : JSON.stringify({ method: 'thread/closed', params: big });
        return step([{ text: t }], { frameProblems: 1 });
      }),
  },
);

/** Replies to requests the client never sent (or cannot be matched): one report each. */
const strayReply: fc.Arbitrary<Step> = fc
  .record({
    id: fc.oneof(
      fc.integer({ min: 1_000_000, max: 2e9 }),
      anyText(8).map((s) => `stray-${s}`),
      fc.constant(null),
    ),
    error: fc.boolean(),
    result: smallJson.filter((r) => r !== null),
  })
  .map(({ id, error, result }) =>
    step([text(error ? { id, error: { code: -32000, message: 'stray failure' } } : { id, result })], { strays: 1 }),
  );

const blank: fc.Arbitrary<Step> = fc.constantFrom(' ', '\t', '   \r', '\r').map((s) => step([{ text: s }]));

/** stdio only: a line over the cap, skipped up to its newline. */
const overlongLine: fc.Arbitrary<Step> = fc
  .integer({ min: MAX_LINE_BYTES + 1, max: MAX_LINE_BYTES + 300_000 })
  .map((n) =>
    step([{ text: `{"method":"thread/closed","params":{"threadId":"${'y'.repeat(n)}"}}` }], {
      overlong: 1,
      only: 'stdio',
    }),
  );

/** WebSocket only: one valid notification sent as two separate messages (both unreadable). */
const splitMessage: fc.Arbitrary<Step> = fc
  .tuple(validFrameText, fc.double({ min: 0.01, max: 0.99, noNaN: true }))
  .map(([t, at]) => {
    const cut = Math.min(t.length - 1, Math.max(1, Math.floor(t.length * at)));
    return step([{ text: t.slice(0, cut) }, { text: t.slice(cut) }], { frameProblems: 2, only: 'websocket' });
  });

/** WebSocket only: one valid notification in continuation fragments: delivered whole. */
const fragmented: fc.Arbitrary<Step> = fc
  .tuple(
    knownNotification.filter((s) => (s.frames[0] as { text: string }).text.length < 200_000),
    fc.integer({ min: 2, max: 5 }),
  )
  .map(([s, parts]) => {
    // Cut the UTF-8 bytes, so that a character may straddle two fragments (the message is whole).
    const bytes = Buffer.from((s.frames[0] as { text: string }).text, 'utf8');
    const size = Math.ceil(bytes.length / parts);
    const fragments: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += size) fragments.push(bytes.subarray(i, i + size));
    return { ...s, frames: [{ fragments }], only: 'websocket' as const };
  });

function stepsFor(transport: Transport): fc.Arbitrary<Step> {
  return fc.oneof(
    { weight: 120, arbitrary: knownNotification },
    { weight: 32, arbitrary: serverRequest },
    { weight: 32, arbitrary: ignoredNotification },
    { weight: 40, arbitrary: badNotification },
    { weight: 140, arbitrary: garbage },
    { weight: 20, arbitrary: strayReply },
    { weight: 8, arbitrary: blank },
    { weight: transport === 'stdio' ? 1 : 0, arbitrary: overlongLine },
    { weight: transport === 'websocket' ? 12 : 0, arbitrary: splitMessage },
    { weight: transport === 'websocket' ? 12 : 0, arbitrary: fragmented },
  );
}

interface Script {
  steps: Step[];
  /** Reply steps: which request each answers, in script order. */
  replyOrder: number[];
  seed: number;
}

function scripts(transport: Transport): fc.Arbitrary<Script> {
  return fc
    .record({
      steps: fc.array(stepsFor(transport), { minLength: 320, maxLength: 420 }),
      positions: fc.array(fc.nat(), { minLength: REQUESTS, maxLength: REQUESTS }),
      errors: fc.array(fc.boolean(), { minLength: REQUESTS, maxLength: REQUESTS }),
      replyOrder: fc.shuffledSubarray([...Array(REQUESTS).keys()], { minLength: REQUESTS, maxLength: REQUESTS }),
      seed: fc.integer(),
    })
    .map(({ steps, positions, errors, replyOrder, seed }) => {
      const all = [...steps];
      // Insert the replies at generated positions; the k-th reply in the script answers replyOrder[k].
      const at = positions.map((p) => p % (steps.length + 1)).sort((a, b) => a - b);
      for (let k = REQUESTS - 1; k >= 0; k--) all.splice(at[k], 0, step([], { reply: { error: errors[k] } }));
      const script: Script = { steps: all, replyOrder, seed };
      // Counterexamples can hold megabytes: print a summary (FAULTS_SEED reproduces the run).
      Object.defineProperty(script, fc.toStringMethod, {
        value: () =>
          `script of ${all.length} steps, ${all.reduce((n, s) => n + s.frames.length, 0)} frames, chunk seed ${seed}`,
      });
      return script;
    });
}

/** A small deterministic generator for chunk sizes, from the script's seed. */
function chunker(seed: number): () => number {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
  return () => {
    const r = next();
    if (r < 0.3) return 1 + Math.floor(next() * 8); // tiny: cuts inside multi-byte characters and tokens
    if (r < 0.8) return 1 + Math.floor(next() * 512);
    return 1 + Math.floor(next() * 128 * 1024);
  };
}

// ---- running a script against a session --------------------------------------------------------

const FRAME_PROBLEM =
  /^(line|websocket) reader: dropped malformed frame \((invalid JSON|invalid UTF-8|JSON-RPC message must be|"method" must be|"params" must be|request "id" must be|response "id" must be|object is neither|response has neither|response "error" must be)[^\n]*\)(: ".*")?$/;
const OVERLONG_PROBLEM =
  /^line reader: dropped malformed frame \(line longer than \d+ bytes; skipping to the next newline\): ".*"$/;
const NOTIFICATION_PROBLEM = /^ignored malformed (\S+) notification: /;
const STRAY_PROBLEM = /^dropped an? (error )?reply to no pending request of this client \(id .*\)/;

interface Totals {
  frames: number;
  scripts: number;
}

async function runScript(w: WireSession, script: Script, totals: Totals): Promise<void> {
  const base = {
    events: w.listener.events.length,
    problems: w.listener.problems.length,
    received: w.received.length,
    malformed: w.reader.malformedCount,
  };
  // The client's own requests, all pending while the script runs.
  const outcomes: Array<{ ok: boolean; value: unknown } | undefined> = [];
  const calls = [...Array(REQUESTS).keys()].map((n) =>
    w.session.request('fuzz/echo', { n }).then(
      (value) => {
        outcomes[n] = { ok: true, value };
      },
      (error: unknown) => {
        outcomes[n] = { ok: false, value: error };
      },
    ),
  );
  await w.until(
    () => w.received.slice(base.received).filter((m) => m.method === 'fuzz/echo').length === REQUESTS,
    'the client requests',
  );
  const wireIds = new Map<number, unknown>();
  for (const m of w.received.slice(base.received)) {
    if (m.method === 'fuzz/echo') wireIds.set((m.params as { n: number }).n, m.id);
  }

  const frames: Frame[] = [];
  const expected = {
    events: [] as Reported[],
    frameProblems: 0,
    badNotifications: [] as string[],
    strays: 0,
    overlong: 0,
  };
  const expectedReplies = new Map<number, { error: boolean; payload: string }>();
  const garbageTexts: string[] = [];
  let k = 0;
  for (const s of script.steps) {
    if (s.only && s.only !== w.kind) continue;
    if (s.reply) {
      const n = script.replyOrder[k++];
      const payload = `echo ${n} ${'∑'.repeat(n * 3)}`;
      expectedReplies.set(n, { error: s.reply.error, payload });
      frames.push(
        text(
          s.reply.error
            ? { id: wireIds.get(n), error: { code: -32000 - n, message: payload } }
            : { id: wireIds.get(n), result: { n, payload } },
        ),
      );
      continue;
    }
    frames.push(...s.frames);
    if (s.frameProblems > 0)
      for (const f of s.frames)
        garbageTexts.push(
          'text' in f
            ? f.text
            : 'bytes' in f
              ? Buffer.from(f.bytes).toString('utf8')
              : Buffer.concat(f.fragments).toString('utf8'),
        );
    expected.events.push(...s.events);
    expected.frameProblems += s.frameProblems;
    expected.badNotifications.push(...s.badNotifications);
    expected.strays += s.strays;
    expected.overlong += s.overlong;
  }
  totals.frames += frames.length;
  totals.scripts += 1;
  const problemsExpected =
    expected.frameProblems + expected.badNotifications.length + expected.strays + expected.overlong;

  await w.send(frames, chunker(script.seed));
  await w
    .until(
      () =>
        outcomes.filter(Boolean).length === REQUESTS &&
        w.listener.events.length - base.events >= expected.events.length &&
        w.listener.problems.length - base.problems >= problemsExpected,
      'the effects of the script',
      10_000,
    )
    .catch(() => undefined); // the checks below say what is missing
  await sleep(10); // anything extra would show up now

  // No crash, no closed session.
  assert.deepEqual(w.listener.closes, [], 'the session must stay open');
  // Every valid reply resolved its own request, with its own result (or error).
  for (let n = 0; n < REQUESTS; n++) {
    const want = expectedReplies.get(n)!;
    const got = outcomes[n];
    assert.ok(
      got,
      `request ${n} never settled (${want.error ? 'error' : 'result'} reply sent); reports: ${JSON.stringify(w.listener.problems.slice(base.problems).slice(-5))}`,
    );
    if (want.error) {
      assert.ok(
        !got.ok && got.value instanceof RpcError,
        `request ${n} should fail with the daemon's error, got ${String(got.value)}`,
      );
      assert.equal(got.value.code, -32000 - n);
      assert.match(got.value.message, new RegExp(`echo ${n} `));
    } else {
      assert.ok(got.ok, `request ${n} should resolve, got ${String(got.value)}`);
      assert.deepEqual(got.value, { n, payload: want.payload });
    }
  }
  // Every valid notification and server request reached the listener, in wire order, and nothing else.
  assert.deepEqual(w.listener.events.slice(base.events), expected.events);
  // Every fault was reported once, each as one clear, bounded line.
  const problems = w.listener.problems.slice(base.problems);
  const counted = { frame: 0, overlong: 0, notification: [] as string[], stray: 0 };
  for (const p of problems) {
    assert.ok(
      !p.includes('\n') && p.length <= 600,
      `a report must be one short line: ${JSON.stringify(p.slice(0, 300))}`,
    );
    if (OVERLONG_PROBLEM.test(p)) counted.overlong++;
    else if (FRAME_PROBLEM.test(p)) counted.frame++;
    else if (NOTIFICATION_PROBLEM.test(p)) counted.notification.push(NOTIFICATION_PROBLEM.exec(p)![1]);
    else if (STRAY_PROBLEM.test(p)) counted.stray++;
    else assert.fail(`an unclear or unexpected report: ${JSON.stringify(p)}`);
  }
  if (counted.frame !== expected.frameProblems) {
    // Say which frames went unreported (or were reported twice), by their excerpt.
    const want = new Map<string, number>();
    for (const t of garbageTexts)
      want.set(JSON.stringify(excerpt(t.trim())), (want.get(JSON.stringify(excerpt(t.trim()))) ?? 0) + 1);
    const odd = [...want]
      .filter(([e, n]) => problems.filter((p) => p.endsWith(`: ${e}`)).length !== n)
      .map(([e, n]) => `${e} x${n}`);
    assert.fail(
      `one report per malformed frame: ${counted.frame} reports for ${expected.frameProblems} frames; odd: ${odd.join(', ')}`,
    );
  }
  assert.equal(counted.overlong, expected.overlong, 'one report per over-long line');
  assert.equal(
    w.reader.malformedCount - base.malformed,
    expected.frameProblems + expected.overlong,
    'the reader counts every dropped frame',
  );
  assert.deepEqual(
    counted.notification.sort(),
    [...expected.badNotifications].sort(),
    'one report per malformed notification',
  );
  assert.equal(counted.stray, expected.strays, 'one report per stray reply');
  // Nothing was ever sent back for a server request: the client only sent its own requests.
  for (const m of w.received.slice(base.received)) {
    assert.ok(
      m.method === 'fuzz/echo',
      `the client sent something other than its requests: ${JSON.stringify(m).slice(0, 200)}`,
    );
  }
  assert.deepEqual(w.unparsable, []);
  await Promise.all(calls);
}

async function checkHandshake(w: WireSession): Promise<void> {
  await w.until(() => w.received.length >= 2, 'the handshake');
  assert.deepEqual(
    w.received.map((m) => m.method),
    ['initialize', 'initialized'],
  );
}

// ---- the tests ----------------------------------------------------------------------------------

const RUNS = 16;
const totals: Totals = { frames: 0, scripts: 0 };

/** The fuzz property of one framing: each generated script on a fresh session; returns the frames sent. */
async function fuzz(framing: 'stdio' | 'websocket', open: () => ReturnType<typeof stdioSession>): Promise<number> {
  const before = totals.frames;
  await fc.assert(
    fc.asyncProperty(scripts(framing), async (script) => {
      const w = await open();
      try {
        await checkHandshake(w);
        w.received.length = 0;
        await runScript(w, script, totals);
      } finally {
        await w.close();
      }
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true, includeErrorInReport: true },
  );
  return totals.frames - before;
}

test('Invariant (stdio framing): under generated garbage interleaved with valid traffic, no crash, every valid reply resolves its request, every valid notification and server request reaches the listener in wire order, every fault is reported once on one clear line, and nothing is sent back for a server request', async (t) => {
  const frames = await fuzz('stdio', () => stdioSession({ maxLineBytes: MAX_LINE_BYTES }));
  t.diagnostic(`stdio: ${frames} generated frames in ${RUNS} scripts`);
});

test('Invariant (WebSocket framing over the Unix control socket): the same, with frames split into separate messages, fragmented messages, binary frames and invalid UTF-8 in text frames', async (t) => {
  const server = await unixWsServer();
  try {
    const frames = await fuzz('websocket', () => websocketSession(server));
    t.diagnostic(`websocket: ${frames} generated frames in ${RUNS} scripts`);
  } finally {
    await server.close();
  }
});

test('Invariant: the two fuzz runs above sent at least 10,000 generated frames', () => {
  assert.ok(totals.frames >= 10_000, `only ${totals.frames} frames were generated`);
});

test('Invariant: memory stays bounded over one long session of 12,000 generated frames per framing (live heap + buffers after a full GC vary by less than 8 MB between checkpoints after the first)', async (t) => {
  const server = await unixWsServer();
  try {
    for (const kind of ['stdio', 'websocket'] as const) {
      const w =
        kind === 'stdio' ? await stdioSession({ maxLineBytes: MAX_LINE_BYTES }) : await websocketSession(server);
      try {
        await checkHandshake(w);
        w.received.length = 0;
        // Small frames (the huge ones are covered above): throughput is what would reveal a leak.
        const small = fc
          .oneof(knownNotification, serverRequest, ignoredNotification, badNotification, garbage, strayReply)
          .filter((s) => s.frames.every((f) => !('text' in f) || f.text.length < 4096));
        const samples: number[] = [];
        const rounds = 4;
        const perRound = 3_000;
        for (let r = 0; r < rounds; r++) {
          const steps = fc.sample(small, { numRuns: perRound, seed: (SEED ?? 42) + r });
          const frames = steps.flatMap((s) => s.frames);
          const events = steps.reduce((n, s) => n + s.events.length, 0);
          const reports = steps.reduce((n, s) => n + s.frameProblems + s.badNotifications.length + s.strays, 0);
          const e0 = w.listener.events.length;
          const p0 = w.listener.problems.length;
          await w.send(frames, () => 16 * 1024);
          await w.until(
            () => w.listener.events.length - e0 >= events && w.listener.problems.length - p0 >= reports,
            `round ${r}`,
          );
          assert.equal(w.listener.events.length - e0, events);
          assert.equal(w.listener.problems.length - p0, reports);
          // What the test itself keeps is not the client's memory.
          w.listener.events.length = 0;
          w.listener.problems.length = 0;
          samples.push(await liveBytes());
        }
        const mb = samples.map((b) => (b / 1024 / 1024).toFixed(1));
        t.diagnostic(`${kind}: live MB after each ${perRound} steps: ${mb.join(', ')}`);
        // The first round warms up caches and code; after it the live size must stay flat.
        const settled = samples.slice(1);
        assert.ok(
          Math.max(...settled) - Math.min(...settled) < 8 * 1024 * 1024,
          `${kind}: live memory grew: ${mb.join(', ')} MB`,
        );
        assert.deepEqual(w.listener.closes, []);
        assert.ok(
          w.received.every((m) => m.method === 'fuzz/echo'),
          'nothing sent back for a server request',
        );
        // And the session still serves a request.
        const reply = w.session.request('fuzz/echo', { n: 99 });
        await w.until(() => w.received.some((m) => m.method === 'fuzz/echo'), 'the last request');
        const id = w.received.find((m) => m.method === 'fuzz/echo')!.id;
        await w.send([text({ id, result: { n: 99 } })]);
        assert.deepEqual(await reply, { n: 99 });
      } finally {
        await w.close();
      }
    }
  } finally {
    await server.close();
  }
});

test('Invariant: server requests are never answered and leave nothing behind: 20,000 approvals grow live memory by less than 3 MB (each was kept forever before: about 11 MB)', async () => {
  const w = await stdioSession();
  try {
    await checkHandshake(w);
    w.received.length = 0;
    const before = await liveBytes();
    const n = 20_000;
    const frames: Frame[] = [];
    for (let i = 0; i < n; i++)
      frames.push(
        text({
          id: `approval-${i}`,
          method: SERVER_REQUEST_METHODS[i % SERVER_REQUEST_METHODS.length],
          params: { threadId: `t${i % 7}`, itemId: `i${i}` },
        }),
      );
    await w.send(frames);
    frames.length = 0;
    await w.until(() => w.listener.events.length >= n, 'every server request reported');
    assert.equal(w.listener.events.length, n);
    assert.deepEqual(w.listener.events[n - 1], [
      'serverRequest',
      `t${(n - 1) % 7}`,
      `approval-${n - 1}`,
      SERVER_REQUEST_METHODS[(n - 1) % SERVER_REQUEST_METHODS.length],
    ]);
    w.listener.events.length = 0;
    const grown = (await liveBytes()) - before;
    assert.ok(
      grown < 3 * 1024 * 1024,
      `live memory grew by ${(grown / 1024 / 1024).toFixed(1)} MB for ${n} server requests`,
    );
    assert.deepEqual(w.received, [], 'nothing was sent back');
    assert.deepEqual(w.listener.problems, []);
  } finally {
    await w.close();
  }
});

test('Invariant: huge valid frames (a 24 MB string) are delivered intact over both framings with the default 64 MiB cap, and the session goes on', async () => {
  const server = await unixWsServer();
  try {
    for (const w of [await stdioSession(), await websocketSession(server)]) {
      try {
        await checkHandshake(w);
        const big = '€'.repeat(8 * 1024 * 1024); // 24 MB of UTF-8
        await w.send(
          [
            text({
              method: 'thread/goal/updated',
              params: {
                threadId: 'big',
                turnId: null,
                goal: {
                  threadId: 'big',
                  objective: big,
                  status: 'active',
                  tokenBudget: null,
                  tokensUsed: 0,
                  timeUsedSeconds: 0,
                  createdAt: 0,
                  updatedAt: 0,
                },
              },
            }),
            text({ method: 'thread/closed', params: { threadId: 'after' } }),
          ],
          () => 1024 * 1024,
        );
        await w.until(() => w.listener.events.length === 2, `the huge frame (${w.kind})`);
        assert.deepEqual(w.listener.events, [
          ['goalUpdated', 'big', 'active', big.length, null],
          ['threadClosed', 'after'],
        ]);
        assert.deepEqual(w.listener.problems, []);
        assert.deepEqual(w.listener.closes, []);
      } finally {
        await w.close();
      }
    }
  } finally {
    await server.close();
  }
});

test('Invariant: a line that never ends is held in at most maxLineBytes; memory stays bounded while 48 MB arrive without a newline, one report, and the next line is read', async () => {
  const w = await stdioSession({ maxLineBytes: MAX_LINE_BYTES });
  try {
    const before = await liveBytes();
    const chunk = Buffer.alloc(256 * 1024, 'z');
    let peak = 0;
    for (let i = 0; i < 192; i++) {
      await w.raw(chunk); // no newline, ever
      if (i % 48 === 47) peak = Math.max(peak, (await liveBytes()) - before);
    }
    assert.ok(
      peak < 2 * MAX_LINE_BYTES + 4 * 1024 * 1024,
      `held ${(peak / 1024 / 1024).toFixed(1)} MB for a line capped at 1 MB`,
    );
    await w.send([{ text: '' }, text({ method: 'thread/closed', params: { threadId: 'after' } })]);
    await w.until(() => w.listener.events.length === 1, 'the next line');
    assert.deepEqual(w.listener.events, [['threadClosed', 'after']]);
    assert.equal(w.listener.problems.length, 1);
    assert.match(w.listener.problems[0], OVERLONG_PROBLEM);
  } finally {
    await w.close();
  }
});

test('Invariant: the engine keeps watching and recovering through garbage on its connection; each bad frame is one warning, and approvals are never answered', async () => {
  const h = await makeHarness();
  try {
    h.daemon.addThread('thread-1');
    await h.reconcile();
    assert.equal(h.engine.watch('thread-1')?.state.kind, 'running');
    const garbageLines = fc
      .sample(
        garbage.filter((s) => s.frames.every((f) => 'text' in f && f.text.length < 4096)),
        { numRuns: 300, seed: SEED ?? 7 },
      )
      .map((s) => (s.frames[0] as { text: string }).text);
    // Garbage, an approval request, more garbage, then the goal blocks on a transient failure.
    for (const line of garbageLines.slice(0, 150)) h.daemon.sendRaw(line);
    h.daemon.serverRequest('approval-1', 'item/commandExecution/requestApproval', {
      threadId: 'thread-1',
      itemId: 'i',
    });
    h.daemon.notify('serverRequest/resolved', { threadId: 'thread-1', requestId: 'approval-1' });
    for (const line of garbageLines.slice(150)) h.daemon.sendRaw(line);
    h.daemon.fail('thread-1');
    h.daemon.notify('thread/goal/updated', {
      threadId: 'thread-1',
      turnId: null,
      goal: h.daemon.thread('thread-1').goal,
    });
    h.daemon.notify('turn/completed', { threadId: 'thread-1', turn: h.daemon.thread('thread-1').turn });
    await h.settle();
    assert.equal(h.engine.watch('thread-1')?.state.kind, 'backoff');
    await h.advance(TEST_OPTIONS.baseDelayMs); // the harness runs the shipped backoff (30 s)
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'recovered once');
    assert.equal(h.engine.watch('thread-1')?.state.kind, 'running');
    const warnings = h.decisions.filter((d) => d.type === 'warning').map((d) => (d as { message: string }).message);
    const frameWarnings = warnings.filter((m) => /^protocol: line reader: dropped malformed frame \(/.test(m));
    assert.equal(
      frameWarnings.length,
      garbageLines.length,
      warnings.filter((m) => !frameWarnings.includes(m)).join('\n'),
    );
    assert.deepEqual(h.daemon.violations, [], 'no reply to the approval, no unexpected call');
    assert.equal(h.engine.connectionState().kind, 'connected');
  } finally {
    await h.cleanup();
  }
});
