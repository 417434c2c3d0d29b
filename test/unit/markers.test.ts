import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fsp } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findLastActivation, findLastMarker } from '../../src/rollout/backwardLookups';
import { parseGoalLine, parseMarkerLine } from '../../src/rollout/markerLines';
import { scanForMarkers, scanFromLastActivation } from '../../src/rollout/markers';
import { RolloutReadError, DEFAULT_MAX_LINE_BYTES } from '../../src/rollout/rolloutFile';
import { GOAL_STATUSES, type GoalStatus, type Marker } from '../../src/model/watch';
import { goalEvent, modelGoalCall, noiseLine, realMarker, seedMarker, ts } from '../support/rolloutLines';
import { rng } from '../support/random';

// ---------------------------------------------------------- reference (line builders: test/support/rolloutLines.ts)

/** Every marker in complete lines of `content` no longer than `cap`, the obvious way. */
function reference(content: Buffer, cap = DEFAULT_MAX_LINE_BYTES, from = 0): { markers: Marker[]; nextOffset: number } {
  const markers: Marker[] = [];
  let start = from;
  for (;;) {
    const nl = content.indexOf(0x0a, start);
    if (nl < 0) break;
    if (nl - start <= cap) {
      const status = parseMarkerLine(content.subarray(start, nl).toString('utf8'));
      if (status) markers.push({ status, offset: start });
    }
    start = nl + 1;
  }
  return { markers, nextOffset: start };
}

/** The start of the last complete activation line (goal event, status active) at or after `from`, the obvious way. */
function referenceActivation(content: Buffer, cap = DEFAULT_MAX_LINE_BYTES, from = 0): number | null {
  let found: number | null = null;
  let start = from;
  for (;;) {
    const nl = content.indexOf(0x0a, start);
    if (nl < 0) break;
    if (nl - start <= cap) {
      const goal = parseGoalLine(content.subarray(start, nl).toString('utf8'));
      if (goal?.by === 'event' && goal.status === 'active') found = start;
    }
    start = nl + 1;
  }
  return found;
}

function lineStarts(content: Buffer): number[] {
  const starts = [0];
  for (let i = content.indexOf(0x0a); i >= 0 && i + 1 < content.length; i = content.indexOf(0x0a, i + 1))
    starts.push(i + 1);
  return starts;
}

// ---------------------------------------------------------------- fixtures

let dir: string;
before(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'markers-test-'));
});
after(async () => {
  await fsp.rm(dir, { recursive: true, force: true });
});
let fileNo = 0;
async function write(content: string | Buffer): Promise<string> {
  const p = path.join(dir, `rollout-${++fileNo}.jsonl`);
  await fsp.writeFile(p, content);
  return p;
}

// ---------------------------------------------------------------- parseMarkerLine

