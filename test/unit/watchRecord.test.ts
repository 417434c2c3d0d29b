// The stored form of a watch (src/store/watchRecord.ts): the fields that hold their schema
// default are left out, and a record read back is made whole before it is checked. What a load
// accepts and returns must be exactly what zod makes of the same record: checked on the shapes the
// engine writes, on thousands of random corruptions of stored records, on a version-1 document
// (every field written), and through the runner's file store and its journal.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import * as zm from 'zod/mini';
import { emptyState, newWatch, STATE_VERSION, WatchedThreadSchema } from '../../src/model/watch';
import { JsonFileStore } from '../../src/store/jsonFileStore';
import { parsePersisted, parseWatch } from '../../src/store/store';
import {
  keyedRecord,
  leftOutProto,
  recordFields,
  storedWatch,
  wholeWatch,
  withThreadId,
} from '../../src/store/watchRecord';
import { rng } from '../support/random';
import { corrupt, samples } from '../support/watchSamples';

test('a new watch is written without its null, zero and empty fields', () => {
  const w = newWatch('t', 5);
  assert.equal(storedWatch(w), '{"threadId":"t","title":"t","armedAt":5,"state":{"kind":"running"},"updatedAt":5}');
});

test('every shape the engine writes reads back equal, with every field in the schema’s order', () => {
  const order = recordFields(WatchedThreadSchema).map((f) => f.key);
  for (const w of samples()) {
    const record = JSON.parse(storedWatch(w)) as { state: unknown };
    const back = parseWatch(record, true);
    assert.ok(back.success, w.threadId);
    assert.equal(back.data.state, record.state, 'taken by the faster path (zod would have copied it)');
    assert.deepEqual(back.data, w);
    assert.deepEqual(Object.keys(back.data), order, w.threadId);
    // zod, given the same stored record, fills in the same defaults.
    const z = WatchedThreadSchema.safeParse(JSON.parse(storedWatch(w)));
    assert.ok(z.success);
    assert.deepEqual(z.data, w);
  }
});

test('a field at a value other than its default is written: 0 where null is the default, a non-empty list', () => {
  const w = newWatch('t', 5);
  w.armOffset = 0;
  w.recovered = ['turn-1'];
  const record = JSON.parse(storedWatch(w)) as Record<string, unknown>;
  assert.equal(record.armOffset, 0);
  assert.deepEqual(record.recovered, ['turn-1']);
  assert.equal('rolloutOffset' in record, false);
});

test('a record made whole shares the one frozen empty list, and a loaded watch’s list is never changed in place', () => {
  const a = wholeWatch({ threadId: 'a' }) as { recovered: string[]; history: unknown[] };
  const b = wholeWatch({ threadId: 'b' }) as { recovered: string[] };
  assert.equal(a.recovered, b.recovered);
  assert.ok(Object.isFrozen(a.recovered) && Object.isFrozen(a.history));
  assert.throws(() => a.recovered.push('x'));
});

test('on random corruptions of stored records, a load accepts exactly what zod accepts, and returns what zod returns', () => {
  const random = rng(2026);
  let accepted = 0;
  let rejected = 0;
  // As a journal holds them (with their thread id), and as a document does (keyed by it).
  const journal = samples().map((w) => JSON.parse(storedWatch(w)) as unknown);
  const keyed = samples().map((w) => JSON.parse(`{${keyedRecord(w.threadId, storedWatch(w))}}`) as unknown);
  for (let i = 0; i < 6_000; i++) {
    const inDocument = i % 2 === 1;
    const key = inDocument ? 't-key' : undefined;
    let v: unknown = inDocument ? Object.values(keyed[i % keyed.length] as object)[0] : journal[i % journal.length];
    for (let k = 1 + Math.floor(random() * 2); k > 0; k--) v = corrupt(v, random);
    const ours = parseWatch(structuredClone(v), true, key);
    const z = WatchedThreadSchema.safeParse(
      key === undefined ? structuredClone(v) : withThreadId(structuredClone(v), key),
    );
    assert.equal(ours.success, z.success, JSON.stringify(v));
    if (ours.success && z.success) {
      accepted += 1;
      assert.deepEqual(ours.data, z.data, JSON.stringify(v));
    } else rejected += 1;
  }
  assert.ok(accepted > 500, `${accepted} accepted`);
  assert.ok(rejected > 1_000, `${rejected} rejected`);
});

test('a field the schema requires is still required: a record without its title or state is left out, with zod’s message', () => {
  const record = JSON.parse(storedWatch(newWatch('t', 5))) as Record<string, unknown>;
  for (const key of ['title', 'state', 'armedAt', 'updatedAt']) {
    const r = { ...record };
    delete r[key];
    const parsed = parsePersisted(
      { version: STATE_VERSION, pausedAt: null, watches: { t: r }, disarmed: {} },
      Date.now,
      true,
    );
    assert.ok(!('error' in parsed));
    assert.deepEqual(Object.keys(parsed.state.watches), [], key);
    assert.match(parsed.dropped[0] ?? '', new RegExp(`watch "t": ${key}: Invalid input`), key);
  }
});

test('a version-1 document (every field written) loads as it was', () => {
  const whole = samples();
  const doc = {
    version: 1,
    pausedAt: 3,
    watches: Object.fromEntries(whole.map((w) => [w.threadId, JSON.parse(JSON.stringify(w)) as unknown])),
    disarmed: { x: 4 },
  };
  for (const owned of [true, false]) {
    const parsed = parsePersisted(structuredClone(doc), Date.now, owned);
    assert.ok(!('error' in parsed));
    assert.deepEqual(parsed.dropped, []);
    assert.equal(parsed.state.version, STATE_VERSION);
    assert.deepEqual(Object.values(parsed.state.watches), whole);
  }
});

