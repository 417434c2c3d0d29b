// The stores' write guard (src/store/guard.ts): a leader stopped or blocked past its lease
// (src/leader/lease.ts) may wake in the middle of a save, after another engine took over and
// saved to the same store (two runners on the default state file, two windows on one
// globalState). Its late save must not land: the guard is asked right before the write that
// lands (the snapshot's rename, a journal append, the globalState update), and a snapshot or a
// globalState value of a newer term is never replaced by an older term's.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { emptyState, newWatch, type PersistedState } from '../../src/model/watch';
import { JsonFileStore, readStateFile } from '../../src/store/jsonFileStore';
import { GlobalStateStore, STATE_KEY } from '../../src/store/globalStateStore';
import { FencedError, type WriteGuard } from '../../src/store/guard';
import { readHead } from '../../src/store/snapshotHead';
import { Memento } from '../support/memento';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
function tempFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-guard-'));
  dirs.push(dir);
  return path.join(dir, 'state.json');
}

/** A guard for `term`; `closes`: the number of fence checks it answers before it closes (a stall). */
function guard(term: number, closes = Infinity, of = 'daemon-a'): WriteGuard & { asked: number } {
  const g = {
    asked: 0,
    fence: () => (++g.asked > closes ? 'the lease ran out' : null),
    term: () => ({ n: term, of }),
  };
  return g;
}

function stateWith(...ids: string[]): PersistedState {
  const s = emptyState();
  for (const id of ids) s.watches[id] = newWatch(id, 1);
  return s;
}