describe('parseMarkerLine', () => {
  test('the real Codex marker, every status', () => {
    for (const s of GOAL_STATUSES) assert.equal(parseMarkerLine(realMarker(s)), s);
  });

  test('the line from the docs, verbatim', () => {
    const line =
      '{"timestamp":"2025-06-01T10:00:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<codex_internal_context source=\\"user_goal\\">\\nUser set goal status: \\"paused\\".\\n</codex_internal_context>"}],"internal_chat_message_metadata_passthrough":{"turn_id":"auto-compact-2","content_item_kinds":["user.goal"],"content_item_metadata":[{"provenance":{"type":"harness","hook":false}}]}},"metadata":{"client_authored":false}}';
    assert.equal(parseMarkerLine(line), 'paused');
  });

  test('the seed spec marker', () => {
    assert.equal(parseMarkerLine(seedMarker('paused')), 'paused');
    assert.equal(parseMarkerLine(seedMarker('usageLimited')), 'usageLimited');
  });

  test('objective and status; omitted objective', () => {
    assert.equal(parseMarkerLine(realMarker('active', { objective: 'Ship the report' })), 'active');
    assert.equal(parseMarkerLine(realMarker('complete', { omitted: true })), 'complete');
  });

  test('an objective quoting a status sentence does not fool it', () => {
    const tricky = 'do this\nUser set goal status: "complete".\n';
    assert.equal(parseMarkerLine(realMarker('paused', { objective: tricky })), 'paused');
    assert.equal(parseMarkerLine(realMarker(null, { objective: tricky })), null);
  });

  test('not status markers', () => {
    assert.equal(parseMarkerLine(realMarker(null, { objective: 'only an objective' })), null);
    assert.equal(parseMarkerLine(realMarker(null, { omitted: true })), null);
    const cleared = JSON.parse(realMarker('paused'));
    cleared.payload.content[0].text =
      '<codex_internal_context source="user_goal">\nUser cleared the goal.\n</codex_internal_context>';
    assert.equal(parseMarkerLine(JSON.stringify(cleared)), null);
    assert.equal(parseMarkerLine(seedMarker('stopped')), null, 'unknown status');
    assert.equal(parseMarkerLine(seedMarker('Paused')), null, 'status is case-sensitive');
    assert.equal(parseMarkerLine(realMarker('paused').slice(0, -5)), null, 'truncated JSON');
    assert.equal(parseMarkerLine(''), null);
    assert.equal(parseMarkerLine('{"type":"response_item"}'), null);
  });

  test('every field is checked', () => {
    const variants: Array<(o: any) => void> = [
      (o) => (o.type = 'event_msg'),
      (o) => (o.payload.type = 'function_call_output'),
      (o) => (o.payload.role = 'assistant'),
      (o) => (o.payload.role = 'developer'),
      (o) => delete o.payload.internal_chat_message_metadata_passthrough,
      (o) => (o.payload.internal_chat_message_metadata_passthrough.content_item_kinds = ['user.text']),
      (o) => (o.payload.internal_chat_message_metadata_passthrough.content_item_kinds = 'user.goal'),
      (o) => (o.payload.content[0].type = 'output_text'),
      (o) => (o.payload.content = 'User set goal status: "paused".'),
      (o) => (o.payload = null),
    ];
    for (const [i, mutate] of variants.entries()) {
      const o = JSON.parse(realMarker('paused'));
      mutate(o);
      assert.equal(parseMarkerLine(JSON.stringify(o)), null, `variant ${i}`);
    }
  });

  test('non-marker rollout lines', () => {
    const rand = rng(1);
    for (let i = 0; i < 200; i++) assert.equal(parseMarkerLine(noiseLine(rand)), null);
  });

  test('a CRLF line still parses', () => {
    assert.equal(parseMarkerLine(realMarker('blocked') + '\r'), 'blocked');
  });
});

// ---------------------------------------------------------------- multi-MB rollouts

describe('findLastMarker / scanForMarkers on a multi-MB rollout', () => {
  let nearEnd: { path: string; content: Buffer; offset: number };
  let nearStart: { path: string; content: Buffer; offset: number };

  /** ~8 MB of realistic lines, with big outputs, and one marker after `markerAfter` lines. */
  async function rollout(seed: number, total: number, markerAfter: number, status: GoalStatus) {
    const rand = rng(seed);
    const parts: string[] = [
      JSON.stringify({ timestamp: ts(), type: 'session_meta', payload: { id: 'thread-1', cwd: '/repo' } }),
    ];
    let offset = -1;
    let bytes = Buffer.byteLength(parts[0]) + 1;
    for (let i = 0; i < total; i++) {
      if (i === markerAfter) {
        offset = bytes;
        parts.push(realMarker(status, { objective: 'Keep the build green' }));
      } else {
        parts.push(noiseLine(rand, i % 17 === 5));
      }
      bytes += Buffer.byteLength(parts[parts.length - 1]) + 1;
    }
    const content = Buffer.from(parts.join('\n') + '\n');
    return { path: await write(content), content, offset };
  }

  before(async () => {
    nearEnd = await rollout(7, 700, 695, 'paused');
    nearStart = await rollout(8, 700, 3, 'complete');
  });

  test('the files are realistic: several MB, lines over the cap', () => {
    for (const f of [nearEnd, nearStart]) {
      assert.ok(f.content.length > 4 * 1024 * 1024, `size ${f.content.length}`);
      const lines = f.content.toString('utf8').split('\n');
      assert.ok(lines.some((l) => Buffer.byteLength(l) > DEFAULT_MAX_LINE_BYTES));
      assert.equal(reference(f.content).markers.length, 1);
    }
  });

  test('marker near the end: found after reading only the tail', async () => {
    const reads: Array<[number, number]> = [];
    const r = await findLastMarker(nearEnd.path, { onRead: (p, l) => reads.push([p, l]) });
    assert.deepEqual(r.marker, { status: 'paused', offset: nearEnd.offset });
    assert.equal(r.size, nearEnd.content.length);
    assert.equal(r.nextOffset, nearEnd.content.length);
    assert.ok(r.bytesRead < nearEnd.content.length - nearEnd.offset + 64 * 1024);
    assert.ok(reads.every(([, l]) => l <= 64 * 1024));
    assert.equal(
      parseMarkerLine(
        nearEnd.content.subarray(r.marker.offset, nearEnd.content.indexOf(0x0a, r.marker.offset)).toString(),
      ),
      'paused',
    );
  });

  test('marker near the start: found reading backwards through the whole file in chunks', async () => {
    const reads: Array<[number, number]> = [];
    const r = await findLastMarker(nearStart.path, { onRead: (p, l) => reads.push([p, l]) });
    assert.deepEqual(r.marker, { status: 'complete', offset: nearStart.offset });
    assert.ok(reads.every(([, l]) => l <= 64 * 1024));
    assert.ok(reads.length > 60);
  });

  test('forward scan of the whole file agrees with the reference', async () => {
    for (const f of [nearEnd, nearStart]) {
      const reads: Array<[number, number]> = [];
      const r = await scanForMarkers(f.path, 0, { onRead: (p, l) => reads.push([p, l]) });
      assert.deepEqual(r.markers, reference(f.content).markers);
      assert.deepEqual(r.last, reference(f.content).markers[0]);
      assert.equal(r.nextOffset, f.content.length);
      assert.equal(r.truncated, false);
      assert.equal(r.bytesRead, f.content.length);
      assert.ok(reads.every(([, l]) => l <= 64 * 1024));
    }
  });

  test('no marker at all: null after reading everything', async () => {
    const rand = rng(9);
    const content = Array.from({ length: 60 }, (_, i) => noiseLine(rand, i % 10 === 0)).join('\n') + '\n';
    const p = await write(content);
    const r = await findLastMarker(p);
    assert.equal(r.marker, null);
    assert.equal(r.bytesRead, Buffer.byteLength(content));
    assert.deepEqual((await scanForMarkers(p, 0)).markers, []);
  });
});

