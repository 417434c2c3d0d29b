import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { promises as fsp } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { JsonFileStore, readStateFile } from '../../src/store/jsonFileStore';
import { parsePersisted, StateSerializer } from '../../src/store/store';
import { makeDirs } from '../../src/util/makeDirs';
import {
  emptyState,
  newWatch,
  STATE_VERSION,
  type PersistedState,
  withHistory,
  withRecovered,
} from '../../src/model/watch';

const posix = process.platform !== 'win32';

let root: string;
before(async () => {
  root = await fsp.mkdtemp(path.join(os.tmpdir(), 'store-test-'));
});
after(async () => {
  await fsp.rm(root, { recursive: true, force: true });
});
let n = 0;
async function freshDir(): Promise<string> {
  const d = path.join(root, `case-${++n}`);
  await fsp.mkdir(d);
  return d;
}

function sampleState(pausedAt: number | null = null): PersistedState {
  const s = emptyState();
  s.pausedAt = pausedAt;
  const w = newWatch('thr_1', 1_700_000_000_000);
  w.title = 'Fix the build';
  w.rolloutPath = '/home/u/.codex/sessions/rollout-1.jsonl';
  w.rolloutOffset = 123_456;
  w.armOffset = 1000;
  w.lastMarker = { status: 'paused', offset: 99_000 };
  w.goal = {
    status: 'blocked',
    objective: 'Keep CI green',
    tokensUsed: 1234,
    tokenBudget: null,
    updatedAt: 1_700_000_000_500,
  };
  w.state = { kind: 'backoff', attempt: 2, failedTurnId: 'turn-9' };
  w.history = withHistory(w.history, {
    at: 1,
    failedTurnId: 'turn-8',
    attempt: 1,
    error: 'internalServerError',
    outcome: 'failed-again',
  });
  w.recovered = withRecovered(w.recovered, 'turn-7');
  s.watches[w.threadId] = w;
  s.disarmed['thr_2'] = 1_700_000_000_100;
  return s;
}

async function listDir(d: string): Promise<string[]> {
  return (await fsp.readdir(d)).sort();
}

describe('parsePersisted', () => {
  test('accepts a current state', () => {
    const s = sampleState(5);
    const r = parsePersisted(JSON.parse(JSON.stringify(s)));
    assert.ok('state' in r);
    assert.deepEqual(r.state, s);
  });

  test('rejects what is not a state, never resetting silently', () => {
    const cases: Array<[unknown, RegExp]> = [
      [null, /not a state object/],
      [[1, 2], /array/],
      ['x', /string/],
      [{ watches: {} }, /no "version"/],
      [{ ...emptyState(), version: '1' }, /not an integer/],
      [{ ...emptyState(), version: STATE_VERSION + 1 }, /newer version/],
      [{ ...emptyState(), version: 0 }, /unknown state version 0/],
      [{ version: 1, pausedAt: null, watches: [{ threadId: 'a' }], disarmed: {} }, /schema: watches: /],
      [{ version: 1, pausedAt: null, watches: {}, disarmed: 7 }, /schema: disarmed: /],
      [{ version: 1, pausedAt: 'yesterday', watches: {}, disarmed: {} }, /pausedAt/],
    ];
    for (const [raw, re] of cases) {
      const r = parsePersisted(raw);
      assert.ok('error' in r, JSON.stringify(raw));
      assert.match(r.error, re);
    }
  });
  test('leaves out a bad watch record (and one filed under another thread id), keeps the rest; a bad disarm time keeps the thread disarmed', () => {
    const good = sampleState();
    const raw = JSON.parse(JSON.stringify(good)) as Record<string, Record<string, unknown>>;
    raw.watches['half'] = { threadId: 'half' };
    raw.watches['other'] = { ...(raw.watches['thr_1'] as object), threadId: 'not-other' };
    raw.disarmed['thr_3'] = null;
    const r = parsePersisted(raw, () => 77);
    assert.ok('state' in r);
    assert.deepEqual(Object.keys(r.state.watches), ['thr_1']);
    assert.deepEqual(r.state.watches['thr_1'], good.watches['thr_1']);
    assert.deepEqual(r.state.disarmed, { thr_2: 1_700_000_000_100, thr_3: 77 });
    assert.equal(r.dropped.length, 3);
    assert.match(r.dropped[0], /^watch "half": title: /);
    assert.equal(r.dropped[1], 'watch "other": its threadId is "not-other"');
    assert.equal(r.dropped[2], 'disarm of "thr_3": its time null is unreadable; the thread stays disarmed');
    const clean = parsePersisted(JSON.parse(JSON.stringify(good)));
    assert.ok('state' in clean);
    assert.deepEqual(clean.dropped, []);
  });
  test('a disarm under "__proto__" (JSON.parse makes it an own key) is said, never lost without a word; the others load', () => {
    const text = JSON.stringify(sampleState()).replace('"disarmed":{', '"disarmed":{"__proto__":5,');
    const raw = JSON.parse(text) as { disarmed: object };
    assert.ok(Object.hasOwn(raw.disarmed, '__proto__'), 'the file holds it as a key');
    const r = parsePersisted(raw);
    assert.ok('state' in r);
    assert.deepEqual(r.dropped, ['the disarm of "__proto__" is not a usable thread id: left out']);
    assert.deepEqual(r.state.disarmed, { thr_2: 1_700_000_000_100 });
    assert.equal(Object.getPrototypeOf(r.state.disarmed), Object.prototype);
  });
});