describe('write guard: the JSON file store', () => {
  it("stamps the writer's term into the snapshot's head", async () => {
    const file = tempFile();
    const store = new JsonFileStore(file, { guard: guard(7) });
    await store.load();
    await store.save(stateWith('a'));
    await store.compact();
    const text = fs.readFileSync(file, 'utf8');
    assert.deepEqual(readHead(text).term, { n: 7, of: 'daemon-a' });
    assert.ok(text.indexOf('"term":"7@daemon-a"') < text.indexOf('"watches"'), 'the term comes before the watches');
  });

  it('a closed fence: the save is refused and nothing is written', async () => {
    const file = tempFile();
    const g = guard(1);
    const store = new JsonFileStore(file, { guard: g });
    await store.load();
    await store.save(stateWith('a'));
    const before = fs.readFileSync(file, 'utf8');
    const journalBefore = fs.existsSync(`${file}.journal`) ? fs.readFileSync(`${file}.journal`, 'utf8') : '';
    g.fence = () => 'the lease ran out';
    await assert.rejects(store.save(stateWith('a', 'b')), /not saved: the lease ran out/);
    await assert.rejects(store.compact(), /not saved: the lease ran out/);
    assert.equal(fs.readFileSync(file, 'utf8'), before);
    const journalAfter = fs.existsSync(`${file}.journal`) ? fs.readFileSync(`${file}.journal`, 'utf8') : '';
    assert.equal(journalAfter, journalBefore, 'appended to the journal past the fence');
  });

  it('a lease that runs out while the snapshot is written (between the save and its rename): not renamed', async () => {
    const file = tempFile();
    const store = new JsonFileStore(file, { guard: guard(1, 0) }); // open at the save, closed at the rename
    const first = new JsonFileStore(file);
    await first.load();
    await first.save(stateWith('old'));
    await first.compact();
    const before = fs.readFileSync(file, 'utf8');
    await store.load().catch(() => undefined); // its load's fold is refused too
    await assert.rejects(store.compact(), FencedErrorLike);
    assert.equal(fs.readFileSync(file, 'utf8'), before, 'the snapshot was replaced past the fence');
    assert.deepEqual(
      fs.readdirSync(path.dirname(file)).filter((n) => n.includes('.tmp-')),
      [],
      'a temporary file was left behind',
    );
  });

  it("a newer term's snapshot is never replaced by an older term's late save", async () => {
    const file = tempFile();
    const stale = new JsonFileStore(file, { guard: guard(3) });
    await stale.load();
    await stale.save(stateWith('a'));
    // Another engine took over (term 4) and saved to the same file.
    const fresh = new JsonFileStore(file, { guard: guard(4) });
    await fresh.load();
    await fresh.save(stateWith('a', 'b'));
    await fresh.compact();
    const theirs = fs.readFileSync(file, 'utf8');
    // The stale one wakes and folds (its fence says yes: only the term can tell).
    await assert.rejects(stale.compact(), /written by a newer term \(4\) than this engine's \(3\)/);
    assert.equal(fs.readFileSync(file, 'utf8'), theirs);
    const loaded = await readStateFile(file);
    assert.ok(loaded.kind === 'state' && Object.keys(loaded.state.watches).sort().join() === 'a,b', 'state lost');
  });
});

describe('write guard: the globalState store', () => {
  it('stamps the term; a closed fence refuses the update; a newer term is never replaced', async () => {
    const m = new Memento();
    const g = guard(2);
    const store = new GlobalStateStore(m, { guard: g });
    await store.load();
    await store.save(stateWith('a'));
    assert.equal(m.get<{ term?: string }>(STATE_KEY)?.term, '2@daemon-a');
    g.fence = () => 'the lease ran out';
    await assert.rejects(store.save(stateWith('a', 'b')), /not saved: the lease ran out/);
    assert.deepEqual(Object.keys(m.get<{ watches: object }>(STATE_KEY)!.watches), ['a']);
    // Another window took over (term 5) and wrote globalState; the stale one's fence reopens
    // (only the term can tell now).
    await m.update(STATE_KEY, { ...m.get<object>(STATE_KEY), term: '5@daemon-a' });
    g.fence = () => null;
    await assert.rejects(store.save(stateWith('x')), /globalState was written by a newer term \(5\)/);
    assert.equal(m.get<{ term?: string }>(STATE_KEY)?.term, '5@daemon-a');
    // The term of another daemon's election is not a newer one of this election: one window's
    // globalState is written by the engines of every daemon it was pointed at, one after another.
    await m.update(STATE_KEY, { ...m.get<object>(STATE_KEY), term: '9@daemon-b' });
    await store.save(stateWith('y'));
    assert.equal(m.get<{ term?: string }>(STATE_KEY)?.term, '2@daemon-a');
  });

  it('an older term read back loads as any state (the term is not part of it)', async () => {
    const m = new Memento();
    const store = new GlobalStateStore(m, { guard: guard(9) });
    await store.load();
    await store.save(stateWith('a'));
    const loaded = await new GlobalStateStore(m).load();
    assert.equal(loaded.problem, null);
    assert.deepEqual(Object.keys(loaded.state.watches), ['a']);
  });
});

describe('closing a store without writing (a stale leader dropped)', () => {
  it('the globalState store lets go of its journal and writes nothing', async (t) => {
    if (process.platform !== 'linux') return t.skip('reads /proc/self/fd');
    const journalPath = path.join(path.dirname(tempFile()), 'state.journal');
    const m = new Memento();
    const store = new GlobalStateStore(m, { journalPath, guard: guard(1) });
    await store.load();
    await store.save(stateWith('a'));
    await store.save(stateWith('a', 'b'));
    const open = () =>
      fs.readdirSync('/proc/self/fd').some((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`) === journalPath;
        } catch {
          return false;
        }
      });
    assert.equal(open(), true, 'the journal is open between saves');
    const value = JSON.stringify(m.get(STATE_KEY));
    const journal = fs.readFileSync(journalPath, 'utf8');
    await store.close();
    assert.equal(open(), false, 'the journal is still open');
    assert.equal(JSON.stringify(m.get(STATE_KEY)), value);
    assert.equal(fs.readFileSync(journalPath, 'utf8'), journal);
  });
});

/** A FencedError, however the store wraps it. */
const FencedErrorLike = (e: unknown): boolean =>
  e instanceof Error && (e instanceof FencedError || /not saved: the lease ran out/.test(e.message));