// ---------------------------------------------------------------- chunk boundaries, line cap

describe('chunk boundaries', () => {
  test('any chunk size and line cap gives the reference answer', async () => {
    const rand = rng(42);
    // The first line is a marker; then one over and one under the small cap below.
    const parts: string[] = [
      realMarker('active'),
      realMarker('budgetLimited', { pad: 220 }),
      realMarker('paused', { pad: 60 }),
    ];
    const statuses = GOAL_STATUSES;
    for (let i = 0; i < 40; i++) {
      const r = rand();
      if (r < 0.3)
        parts.push(i % 2 ? seedMarker(statuses[i % 6]) : realMarker(statuses[i % 6], { objective: 'x'.repeat(i * 3) }));
      else if (r < 0.45)
        parts.push(realMarker('paused', { pad: 100 + i * 4 })); // around the small cap below
      else if (r < 0.5) parts.push('');
      else parts.push(JSON.stringify({ type: 'event_msg', payload: { text: 'é€😀'.repeat(Math.floor(rand() * 20)) } }));
    }
    parts.push(realMarker('blocked'));
    const smallCap = Buffer.byteLength(realMarker('paused', { pad: 180 }));
    // Tiny chunks (one read per byte or so) on the first six lines only, to stay fast.
    const whole = Buffer.from(parts.join('\n') + '\n');
    const prefix = Buffer.from(parts.slice(0, 6).join('\n') + '\n');
    for (const [content, chunkSizes] of [
      [prefix, [1, 2, 5]],
      [whole, [17, 64, 333, 4096, 65536]],
    ] as const) {
      const p = await write(content);
      const starts = lineStarts(content);
      for (const cap of [DEFAULT_MAX_LINE_BYTES, smallCap]) {
        const all = reference(content, cap).markers;
        assert.ok(all.length > 2);
        for (const chunkSize of chunkSizes) {
          const label = `chunk ${chunkSize} cap ${cap} size ${content.length}`;
          const last = await findLastMarker(p, { chunkSize, maxLineBytes: cap });
          assert.deepEqual(last.marker, all[all.length - 1], label);
          assert.equal(last.nextOffset, content.length, label);
          const fwd = await scanForMarkers(p, 0, { chunkSize, maxLineBytes: cap });
          assert.deepEqual(fwd.markers, all, label);
          const froms =
            chunkSize < 5 ? [starts[2]] : [starts[1], starts[Math.floor(starts.length / 2)], starts[starts.length - 1]];
          for (const from of froms) {
            const part = await scanForMarkers(p, from, { chunkSize, maxLineBytes: cap });
            assert.deepEqual(part.markers, reference(content, cap, from).markers, `${label} from ${from}`);
            assert.equal(part.truncated, false, label);
          }
        }
      }
    }
    // The small cap really drops some markers the default one keeps, in both files.
    for (const content of [prefix, whole]) {
      assert.ok(reference(content, smallCap).markers.length < reference(content).markers.length);
    }
  });

  test('backward scans agree with the reference whatever the file length below the marker', async () => {
    // The last marker, then trailing noise of every length from 0 to 70 bytes: the chunk
    // boundary falls at every position of the marker line.
    const marker = realMarker('usageLimited');
    for (let n = 0; n <= 70; n += 1) {
      const tail = n === 0 ? '' : 'z'.repeat(n - 1) + '\n';
      const content = Buffer.from(`${seedMarker('paused')}\n${marker}\n${tail}`);
      const p = await write(content);
      const r = await findLastMarker(p, { chunkSize: 64 });
      assert.deepEqual(r.marker, reference(content).markers.at(-1), `tail ${n}`);
    }
  });

  test('the backward scan finds a marker that is the first line of the file', async () => {
    const content = realMarker('paused') + '\n' + noiseLine(rng(3)) + '\n';
    const p = await write(content);
    for (const chunkSize of [1, 10, 65536]) {
      assert.deepEqual((await findLastMarker(p, { chunkSize })).marker, { status: 'paused', offset: 0 });
    }
  });

  test('a marker line longer than the cap is skipped; at exactly the cap it counts', async () => {
    const early = seedMarker('paused');
    const huge = realMarker('complete', { pad: DEFAULT_MAX_LINE_BYTES + 10 });
    const p = await write(`${early}\n${huge}\n${noiseLine(rng(4))}\n`);
    assert.deepEqual((await findLastMarker(p)).marker, { status: 'paused', offset: 0 });
    const fwd = await scanForMarkers(p, 0);
    assert.deepEqual(fwd.markers, [{ status: 'paused', offset: 0 }]);

    const m = realMarker('blocked', { pad: 500 });
    const len = Buffer.byteLength(m);
    const q = await write(`${early}\n${m}\n`);
    const at = Buffer.byteLength(early) + 1;
    for (const chunkSize of [5, 100, 65536]) {
      assert.deepEqual((await findLastMarker(q, { chunkSize, maxLineBytes: len })).marker, {
        status: 'blocked',
        offset: at,
      });
      assert.deepEqual((await findLastMarker(q, { chunkSize, maxLineBytes: len - 1 })).marker, {
        status: 'paused',
        offset: 0,
      });
      assert.deepEqual((await scanForMarkers(q, 0, { chunkSize, maxLineBytes: len })).last, {
        status: 'blocked',
        offset: at,
      });
      assert.deepEqual((await scanForMarkers(q, 0, { chunkSize, maxLineBytes: len - 1 })).last, {
        status: 'paused',
        offset: 0,
      });
    }
  });

  test('lines of 5 to 200 KB that span many chunks are assembled whole, forwards and backwards', async () => {
    // Long enough for the line buffer to grow several times while a line is assembled.
    const rand = rng(44);
    const lines: string[] = [];
    const expected: Marker[] = [];
    let offset = 0;
    for (const [i, pad] of [5_000, 9_000, 70_000, 200_000, 33_000].entries()) {
      const status = GOAL_STATUSES[i % GOAL_STATUSES.length];
      const marker = realMarker(status, { pad });
      expected.push({ status, offset });
      for (const line of [marker, noiseLine(rand, false, { activations: false })]) {
        lines.push(line);
        offset += Buffer.byteLength(line) + 1;
      }
    }
    const act = goalEvent('active', 'o'.repeat(150_000));
    lines.push(act, noiseLine(rand, false, { activations: false }));
    const content = Buffer.from(lines.join('\n') + '\n');
    const p = await write(content);
    assert.deepEqual(reference(content).markers, expected);
    for (const chunkSize of [1000, 4096, 10_007, 65536]) {
      assert.deepEqual((await scanForMarkers(p, 0, { chunkSize })).markers, expected, `forwards, chunk ${chunkSize}`);
      assert.deepEqual(
        (await findLastMarker(p, { chunkSize })).marker,
        expected.at(-1),
        `backwards, chunk ${chunkSize}`,
      );
      // Backwards from each marker's end: the line just before is the one found.
      for (const m of expected) {
        const end = content.indexOf(0x0a, m.offset) + 1;
        const q = await write(content.subarray(0, end));
        assert.deepEqual(
          (await findLastMarker(q, { chunkSize })).marker,
          m,
          `backwards to ${m.offset}, chunk ${chunkSize}`,
        );
      }
      assert.equal((await findLastActivation(p, { chunkSize })).offset, offset, `activation, chunk ${chunkSize}`);
    }
  });

  test('a single 20 MB line is skipped in constant-size reads', async () => {
    const big = JSON.stringify({
      type: 'response_item',
      payload: { type: 'function_call_output', output: 'user.goal '.repeat(2 * 1024 * 1024) },
    });
    const p = await write(`${seedMarker('paused')}\n${big}\n`);
    let maxRead = 0;
    const r = await findLastMarker(p, { onRead: (_, l) => (maxRead = Math.max(maxRead, l)) });
    assert.deepEqual(r.marker, { status: 'paused', offset: 0 });
    const f = await scanForMarkers(p, 0, { onRead: (_, l) => (maxRead = Math.max(maxRead, l)) });
    assert.deepEqual(f.markers, [{ status: 'paused', offset: 0 }]);
    assert.ok(maxRead <= 64 * 1024);
  });

  test('minOffset bounds the backward scan', async () => {
    const a = seedMarker('paused') + '\n';
    const b = noiseLine(rng(15)) + '\n';
    const c = realMarker('active') + '\n';
    const d = noiseLine(rng(16)) + '\n';
    const p = await write(a + b + c + d);
    const [la, lb, lc] = [a, b, c].map((x) => Buffer.byteLength(x)) as [number, number, number];
    const size = la + lb + lc + Buffer.byteLength(d);
    for (const chunkSize of [3, 64, 65536]) {
      assert.deepEqual((await findLastMarker(p, { chunkSize, minOffset: la + lb })).marker, {
        status: 'active',
        offset: la + lb,
      });
      const past = await findLastMarker(p, { chunkSize, minOffset: la + lb + lc });
      assert.equal(past.marker, null);
      assert.equal(past.bytesRead, size - (la + lb + lc));
      assert.deepEqual((await findLastMarker(p, { chunkSize, minOffset: la })).marker, {
        status: 'active',
        offset: la + lb,
      });
    }
    const onlyA = await write(a + b);
    assert.equal((await findLastMarker(onlyA, { minOffset: la })).marker, null);
    assert.deepEqual((await findLastMarker(onlyA, { minOffset: 0 })).marker, { status: 'paused', offset: 0 });
    const beyond = await findLastMarker(onlyA, { minOffset: 10 * size });
    assert.deepEqual([beyond.marker, beyond.bytesRead], [null, 0]);
    await assert.rejects(findLastMarker(p, { minOffset: -1 }), RangeError);
  });

  test('maxMarkers keeps the last ones', async () => {
    const lines = GOAL_STATUSES.map((s) => seedMarker(s));
    const p = await write(lines.join('\n') + '\n');
    const r = await scanForMarkers(p, 0, { maxMarkers: 2 });
    assert.deepEqual(
      r.markers.map((m) => m.status),
      ['budgetLimited', 'complete'],
    );
    assert.equal(r.last?.status, 'complete');
  });
});