describe('JsonFileStore', () => {
  test('a missing file loads as the empty state, with no problem and no file created', async () => {
    const d = await freshDir();
    const store = new JsonFileStore(path.join(d, 'state.json'));
    assert.deepEqual(await store.load(), { state: emptyState(), problem: null });
    assert.deepEqual(await listDir(d), []);
    assert.equal(store.location, path.join(d, 'state.json'));
  });

  test('round trip; no temp file left; mode 0600; parent created 0700', async () => {
    const d = await freshDir();
    const file = path.join(d, 'nested', 'deeper', 'state.json');
    const store = new JsonFileStore(file);
    const s = sampleState(42);
    await store.save(s);
    assert.deepEqual(await new JsonFileStore(file).load(), { state: s, problem: null });
    assert.deepEqual(await listDir(path.dirname(file)), ['state.json']);
    if (posix) {
      assert.equal((await fsp.stat(file)).mode & 0o777, 0o600);
      assert.equal((await fsp.stat(path.join(d, 'nested'))).mode & 0o777, 0o700);
      assert.equal((await fsp.stat(path.dirname(file))).mode & 0o777, 0o700);
    }
  });

  test('save captures the state at the time of the call', async () => {
    const file = path.join(await freshDir(), 'state.json');
    const store = new JsonFileStore(file);
    const s = sampleState(1);
    const saving = store.save(s);
    s.pausedAt = 2;
    delete s.watches['thr_1'];
    await saving;
    const loaded = (await store.load()).state;
    assert.equal(loaded.pausedAt, 1);
    assert.ok(loaded.watches['thr_1']);
  });

  test('an existing 0644 file is replaced by a 0600 one', { skip: !posix }, async () => {
    const file = path.join(await freshDir(), 'state.json');
    await fsp.writeFile(file, JSON.stringify(emptyState()), { mode: 0o644 });
    await fsp.chmod(file, 0o644);
    await new JsonFileStore(file).save(sampleState());
    assert.equal((await fsp.stat(file)).mode & 0o777, 0o600);
  });

  const unusable: Array<[string, string, RegExp]> = [
    ['garbage', 'not json at all {', /invalid JSON/],
    ['truncated JSON', JSON.stringify(sampleState()).slice(0, 150), /invalid JSON/],
    ['empty file', '', /empty file/],
    ['foreign JSON', JSON.stringify({ name: 'some-other-tool', settings: [1, 2] }), /no "version"/],
    ['a JSON array', '[1,2,3]', /array/],
    ['a newer version', JSON.stringify({ ...sampleState(), version: STATE_VERSION + 1 }), /newer version/],
    ['a wrong version', JSON.stringify({ ...sampleState(), version: 0 }), /unknown state version/],
    ['a schema mismatch', JSON.stringify({ ...emptyState(), pausedAt: 'yesterday' }), /schema: pausedAt/],
  ];
  for (const [label, content, reason] of unusable) {
    test(`${label}: kept aside, reported, and the store starts clean`, async () => {
      const d = await freshDir();
      const file = path.join(d, 'state.json');
      await fsp.writeFile(file, content);
      const store = new JsonFileStore(file, { now: () => Date.parse('2025-06-01T10:20:30.456Z') });
      const r = await store.load();
      assert.deepEqual(r.state, emptyState());
      const aside = `${file}.corrupt-2025-06-01T10-20-30-456Z`;
      assert.ok(r.problem);
      assert.match(r.problem, reason);
      assert.ok(r.problem.includes(file), r.problem);
      assert.ok(r.problem.includes(aside), r.problem);
      assert.equal(await fsp.readFile(aside, 'utf8'), content, 'the file is kept, unchanged');
      assert.deepEqual(await listDir(d), [path.basename(aside)]);
      // Next load: nothing there, no problem; then a save works.
      assert.deepEqual(await store.load(), { state: emptyState(), problem: null });
      await store.save(sampleState(7));
      assert.equal((await store.load()).state.pausedAt, 7);
    });
  }

  test('a file over the size cap is kept aside without being read', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    const big = JSON.stringify({ ...sampleState(), padding: 'x'.repeat(4096) });
    await fsp.writeFile(file, big);
    const r = await new JsonFileStore(file, { maxBytes: 1024 }).load();
    assert.deepEqual(r.state, emptyState());
    assert.match(r.problem ?? '', /more than the 1024-byte limit/);
    const names = await listDir(d);
    assert.equal(names.length, 1);
    assert.match(names[0], /^state\.json\.corrupt-/);
    assert.equal(await fsp.readFile(path.join(d, names[0]), 'utf8'), big);
  });

  test('two corrupt files in the same millisecond get distinct aside names', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    const store = new JsonFileStore(file, { now: () => 0 });
    await fsp.writeFile(file, 'one');
    const a = await store.load();
    await fsp.writeFile(file, 'two');
    const b = await store.load();
    assert.notEqual(a.problem, b.problem);
    const names = await listDir(d);
    assert.deepEqual(names, [
      'state.json.corrupt-1970-01-01T00-00-00-000Z',
      'state.json.corrupt-1970-01-01T00-00-00-000Z-1',
    ]);
    assert.equal(await fsp.readFile(path.join(d, names[0]), 'utf8'), 'one');
    assert.equal(await fsp.readFile(path.join(d, names[1]), 'utf8'), 'two');
  });

  test('concurrent saves never interleave and end with the last state', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    const store = new JsonFileStore(file);
    const saves: Promise<void>[] = [];
    for (let i = 1; i <= 40; i++) saves.push(store.save(sampleState(i)));
    await Promise.all(saves);
    const r = await new JsonFileStore(file).load();
    assert.equal(r.problem, null);
    assert.deepEqual(r.state, sampleState(40));
    assert.deepEqual(await listDir(d), ['state.json']);

    // Saves from several stores on the same file: still a valid file, one of the states.
    const others = [1, 2, 3].map(() => new JsonFileStore(file));
    await Promise.all(others.flatMap((s, k) => [s.save(sampleState(100 + k)), s.save(sampleState(200 + k))]));
    const after = await new JsonFileStore(file).load();
    assert.equal(after.problem, null);
    assert.ok([200, 201, 202].includes(after.state.pausedAt!));
    assert.deepEqual(await listDir(d), ['state.json']);
  });

  test('a rejected save does not block the next one', async () => {
    const file = path.join(await freshDir(), 'state.json');
    const store = new JsonFileStore(file);
    const bad = { ...emptyState(), pausedAt: 'never' } as unknown as PersistedState;
    await assert.rejects(store.save(bad), /refusing to save an invalid state/);
    await assert.rejects(store.save({ ...emptyState(), pausedAt: Number.NaN }), /invalid state/);
    await store.save(sampleState(3));
    assert.equal((await store.load()).state.pausedAt, 3);
  });

  test('a watch that was valid when last saved is checked again once it changes', async () => {
    const file = path.join(await freshDir(), 'state.json');
    const store = new JsonFileStore(file);
    const s = sampleState(1);
    await store.save(s);
    const w = s.watches['thr_1'];
    w.failures = -1;
    await assert.rejects(store.save(s), /refusing to save an invalid state.*watches\.thr_1\.failures/);
    w.failures = 2;
    s.watches['thr_3'] = {
      ...structuredClone(w),
      threadId: 'thr_3',
      state: { kind: 'nonsense' },
    } as unknown as PersistedState['watches'][string];
    await assert.rejects(store.save(s), /watches\.thr_3\.state/);
    delete s.watches['thr_3'];
    await store.save(s);
    const loaded = await new JsonFileStore(file).load();
    assert.equal(loaded.problem, null);
    assert.deepEqual(loaded.state, s);
  });

  test('a save that cannot write rejects with a message naming the path', async () => {
    const d = await freshDir();
    await fsp.writeFile(path.join(d, 'blocker'), 'a file where a directory should be');
    const file = path.join(d, 'blocker', 'state.json');
    const store = new JsonFileStore(file);
    await assert.rejects(
      store.save(sampleState()),
      (err: unknown) => err instanceof Error && err.message.includes(file),
    );
    // The queue is not stuck: a later save to a good path on another store still works.
    const ok = new JsonFileStore(path.join(d, 'ok.json'));
    await ok.save(sampleState(9));
    assert.equal((await ok.load()).state.pausedAt, 9);
  });

  test('temp files left by a crashed writer are ignored and cleaned', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    const store = new JsonFileStore(file);
    await store.save(sampleState(5));
    const deadPid = 2 ** 22 + 12345; // above Linux pid_max: no such process
    const leftover = `${file}.tmp-${deadPid}-1-abc`;
    await fsp.writeFile(leftover, '{"half": ');
    const live = `${file}.tmp-${process.pid}-999-xyz`; // ours, fresh: may be in flight, left alone
    await fsp.writeFile(live, '{');
    const r = await store.load();
    assert.equal(r.problem, null);
    assert.equal(r.state.pausedAt, 5);
    assert.deepEqual(await listDir(d), [path.basename(file), path.basename(live)]);
  });

  test('a directory at the state path is moved aside, whole, and the load starts clean', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    await fsp.mkdir(file);
    await fsp.writeFile(path.join(file, 'inside'), 'kept');
    const r = await new JsonFileStore(file, { now: () => 0 }).load();
    assert.deepEqual(r.state, emptyState());
    assert.equal(
      r.problem,
      `state file ${file} was unusable (a directory, not a file); kept aside as ${file}.corrupt-1970-01-01T00-00-00-000Z; starting clean`,
    );
    assert.equal(await fsp.readFile(path.join(`${file}.corrupt-1970-01-01T00-00-00-000Z`, 'inside'), 'utf8'), 'kept');
  });

  test('a file with a bad record: the rest loads, the file as it was is copied aside, the good part written back', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    const raw = JSON.parse(JSON.stringify(sampleState(3))) as { watches: Record<string, unknown> };
    raw.watches['bad'] = { threadId: 'bad', state: { kind: 'nope' } };
    const content = JSON.stringify(raw);
    await fsp.writeFile(file, content);
    const r = await new JsonFileStore(file, { now: () => 0 }).load();
    assert.deepEqual(r.state, sampleState(3));
    const aside = `${file}.corrupt-1970-01-01T00-00-00-000Z`;
    assert.match(
      r.problem ?? '',
      new RegExp(
        `^state file ${file}: 1 record could not be used \\(watch "bad": .*\\); the file as it was is kept as ${aside}; the other 1 watch loaded$`,
      ),
    );
    assert.equal(await fsp.readFile(aside, 'utf8'), content);
    assert.deepEqual(await new JsonFileStore(file).load(), { state: sampleState(3), problem: null });
    assert.deepEqual(await listDir(d), ['state.json', path.basename(aside)]);
  });
});

