import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { emptyState, newWatch, STATE_VERSION } from '../../src/model/watch';
import { CORRUPT_PREFIX, GlobalStateStore, JOURNAL_FILE, STATE_KEY } from '../../src/store/globalStateStore';
import { parsePersisted } from '../../src/store/store';
import { Memento } from '../support/memento';

describe('globalState store', () => {
  it('round-trips the state under its versioned key', async () => {
    const m = new Memento();
    const store = new GlobalStateStore(m);
    assert.deepEqual(await store.load(), { state: emptyState(), problem: null });
    const s = emptyState();
    s.watches['t'] = newWatch('t', 5);
    s.disarmed['u'] = 7;
    await store.save(s);
    s.pausedAt = 99; // later changes are not saved
    assert.equal(m.get<{ version: number }>(STATE_KEY)?.version, STATE_VERSION);
    const loaded = await new GlobalStateStore(m).load();
    assert.equal(loaded.problem, null);
    assert.equal(loaded.state.pausedAt, null);
    assert.deepEqual(Object.keys(loaded.state.watches), ['t']);
    assert.equal(loaded.state.disarmed['u'], 7);
  });

  for (const [name, value] of [
    ['a foreign value', 'hello'],
    ['a wrong shape', { version: 1, watches: 3 }],
    ['a newer version', { version: 99, watches: {} }],
    ['a document of the wrong shape', { version: 1, pausedAt: null, disarmed: {}, watches: [{ threadId: 't' }] }],
    ['a huge value', { version: 1, blob: 'x'.repeat(17 * 1024 * 1024) }],
  ] as const) {
    it(`keeps ${name} aside, reports it and starts clean`, async () => {
      const m = new Memento();
      await m.update(STATE_KEY, value);
      const store = new GlobalStateStore(m, () => Date.UTC(2026, 10, 30));
      const r = await store.load();
      assert.deepEqual(r.state, emptyState());
      assert.match(
        r.problem ?? '',
        /could not be used: .+; kept aside as "codexGoalRecovery\.state\.corrupt\.2026-11-30T00:00:00\.000Z"; starting clean/,
      );
      const aside = m.keys().filter((k) => k.startsWith(CORRUPT_PREFIX));
      assert.equal(aside.length, 1);
      assert.deepEqual(m.get(aside[0]), JSON.parse(JSON.stringify(value)), 'the bad value was not kept');
      assert.equal(m.get(STATE_KEY), undefined);
    });
  }

  it('keeps a value with a bad watch record aside, uses the rest, and stores the part it uses', async () => {
    const m = new Memento();
    const good = newWatch('good', 5);
    const value = { version: 1, pausedAt: null, disarmed: { d: 'soon' }, watches: { good, bad: { threadId: 'bad' } } };
    await m.update(STATE_KEY, value);
    const r = await new GlobalStateStore(m, () => 42).load();
    assert.deepEqual(Object.keys(r.state.watches), ['good']);
    assert.deepEqual(r.state.disarmed, { d: 42 }, 'a disarm with a bad time stays a disarm');
    assert.match(
      r.problem ?? '',
      /^the stored watch state: 2 records could not be used \(watch "bad": title: .*; disarm of "d": its time "soon" is unreadable; the thread stays disarmed\); the value as it was is kept as "codexGoalRecovery\.state\.corrupt\.1970-01-01T00:00:00\.042Z"; the other 1 watch loaded$/,
    );
    assert.deepEqual(
      m.get('codexGoalRecovery.state.corrupt.1970-01-01T00:00:00.042Z'),
      JSON.parse(JSON.stringify(value)),
    );
    // What it stores: each watch without the fields that hold their default, nor its thread id,
    // which its key says (src/store/watchRecord.ts).
    assert.deepEqual(m.get(STATE_KEY), {
      version: STATE_VERSION,
      pausedAt: null,
      watches: { good: { title: 'good', armedAt: 5, state: { kind: 'running' }, updatedAt: 5 } },
      disarmed: { d: 42 },
    });
    assert.deepEqual(await new GlobalStateStore(m).load(), { state: r.state, problem: null });
  });

  it('two bad values in the same millisecond are kept under two keys', async () => {
    const m = new Memento();
    const store = new GlobalStateStore(m, () => 0);
    await m.update(STATE_KEY, 'one');
    await store.load();
    await m.update(STATE_KEY, 'two');
    await store.load();
    assert.deepEqual(
      m
        .keys()
        .filter((k) => k.startsWith(CORRUPT_PREFIX))
        .sort()
        .map((k) => [k, m.get(k)]),
      [
        [`${CORRUPT_PREFIX}1970-01-01T00:00:00.000Z`, 'one'],
        [`${CORRUPT_PREFIX}1970-01-01T00:00:00.000Z-1`, 'two'],
      ],
    );
  });
});