// ---------------------------------------------------------------- the goal's last activation

describe('findLastActivation / scanFromLastActivation', () => {
  /** Goal lines that are not activations: other statuses, the model's own calls, quotes. */
  function lookalikes(): string[] {
    return [
      goalEvent('paused'),
      goalEvent('blocked'),
      modelGoalCall('active'),
      modelGoalCall('blocked'),
      JSON.stringify({
        timestamp: ts(),
        type: 'response_item',
        payload: { type: 'function_call_output', call_id: 'c', output: `rollout.jsonl:9:${goalEvent('active')}\n` },
      }),
      JSON.stringify({ type: 'event_msg', payload: { type: 'thread_goal_updated', goal: { status: 'Active' } } }),
      goalEvent('active').slice(0, -3), // broken JSON
    ];
  }

  /** ~6 MB of realistic lines without automatic activations, activations only where asked. */
  async function rollout(seed: number, total: number, activationsAt: number[]) {
    const rand = rng(seed);
    const parts: string[] = [
      JSON.stringify({ timestamp: ts(), type: 'session_meta', payload: { id: 'thread-1', cwd: '/repo' } }),
    ];
    const look = lookalikes();
    for (let i = 0; i < total; i++) {
      if (activationsAt.includes(i)) parts.push(goalEvent('active'));
      else if (i % 23 === 11) parts.push(look[i % look.length]);
      else if (i % 41 === 7) parts.push(realMarker('paused'));
      else parts.push(noiseLine(rand, i % 17 === 5, { activations: false }));
    }
    const content = Buffer.from(parts.join('\n') + '\n');
    return { path: await write(content), content };
  }

  test('none of the look-alikes is an activation', () => {
    for (const line of lookalikes()) {
      const g = parseGoalLine(line);
      assert.ok(!(g?.by === 'event' && g.status === 'active'), line.slice(0, 80));
    }
    assert.deepEqual(parseGoalLine(goalEvent('active')), { by: 'event', status: 'active' });
  });

  test('activation near the end: found after reading only the tail', async () => {
    const f = await rollout(21, 600, [10, 200, 590]);
    const expected = referenceActivation(f.content);
    assert.ok(expected !== null && f.content.length > 4 * 1024 * 1024, `size ${f.content.length}`);
    const reads: Array<[number, number]> = [];
    const r = await findLastActivation(f.path, { onRead: (p, l) => reads.push([p, l]) });
    assert.equal(r.offset, expected);
    assert.equal(r.size, f.content.length);
    assert.equal(r.nextOffset, f.content.length);
    assert.ok(r.bytesRead < f.content.length - expected + 64 * 1024, `read ${r.bytesRead}`);
    assert.ok(r.bytesRead < f.content.length / 10);
    assert.ok(reads.every(([, l]) => l <= 64 * 1024));
    assert.equal(
      r.bytesRead,
      reads.reduce((n, [, l]) => n + l, 0),
    );
  });

  test('activation near the start: found reading backwards through the file in chunks', async () => {
    const f = await rollout(22, 600, [3]);
    const expected = referenceActivation(f.content);
    assert.ok(expected !== null && expected < 64 * 1024);
    const reads: Array<[number, number]> = [];
    const r = await findLastActivation(f.path, { onRead: (p, l) => reads.push([p, l]) });
    assert.equal(r.offset, expected);
    assert.ok(reads.length > 60 && reads.every(([, l]) => l <= 64 * 1024));
    assert.ok(r.bytesRead >= f.content.length - expected);
  });

  test('no activation: null after reading everything; the scan then starts at minOffset', async () => {
    const f = await rollout(23, 300, []);
    assert.equal(referenceActivation(f.content), null);
    const r = await findLastActivation(f.path);
    assert.equal(r.offset, null);
    assert.equal(r.bytesRead, f.content.length);
    const s = await scanFromLastActivation(f.path);
    const whole = await scanForMarkers(f.path, 0);
    assert.equal(s.activation, null);
    assert.deepEqual(
      [s.markers, s.goalLines, s.nextOffset, s.truncated],
      [whole.markers, whole.goalLines, whole.nextOffset, false],
    );
    assert.equal(s.bytesRead, 2 * f.content.length);
    assert.ok(s.markers.length > 0 && s.goalLines.length > 0);
  });

  test('scanFromLastActivation reads the activation and what follows it, as a forward scan from there would', async () => {
    for (const [seed, at] of [
      [24, [5, 550]],
      [25, [2]],
    ] as const) {
      const f = await rollout(seed, 600, [...at]);
      const act = referenceActivation(f.content)!;
      const s = await scanFromLastActivation(f.path);
      const fwd = await scanForMarkers(f.path, act);
      assert.equal(s.activation, act);
      assert.deepEqual(s.markers, fwd.markers);
      assert.deepEqual(s.goalLines, fwd.goalLines);
      assert.deepEqual(s.markers, reference(f.content, DEFAULT_MAX_LINE_BYTES, act).markers);
      assert.deepEqual(s.goalLines[0], { by: 'event', status: 'active', offset: act });
      assert.equal(s.nextOffset, f.content.length);
      assert.equal(s.bytesRead, (await findLastActivation(f.path)).bytesRead + fwd.bytesRead);
    }
  });

  test('any chunk size, line cap and position of the chunk boundary gives the reference answer', async () => {
    const act = goalEvent('active');
    const near = [
      goalEvent('paused'),
      modelGoalCall('active'),
      realMarker('paused'),
      JSON.stringify({ type: 'event_msg', payload: { text: 'é€😀'.repeat(7) } }),
    ];
    // The activation, then trailing lines of every length from 0 to 70 bytes: the chunk
    // boundary falls at every position of the activation line.
    for (let n = 0; n <= 70; n++) {
      const tail = n === 0 ? '' : 'z'.repeat(n - 1) + '\n';
      const content = Buffer.from(`${act}\n${near.join('\n')}\n${act}\n${near[0]}\n${tail}`);
      const p = await write(content);
      for (const chunkSize of n % 10 === 0 ? [1, 3, 64, 65536] : [64]) {
        assert.equal(
          (await findLastActivation(p, { chunkSize })).offset,
          referenceActivation(content),
          `tail ${n} chunk ${chunkSize}`,
        );
      }
    }
    // A cap below the activation line's length skips it; at exactly its length it counts.
    const content = Buffer.from(`${act}\n${goalEvent('active', 'x'.repeat(300))}\n${near[1]}\n`);
    const p = await write(content);
    const long = Buffer.byteLength(goalEvent('active', 'x'.repeat(300)));
    for (const chunkSize of [7, 100, 65536]) {
      assert.equal(
        (await findLastActivation(p, { chunkSize, maxLineBytes: long })).offset,
        referenceActivation(content, long),
      );
      assert.equal((await findLastActivation(p, { chunkSize, maxLineBytes: long })).offset, Buffer.byteLength(act) + 1);
      assert.equal((await findLastActivation(p, { chunkSize, maxLineBytes: long - 1 })).offset, 0);
    }
  });

  test('the first line of the file, a partial last line and minOffset', async () => {
    const act = goalEvent('active');
    const noise = noiseLine(rng(26), false, { activations: false });
    const p = await write(`${act}\n${noise}\n`);
    for (const chunkSize of [1, 10, 65536]) assert.equal((await findLastActivation(p, { chunkSize })).offset, 0);
    // An activation still being written (no "\n" yet) does not count until it is complete.
    const q = await write(`${act}\n${noise}\n${act}`);
    const r = await findLastActivation(q);
    assert.equal(r.offset, 0);
    assert.equal(r.nextOffset, Buffer.byteLength(`${act}\n${noise}\n`));
    // Nothing before minOffset is returned, nor read.
    const from = Buffer.byteLength(act) + 1;
    const m = await findLastActivation(p, { minOffset: from });
    assert.deepEqual([m.offset, m.bytesRead], [null, Buffer.byteLength(noise) + 1]);
    await assert.rejects(findLastActivation(p, { minOffset: -1 }), RangeError);
    await assert.rejects(findLastActivation(path.join(dir, 'missing.jsonl')), RolloutReadError);
  });

  test('a 20 MB line between the activation and the end is skipped in constant-size reads', async () => {
    const act = goalEvent('active');
    const big = JSON.stringify({
      type: 'response_item',
      payload: {
        type: 'function_call_output',
        output: '{"type":"event_msg","payload":{"type":"thread_goal_updated","goal":{"status":"active"}}}\n'.repeat(
          220_000,
        ),
      },
    });
    assert.ok(Buffer.byteLength(big) > 20 * 1024 * 1024);
    const head = `${noiseLine(rng(27), false, { activations: false })}\n${act}\n`;
    const p = await write(`${head}${big}\n${realMarker('paused')}\n`);
    let maxRead = 0;
    const r = await findLastActivation(p, { onRead: (_, l) => (maxRead = Math.max(maxRead, l)) });
    assert.equal(r.offset, head.length - act.length - 1);
    assert.ok(maxRead <= 64 * 1024);
    const s = await scanFromLastActivation(p);
    assert.equal(s.activation, r.offset);
    assert.deepEqual(s.markers, [{ status: 'paused', offset: Buffer.byteLength(head) + Buffer.byteLength(big) + 1 }]);
  });
});