describe('JsonFileStore: the crash journal', () => {
  /** A state of `n` watches like sampleState's, ids w0…w(n-1). */
  function manyWatches(n: number): PersistedState {
    const s = emptyState();
    const template = sampleState().watches['thr_1'];
    for (let i = 0; i < n; i++) s.watches[`w${i}`] = { ...structuredClone(template), threadId: `w${i}` };
    return s;
  }

  test('a save after the first appends only what changed, fdatasynced; a store dropped without compact (a crash) loads it back, then folds the journal', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    const store = new JsonFileStore(file);
    const s = manyWatches(200);
    await store.save(s); // the first save writes a snapshot
    const snapshotBytes = (await fsp.stat(file)).size;
    s.watches['w7'].failures = 3;
    s.watches['w7'].state = { kind: 'backoff', attempt: 3, failedTurnId: 'turn-x' };
    await store.save(s, new Set(['w7']));
    delete s.watches['w8'];
    s.pausedAt = 9;
    await store.save(s, new Set(['w8']));
    assert.equal((await fsp.stat(file)).size, snapshotBytes, 'the snapshot was rewritten');
    const journal = await fsp.readFile(`${file}.journal`, 'utf8');
    const lines = journal.trimEnd().split('\n');
    assert.equal(lines.length, 4, 'a header and one record per change');
    assert.ok(journal.length < 2_000, `the journal holds more than the changes: ${journal.length} bytes`);
    if (posix) assert.equal((await fsp.stat(`${file}.journal`)).mode & 0o777, 0o600);
    // The crash: the store is dropped, never compacted. What status and a new store read:
    const read = await readStateFile(file);
    assert.ok(read.kind === 'state');
    assert.deepEqual(read.state, s);
    const again = new JsonFileStore(file);
    assert.deepEqual(await again.load(), { state: s, problem: null });
    assert.deepEqual(await listDir(d), ['state.json'], 'the replayed journal was not folded into the snapshot');
    assert.deepEqual(await new JsonFileStore(file).load(), { state: s, problem: null });
  });

  test('a torn last record (a crash in the middle of an append) is ignored, silently: its save never resolved', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    const store = new JsonFileStore(file);
    const s = sampleState(1);
    await store.save(s);
    s.pausedAt = 2;
    await store.save(s);
    await fsp.appendFile(`${file}.journal`, '{"top":{"pausedAt":3,"disa');
    assert.deepEqual(await new JsonFileStore(file).load(), { state: s, problem: null });
    // Folded: a later append never follows the torn bytes.
    assert.deepEqual(await listDir(d), ['state.json']);
  });

  test('a journal of another generation (a crash after its snapshot was written, before it was removed) is not replayed', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    const store = new JsonFileStore(file);
    const s = sampleState(1);
    await store.save(s);
    await fsp.writeFile(
      `${file}.journal`,
      `{"journal":1,"generation":"older"}\n{"top":{"pausedAt":77,"disarmed":{}}}\n`,
    );
    assert.deepEqual(await new JsonFileStore(file).load(), { state: s, problem: null });
    assert.deepEqual(await listDir(d), ['state.json']);
  });

  test('a bad record is reported and the journal kept aside; the other records load', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    const store = new JsonFileStore(file, { now: () => 0 });
    const s = sampleState(null);
    await store.save(s);
    s.pausedAt = 4;
    await store.save(s);
    const good = await fsp.readFile(`${file}.journal`, 'utf8');
    const w = structuredClone(s.watches['thr_1']);
    w.failures = 2;
    const content = `${good}{"watch":{"threadId":"thr_1","state":{"kind":"nope"}}}\nnot json at all\n{"watch":${JSON.stringify(w)}}\n`;
    await fsp.writeFile(`${file}.journal`, content);
    const r = await new JsonFileStore(file, { now: () => 0 }).load();
    const aside = `${file}.journal.corrupt-1970-01-01T00-00-00-000Z`;
    assert.equal(r.state.pausedAt, 4);
    assert.equal(r.state.watches['thr_1'].failures, 2, 'the good record after the bad ones was not applied');
    assert.match(
      r.problem ?? '',
      new RegExp(
        `^journal ${file}\\.journal: 2 records could not be used \\(journal record 2: watch "thr_1": .*; journal record 3: not JSON \\(not json at all\\)\\); the journal as it was is kept as ${aside.replace(/\./g, '\\.')}; its other 2 records loaded$`,
      ),
    );
    assert.equal(await fsp.readFile(aside, 'utf8'), content);
    assert.deepEqual(await new JsonFileStore(file).load(), { state: r.state, problem: null });
  });

  test('an unusable journal (a directory) is moved aside, reported, and the snapshot loads', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    await new JsonFileStore(file).save(sampleState(1));
    await fsp.mkdir(`${file}.journal`);
    const r = await new JsonFileStore(file, { now: () => 0 }).load();
    assert.deepEqual(r.state, sampleState(1));
    assert.equal(
      r.problem,
      `journal ${file}.journal was unusable (not a regular file); kept aside as ${file}.journal.corrupt-1970-01-01T00-00-00-000Z; the state file loaded without the changes it held`,
    );
  });

  test('a journal with no state file beside it is kept aside, never replayed onto nothing', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    await fsp.writeFile(`${file}.journal`, '{"journal":1,"generation":"g"}\n{"top":{"pausedAt":1,"disarmed":{}}}\n');
    const r = await new JsonFileStore(file, { now: () => 0 }).load();
    assert.deepEqual(r.state, emptyState());
    assert.equal(
      r.problem,
      `journal ${file}.journal had no state file beside it; kept aside as ${file}.journal.corrupt-1970-01-01T00-00-00-000Z; starting clean`,
    );
  });

  test('the journal is folded into a new snapshot once it outgrows it; compact folds it at once', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    const store = new JsonFileStore(file, { minFoldBytes: 4_096 });
    const s = manyWatches(3);
    await store.save(s);
    let largest = 0;
    for (let i = 0; i < 200; i++) {
      s.watches[`w${i % 3}`].failures = i;
      await store.save(s, new Set([`w${i % 3}`]));
      const size = await fsp.stat(`${file}.journal`).then(
        (st) => st.size,
        () => 0,
      );
      largest = Math.max(largest, size);
    }
    assert.ok(largest <= 4_096 + 2_000, `the journal grew to ${largest} bytes`);
    assert.deepEqual((await new JsonFileStore(file).load()).state, s);
    s.pausedAt = 1;
    await store.save(s);
    await store.compact();
    assert.deepEqual(await listDir(d), ['state.json']);
    assert.deepEqual(JSON.parse(await fsp.readFile(file, 'utf8')).pausedAt, 1);
  });

  test('a snapshot from before the journal existed loads, and gets a journal generation', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    await fsp.writeFile(file, JSON.stringify(sampleState(5)));
    const store = new JsonFileStore(file);
    assert.deepEqual(await store.load(), { state: sampleState(5), problem: null });
    assert.equal(typeof JSON.parse(await fsp.readFile(file, 'utf8')).journal, 'string');
    const s = sampleState(6);
    await store.save(s);
    assert.deepEqual((await new JsonFileStore(file).load()).state, s);
  });
});