test('the runner’s file store writes stored records to its snapshot and its journal, and reads both back whole', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-record-'));
  try {
    const file = path.join(dir, 'state.json');
    const state = emptyState();
    for (const w of samples()) state.watches[w.threadId] = w;
    const store = new JsonFileStore(file);
    await store.load();
    await store.save(state); // the first save: a snapshot
    const changed = structuredClone(state.watches['t-fresh']);
    changed.failures = 2;
    state.watches['t-fresh'] = changed;
    await store.save(state, new Set(['t-fresh'])); // a journal record
    const snapshot = JSON.parse(fs.readFileSync(file, 'utf8')) as { version: number; watches: Record<string, object> };
    assert.equal(snapshot.version, STATE_VERSION);
    // In the snapshot, keyed by its thread id, a record leaves the id out; a journal record keeps it.
    assert.deepEqual(Object.keys(snapshot.watches['t-fresh']), ['title', 'armedAt', 'state', 'updatedAt']);
    const journal = fs.readFileSync(`${file}.journal`, 'utf8').trim().split('\n');
    assert.deepEqual(JSON.parse(journal[1]), { watch: { ...JSON.parse(storedWatch(changed)) } });
    // A crash: the store is dropped without compact; the next one replays the journal.
    const loaded = await new JsonFileStore(file).load();
    assert.equal(loaded.problem, null);
    assert.deepEqual(loaded.state, state);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a document keys each record by its thread id: the record leaves it out, and reads back with it', () => {
  const w = samples()[2];
  const entry = keyedRecord(w.threadId, storedWatch(w));
  assert.ok(entry.startsWith(`"${w.threadId}":{"title":`), entry);
  const doc = JSON.parse(`{"version":${STATE_VERSION},"pausedAt":null,"watches":{${entry}},"disarmed":{}}`) as unknown;
  for (const owned of [true, false]) {
    const parsed = parsePersisted(structuredClone(doc), Date.now, owned);
    assert.ok(!('error' in parsed));
    assert.deepEqual(parsed.dropped, []);
    assert.deepEqual(parsed.state.watches[w.threadId], w, owned ? 'the faster path' : 'zod');
  }
  // A record that names another thread than its key is still left out.
  const stray = {
    version: STATE_VERSION,
    pausedAt: null,
    watches: { a: { threadId: 'b', title: 'b', armedAt: 1, state: { kind: 'running' }, updatedAt: 1 } },
    disarmed: {},
  };
  for (const owned of [true, false]) {
    const parsed = parsePersisted(structuredClone(stray), Date.now, owned);
    assert.ok(!('error' in parsed));
    assert.deepEqual(Object.keys(parsed.state.watches), []);
    assert.match(parsed.dropped[0] ?? '', /watch "a": its threadId is "b"/);
  }
  // A watch whose JSON does not start with its own id is written as it is (the load then says so).
  assert.equal(keyedRecord('a', '{"threadId":"b","title":"x"}'), '"a":{"threadId":"b","title":"x"}');
});

test('a default the record form cannot leave out is refused when the form is made', () => {
  assert.throws(
    () => recordFields(zm.object({ a: zm._default(zm.string(), 'x') })),
    /the default of a \("x"\) is not one a record leaves out/,
  );
  assert.throws(() => recordFields(zm.string()), /a watch record is an object schema/);
});

test('the defaults a record leaves out are null, 0 and [] only: an empty text or a non-empty list is refused', () => {
  for (const value of ['', ['x']]) {
    assert.throws(
      () => recordFields(zm.object({ a: zm._default(zm.unknown(), value) })),
      /the default of a \(.*\) is not one a record leaves out/,
    );
  }
  assert.deepEqual(
    recordFields(zm.object({ n: zm._default(zm.unknown(), null), z: zm._default(zm.unknown(), 0), s: zm.string() })),
    [
      { key: 'n', leftOut: { value: null } },
      { key: 'z', leftOut: { value: 0 } },
      { key: 's', leftOut: null },
    ],
  );
});

test('a record made whole takes its thread id from its key when it has none, and keeps its own otherwise', () => {
  const record = JSON.parse(storedWatch(newWatch('own', 5))) as Record<string, unknown>;
  assert.equal((wholeWatch(record, 'key') as { threadId: string }).threadId, 'own');
  delete record.threadId;
  assert.equal((wholeWatch(record, 'key') as { threadId: string }).threadId, 'key');
  assert.equal((wholeWatch(record) as { threadId?: string }).threadId, undefined);
});

test('anything but a plain object is given to the check as it is, to say what it is', () => {
  const list = [{ threadId: 't' }];
  for (const value of [null, undefined, 5, 'text', list]) {
    assert.equal(wholeWatch(value, 'k'), value);
    assert.equal(withThreadId(value, 'k'), value);
  }
});

test('a record keyed by its thread id gets that id when it has none, and keeps its own otherwise', () => {
  assert.deepEqual(withThreadId({ title: 'x' }, 'k'), { threadId: 'k', title: 'x' });
  assert.deepEqual(withThreadId({ title: 'x', threadId: 'own' }, 'k'), { threadId: 'own', title: 'x' });
});

test('a record of disarms holds "__proto__" only as its own key, as JSON.parse makes it; nothing else does', () => {
  assert.equal(leftOutProto(JSON.parse('{"__proto__":1,"a":2}')), true);
  assert.equal(leftOutProto(JSON.parse('{"a":2}')), false);
  assert.equal(leftOutProto({}), false, 'inherited, not its own');
  for (const notRecord of [null, undefined, 5, '__proto__', true]) assert.equal(leftOutProto(notRecord), false);
});