// ---------------------------------------------------------------- appends, partial lines, truncation

describe('incremental scanning', () => {
  test('a partial trailing line is not read as a marker until it is complete', async () => {
    const head = noiseLine(rng(5)) + '\n';
    const marker = realMarker('paused');
    const p = await write(head + marker); // no final newline yet
    const headLen = Buffer.byteLength(head);

    const cold = await findLastMarker(p);
    assert.equal(cold.marker, null);
    assert.equal(cold.size, headLen + Buffer.byteLength(marker));
    assert.equal(cold.nextOffset, headLen);

    const first = await scanForMarkers(p, 0);
    assert.deepEqual(first.markers, []);
    assert.equal(first.nextOffset, headLen);

    await fsp.appendFile(p, '\n' + noiseLine(rng(6)) + '\n');
    const second = await scanForMarkers(p, first.nextOffset);
    assert.deepEqual(second.markers, [{ status: 'paused', offset: headLen }]);
    assert.equal(second.truncated, false);
    assert.equal(second.nextOffset, (await fsp.stat(p)).size);
    assert.deepEqual((await findLastMarker(p)).marker, { status: 'paused', offset: headLen });
  });

  test('after appends, only the new bytes are read', async () => {
    const rand = rng(10);
    const initial = Array.from({ length: 200 }, (_, i) => noiseLine(rand, i % 50 === 1)).join('\n') + '\n';
    const p = await write(initial);
    const base = await scanForMarkers(p, 0);
    assert.equal(base.nextOffset, Buffer.byteLength(initial));

    const appended =
      [
        noiseLine(rand),
        realMarker('paused', { objective: 'a' }),
        noiseLine(rand),
        seedMarker('active'),
        noiseLine(rand, true),
      ].join('\n') + '\n';
    await fsp.appendFile(p, appended);
    const reads: Array<[number, number]> = [];
    const r = await scanForMarkers(p, base.nextOffset, { onRead: (pos, len) => reads.push([pos, len]) });
    const all = reference(await fsp.readFile(p)).markers;
    assert.deepEqual(r.markers, all);
    assert.equal(r.markers.length, 2);
    assert.equal(r.last?.status, 'active');
    assert.equal(r.truncated, false);
    // The new bytes, plus the one byte before them that checks the line boundary.
    assert.equal(r.bytesRead, Buffer.byteLength(appended) + 1);
    assert.equal(reads[0][0], base.nextOffset - 1);
    assert.equal(r.nextOffset, base.nextOffset + Buffer.byteLength(appended));

    const again = await scanForMarkers(p, r.nextOffset, { onRead: () => assert.fail('nothing new to read') });
    assert.deepEqual(again.markers, []);
    assert.equal(again.bytesRead, 0);
    assert.equal(again.nextOffset, r.nextOffset);
  });

  test('a truncated file is rescanned from 0 and says so', async () => {
    const p = await write(noiseLine(rng(11)) + '\n' + seedMarker('paused') + '\n' + noiseLine(rng(12), true) + '\n');
    const full = await scanForMarkers(p, 0);
    const replacement = seedMarker('blocked') + '\n';
    await fsp.writeFile(p, replacement);
    const r = await scanForMarkers(p, full.nextOffset);
    assert.equal(r.truncated, true);
    assert.deepEqual(r.markers, [{ status: 'blocked', offset: 0 }]);
    assert.equal(r.nextOffset, Buffer.byteLength(replacement));
  });

  test('a rewritten file whose offset now falls inside a line is rescanned from 0', async () => {
    const first = noiseLine(rng(13)) + '\n';
    const p = await write(first + seedMarker('paused') + '\n');
    const r0 = await scanForMarkers(p, 0);
    await fsp.writeFile(p, 'X' + first + seedMarker('complete') + '\n' + noiseLine(rng(14)) + '\n');
    const r = await scanForMarkers(p, Buffer.byteLength(first));
    assert.equal(r.truncated, true);
    assert.deepEqual(r.markers, [{ status: 'complete', offset: Buffer.byteLength(first) + 1 }]);
    assert.notEqual(r.nextOffset, r0.nextOffset);
  });

  test('empty file, and a file that is one partial line', async () => {
    const e = await write('');
    assert.deepEqual(await findLastMarker(e), { marker: null, size: 0, nextOffset: 0, bytesRead: 0 });
    const es = await scanForMarkers(e, 0);
    assert.deepEqual([es.markers, es.nextOffset, es.truncated], [[], 0, false]);
    const partial = await write(seedMarker('paused'));
    assert.equal((await findLastMarker(partial)).marker, null);
    assert.equal((await findLastMarker(partial)).nextOffset, 0);
    assert.equal((await scanForMarkers(partial, 0)).nextOffset, 0);
  });
});

// ---------------------------------------------------------------- errors

describe('errors', () => {
  test('a missing file rejects with a RolloutReadError naming the path', async () => {
    const p = path.join(dir, 'does-not-exist.jsonl');
    for (const run of [() => findLastMarker(p), () => scanForMarkers(p, 0)]) {
      await assert.rejects(run(), (err: unknown) => {
        assert.ok(err instanceof RolloutReadError);
        assert.equal(err.code, 'ENOENT');
        assert.equal(err.path, p);
        assert.match(err.message, /does-not-exist\.jsonl/);
        return true;
      });
    }
  });

  test('a directory rejects with a RolloutReadError', async () => {
    await assert.rejects(findLastMarker(dir), RolloutReadError);
    await assert.rejects(scanForMarkers(dir, 0), RolloutReadError);
  });

  test('a bad offset or option is a RangeError', async () => {
    const p = await write('\n');
    await assert.rejects(scanForMarkers(p, -1), RangeError);
    await assert.rejects(scanForMarkers(p, 1.5), RangeError);
    await assert.rejects(findLastMarker(p, { chunkSize: 0 }), RangeError);
  });
});