describe('JsonFileStore: messages', () => {
  test('invalid JSON is reported on one printable line, whatever bytes the parser quotes from the file', async () => {
    const d = await freshDir();
    const file = path.join(d, 'state.json');
    await fsp.writeFile(file, Buffer.from('{"version":\n\n\u0001\u0000 binary\r\ngarbage'));
    const r = await new JsonFileStore(file, { now: () => 0 }).load();
    assert.ok(r.problem);
    assert.match(r.problem, /invalid JSON: /);
    // eslint-disable-next-line no-control-regex -- control characters are what the test looks for
    assert.ok(!/[\u0000-\u001f\u007f]/.test(r.problem), `control characters in: ${JSON.stringify(r.problem)}`);
  });
});

describe('the state directory made one level at a time (src/util/makeDirs.ts)', () => {
  test('a directory that cannot be made fails the save at once (recursive mkdir never settles under /proc)', async () => {
    const store = new JsonFileStore('/proc/1/codex-goal-recovery-test/state.json');
    const outcome = await Promise.race([
      store.save(emptyState()).then(
        () => 'saved',
        (e: unknown) => `failed: ${(e as Error).message}`,
      ),
      new Promise<string>((resolve) => setTimeout(() => resolve('still pending after 5 s'), 5000).unref()),
    ]);
    assert.match(outcome, /^failed: .*\/proc\/1\/codex-goal-recovery-test/);
  });

  test('missing parents are made, private; what is there already is left as it is', async () => {
    const root = await fsp.mkdtemp(path.join(os.tmpdir(), 'cgr-mkdirs-'));
    try {
      const deep = path.join(root, 'a', 'b', 'c');
      assert.equal(await makeDirs(deep, 0o700), path.join(root, 'a'));
      assert.equal((await fsp.stat(deep)).mode & 0o777, 0o700 & ~process.umask());
      assert.equal(await makeDirs(deep, 0o700), undefined);
      await fsp.writeFile(path.join(root, 'file'), '');
      await assert.rejects(makeDirs(path.join(root, 'file', 'x'), 0o700), /not a directory/);
    } finally {
      await fsp.rm(root, { recursive: true, force: true });
    }
  });
});