// The crash journal beside globalState (docs/globalstate-durability.md). globalState's own
// `update` resolves once the workbench holds the value in memory; what a crash of the whole window
// keeps is what the workbench had written by then: `flushedCopy` stands for that.
describe('globalState store with a crash journal', () => {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });
  const journalIn = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-gs-journal-'));
    dirs.push(dir);
    return path.join(dir, 'globalStorage', 'codex-goal-recovery.codex-goal-recovery', JOURNAL_FILE);
  };
  /** What the workbench had written to disk at this moment. */
  const flushedCopy = (m: Memento): Memento => {
    const copy = new Memento();
    for (const [k, v] of m.data) copy.data.set(k, structuredClone(v));
    return copy;
  };
  const watchIn = (id: string, kind: 'running' | 'backoff', at: number) => {
    const w = newWatch(id, at);
    if (kind === 'backoff') {
      w.failures = 1;
      w.state = { kind: 'backoff', attempt: 1, failedTurnId: `turn-${at}` };
    }
    w.updatedAt = at;
    return w;
  };
  const stateWith = (...watches: ReturnType<typeof newWatch>[]) => {
    const s = emptyState();
    for (const w of watches) s.watches[w.threadId] = w;
    return s;
  };
  const generationOf = (m: Memento) => m.get<{ journal?: string }>(STATE_KEY)?.journal;

  it('replays the journal after a crash (a store dropped without compact) when globalState lost its last writes', async () => {
    const journal = journalIn();
    const m = new Memento();
    const store = new GlobalStateStore(m, { journalPath: journal });
    await store.load();
    await store.save(stateWith(watchIn('a', 'running', 1)));
    const disk = flushedCopy(m); // the workbench wrote this much, then the window crashed
    const last = stateWith(watchIn('a', 'backoff', 2), watchIn('b', 'running', 3));
    last.pausedAt = 4;
    last.disarmed['c'] = 5;
    await store.save(last);
    // (no compact: the extension host and the window are gone)
    const lines: string[] = [];
    const loaded = await new GlobalStateStore(disk, { journalPath: journal, info: (l) => lines.push(l) }).load();
    assert.equal(loaded.problem, null);
    assert.deepEqual(loaded.state, last, 'the last saved state');
    assert.match(lines.join('\n'), /state loaded from globalState: 2 watches; crash journal: 4 records replayed/);
    // Written back with a new generation, and the journal starts again empty.
    assert.deepEqual(parsePersisted(disk.get(STATE_KEY)), { state: last, dropped: [] });
    assert.notEqual(generationOf(disk), generationOf(m));
    assert.equal(fs.existsSync(journal), false, 'the journal was folded');
  });

  it('keeps the journal private: the file 0600, its directory 0700', async () => {
    const journal = journalIn();
    const store = new GlobalStateStore(new Memento(), { journalPath: journal });
    await store.load();
    const old = process.umask(0o022);
    try {
      await store.save(stateWith(watchIn('a', 'running', 1)));
    } finally {
      process.umask(old);
    }
    assert.equal(fs.statSync(journal).mode & 0o777, 0o600);
    assert.equal(fs.statSync(path.dirname(journal)).mode & 0o777, 0o700);
  });

  it('ignores a torn last record (its save never resolved)', async () => {
    const journal = journalIn();
    const m = new Memento();
    const store = new GlobalStateStore(m, { journalPath: journal });
    await store.load();
    const saved = stateWith(watchIn('a', 'backoff', 2));
    await store.save(stateWith(watchIn('a', 'running', 1)));
    const disk = flushedCopy(m);
    await store.save(saved);
    fs.appendFileSync(journal, '{"watch":{"threadId":"a","tit'); // cut short by the crash
    const loaded = await new GlobalStateStore(disk, { journalPath: journal }).load();
    assert.equal(loaded.problem, null, 'a torn tail is not a problem');
    assert.deepEqual(loaded.state, saved);
  });

  it('does not replay a journal of another generation (already folded into the snapshot)', async () => {
    const journal = journalIn();
    const m = new Memento();
    const store = new GlobalStateStore(m, { journalPath: journal });
    await store.load();
    await store.save(stateWith(watchIn('a', 'running', 1)));
    // A journal whose header names another snapshot, with a record that must not come back.
    fs.writeFileSync(
      journal,
      `${JSON.stringify({ journal: 1, generation: 'not-this-one' })}\n${JSON.stringify({ watch: watchIn('ghost', 'backoff', 9) })}\n`,
    );
    const loaded = await new GlobalStateStore(flushedCopy(m), { journalPath: journal }).load();
    assert.equal(loaded.problem, null);
    assert.deepEqual(Object.keys(loaded.state.watches), ['a']);
    assert.equal(loaded.state.watches['a'].state.kind, 'running');
  });

  it('reports a bad record, keeps the journal as it was aside, and loads the other records', async () => {
    const journal = journalIn();
    const m = new Memento();
    const store = new GlobalStateStore(m, { journalPath: journal, now: () => Date.UTC(2026, 11, 1) });
    await store.load();
    await store.save(stateWith(watchIn('a', 'running', 1)));
    const disk = flushedCopy(m);
    const good = watchIn('b', 'backoff', 2);
    fs.appendFileSync(
      journal,
      `{"watch":{"threadId":"x","state":{"kind":"nope"}}}\n${JSON.stringify({ watch: good })}\n`,
    );
    const before = fs.readFileSync(journal, 'utf8');
    const loaded = await new GlobalStateStore(disk, { journalPath: journal, now: () => Date.UTC(2026, 11, 1) }).load();
    const aside = `${journal}.corrupt-2026-12-01T00-00-00-000Z`;
    assert.match(
      loaded.problem ?? '',
      new RegExp(
        `^journal ${escape(journal)}: 1 record could not be used \\(journal record 2: watch "x": .*\\); the journal as it was is kept as ${escape(aside)}; its other 2 records loaded$`,
      ),
    );
    assert.equal(fs.readFileSync(aside, 'utf8'), before, 'kept aside unchanged');
    assert.deepEqual(Object.keys(loaded.state.watches).sort(), ['a', 'b']);
    assert.deepEqual(loaded.state.watches['b'], good);
  });

  it('keeps an unusable journal (a directory) aside and loads the snapshot', async () => {
    const journal = journalIn();
    const m = new Memento();
    const store = new GlobalStateStore(m, { journalPath: journal, now: () => 0 });
    await store.load();
    await store.save(stateWith(watchIn('a', 'running', 1)));
    fs.rmSync(journal, { force: true });
    fs.mkdirSync(journal);
    const loaded = await new GlobalStateStore(flushedCopy(m), { journalPath: journal, now: () => 0 }).load();
    assert.match(
      loaded.problem ?? '',
      /was unusable \(a directory, not a file\); kept aside as .*\.corrupt-1970-01-01T00-00-00-000Z; the watch state loaded without the changes it held$/,
    );
    assert.ok(fs.statSync(`${journal}.corrupt-1970-01-01T00-00-00-000Z`).isDirectory());
    assert.deepEqual(Object.keys(loaded.state.watches), ['a']);
  });

  it('keeps a journal aside when globalState holds no state for it', async () => {
    const journal = journalIn();
    const m = new Memento();
    const store = new GlobalStateStore(m, { journalPath: journal, now: () => 0 });
    await store.load();
    await store.save(stateWith(watchIn('a', 'running', 1)));
    const loaded = await new GlobalStateStore(new Memento(), { journalPath: journal, now: () => 0 }).load();
    assert.deepEqual(loaded.state, emptyState());
    assert.match(
      loaded.problem ?? '',
      /could not be replayed \(no watch state in globalState beside it\); kept aside as .*\.corrupt-/,
    );
    assert.ok(fs.readdirSync(path.dirname(journal)).some((f) => f.startsWith(`${JOURNAL_FILE}.corrupt-`)));
  });

  it('compact (a clean stop) writes globalState and resets the journal', async () => {
    const journal = journalIn();
    const m = new Memento();
    const store = new GlobalStateStore(m, { journalPath: journal });
    await store.load();
    const last = stateWith(watchIn('a', 'backoff', 2));
    await store.save(stateWith(watchIn('a', 'running', 1)));
    await store.save(last);
    assert.ok(fs.statSync(journal).size > 0);
    const generation = generationOf(m);
    await store.compact();
    assert.equal(fs.existsSync(journal), false, 'the journal was reset');
    assert.notEqual(generationOf(m), generation, 'a new generation');
    const lines: string[] = [];
    const loaded = await new GlobalStateStore(m, { journalPath: journal, info: (l) => lines.push(l) }).load();
    assert.deepEqual(loaded, { state: last, problem: null });
    assert.match(lines.join(), /0 records replayed/);
  });

  it('a fold the workbench lost: the journal it replaced (.prev) is replayed, then the new one', async () => {
    const journal = journalIn();
    const m = new Memento();
    const store = new GlobalStateStore(m, { journalPath: journal, minFoldBytes: 0 });
    await store.load();
    await store.save(stateWith(watchIn('a', 'running', 1)));
    const disk = flushedCopy(m);
    // A small threshold: this save folds (a new snapshot and generation, the journal kept as .prev)...
    const mid = stateWith(watchIn('a', 'backoff', 2), watchIn('b', 'running', 3));
    await store.save(mid);
    const last = stateWith(watchIn('a', 'backoff', 2), watchIn('b', 'backoff', 4));
    await store.save(last);
    // ...and the window crashed before the workbench wrote the new snapshot.
    assert.notEqual(generationOf(disk), generationOf(m));
    const loaded = await new GlobalStateStore(disk, { journalPath: journal }).load();
    assert.equal(loaded.problem, null);
    assert.deepEqual(loaded.state, last);
  });

  it('folds when the journal outgrows the snapshot, and the state loads back', async () => {
    const journal = journalIn();
    const m = new Memento();
    const store = new GlobalStateStore(m, { journalPath: journal, minFoldBytes: 2_000 });
    await store.load();
    let state = emptyState();
    for (let i = 0; i < 60; i++) {
      state = stateWith(watchIn('a', i % 2 ? 'backoff' : 'running', i + 1));
      await store.save(state);
      assert.ok(fs.existsSync(journal) ? fs.statSync(journal).size < 4_000 : true, 'the journal stays bounded');
    }
    const loaded = await new GlobalStateStore(flushedCopy(m), { journalPath: journal }).load();
    assert.deepEqual(loaded, { state, problem: null });
  });

  it('a journal that cannot be written: said once, and globalState alone goes on', async () => {
    const journal = journalIn();
    fs.mkdirSync(path.dirname(path.dirname(journal)), { recursive: true });
    fs.writeFileSync(path.dirname(journal), 'a file where the directory should be');
    const m = new Memento();
    const problems: string[] = [];
    const store = new GlobalStateStore(m, { journalPath: journal, onProblem: (p) => problems.push(p) });
    await store.load();
    const last = stateWith(watchIn('a', 'backoff', 2));
    await store.save(stateWith(watchIn('a', 'running', 1)));
    await store.save(last);
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0], /could not write the crash journal .*; the watch state is kept in globalState alone/);
    assert.deepEqual(parsePersisted(m.get(STATE_KEY)), { state: last, dropped: [] });
  });
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