describe('the serializer: what it keeps of each watch', () => {
  const watched = (): PersistedState => {
    const s = sampleState();
    const w = newWatch('thr_3', 1_700_000_000_000);
    s.watches[w.threadId] = w;
    return s;
  };

  test('by fingerprint: a watch loaded and not saved since is written when a save looks at it; an unchanged one after its save is not', () => {
    const state = watched();
    const ser = new StateSerializer();
    ser.loaded(state);
    // Loaded: nothing known of it but that it is there; a save that is told of it writes it.
    assert.deepEqual(
      ser.changes(state, new Set(['thr_1'])).watches.map(([id]) => id),
      ['thr_1'],
    );
    // Saved: the same watch again is unchanged.
    assert.deepEqual(ser.changes(state, new Set(['thr_1'])).watches, []);
    // A change of one field, however small, is seen.
    state.watches.thr_1.rolloutOffset += 1;
    assert.deepEqual(
      ser.changes(state, new Set(['thr_1'])).watches.map(([id]) => id),
      ['thr_1'],
    );
    // Gone since the load: a removal, even though it was never saved through this serializer.
    delete state.watches.thr_3;
    assert.deepEqual(ser.changes(state, new Set(['thr_3'])).removed, ['thr_3']);
  });

  test('by fingerprint: a document is the state as it is now, and refuses a watch changed since its save that would not load back', () => {
    const state = watched();
    const ser = new StateSerializer();
    ser.changes(state);
    state.watches.thr_1.title = 'renamed after the save';
    const doc = JSON.parse(ser.document(STATE_VERSION)) as PersistedState;
    assert.equal(doc.watches.thr_1.title, 'renamed after the save');
    const parsed = parsePersisted(doc);
    assert.ok('state' in parsed && parsed.dropped.length === 0, 'the document does not load back whole');
    (state.watches.thr_1 as { failures: unknown }).failures = 'many';
    assert.throws(() => ser.document(STATE_VERSION), /watches\.thr_1\.failures/);
  });

  test('keepJson: a document is the state as the last save took it in, whatever changed since', () => {
    const state = watched();
    const ser = new StateSerializer({ keepJson: true });
    ser.changes(state);
    state.watches.thr_1.title = 'renamed after the save';
    const doc = JSON.parse(ser.document(STATE_VERSION)) as PersistedState;
    assert.equal(doc.watches.thr_1.title, 'Fix the build');
  });
});
