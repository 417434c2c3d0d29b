// One state file per daemon (src/runner/stateFile.ts, src/store/daemonStamp.ts,
// src/store/sharedTakeover.ts): the stamp that says which daemon a file is kept for, the store
// that refuses another daemon's file at load and before it writes, the rules that choose what a
// daemon takes from the file every daemon shared before 0.4.0, and the store that takes it once
// and leaves the shared file as it was. Real files in a temp directory; no daemon.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { OtherDaemonError } from '../../src/store/daemonStamp';
import { headOnDisk } from '../../src/store/snapshotHead';
import { JsonFileStore, readStateFile } from '../../src/store/jsonFileStore';
import { StateSerializer } from '../../src/store/store';
import { claimShared, SharedTakeoverStore, takeoverText, type Takeover } from '../../src/store/sharedTakeover';
import { claimant, daemonKey, otherDaemonProblem, sharedStatePath, targetHome } from '../../src/runner/stateFile';
import { emptyState, newWatch, STATE_VERSION, type PersistedState } from '../../src/model/watch';
import { rng } from '../support/random';
import { tempDir } from '../support/wait';

const A = '/home/u/a/app-server-control/app-server-control.sock';
const B = '/home/u/b/app-server-control/app-server-control.sock';

/** A shared file's state: threads of home a, of home b, and one with no rollout known. */
function sharedState(): PersistedState {
  const s = emptyState();
  const add = (id: string, rollout: string | null) => {
    const w = newWatch(id, 1_000);
    w.rolloutPath = rollout;
    s.watches[id] = w;
  };
  add('ta', '/home/u/a/sessions/2026/12/01/rollout-ta.jsonl');
  add('tb', '/home/u/b/sessions/2026/12/01/rollout-tb.jsonl');
  add('tn', null);
  s.disarmed.ta = 5;
  s.disarmed.tb = 6;
  s.disarmed.gone = 7; // a disarm of a thread no longer watched
  s.pausedAt = 9_000;
  return s;
}

const meA = { election: 'leader-aaaaaaaaaaaa', homes: ['/home/u/a'], isDefault: true };
const meB = { election: 'leader-bbbbbbbbbbbb', homes: ['/home/u/b'], isDefault: false };

describe('a state file kept for one daemon', () => {
  it('is stamped with it; another daemon’s store refuses it at load and changes nothing', async () => {
    const file = path.join(tempDir('cgr-stamp-'), 'state.json');
    const a = new JsonFileStore(file, { daemon: A });
    await a.load();
    const state = sharedState();
    await a.save(state);
    await a.compact();
    await a.close();
    assert.equal((await headOnDisk(file)).daemon, A);
    const before = fs.readFileSync(file, 'utf8');
    const b = new JsonFileStore(file, { daemon: B });
    await assert.rejects(b.load(), (e: unknown) => {
      assert.ok(e instanceof OtherDaemonError);
      assert.equal(
        e.message,
        `state file ${file} keeps the state of another daemon (${A}), not of ${B}: each daemon needs a state file of its own (leave out --state and each gets one)`,
      );
      return true;
    });
    assert.equal(fs.readFileSync(file, 'utf8'), before, 'untouched');
    assert.equal(await otherDaemonProblem(file, { kind: 'socket', path: B }), new OtherDaemonError(file, A, B).message);
    assert.equal(await otherDaemonProblem(file, { kind: 'socket', path: A }), null);
    const again = new JsonFileStore(file, { daemon: A });
    assert.deepEqual(Object.keys((await again.load()).state.watches).sort(), ['ta', 'tb', 'tn']);
    await again.close();
  });

  it('an unstamped file (from before 0.4.0, or an explicit --state) is stamped at its first load', async () => {
    const file = path.join(tempDir('cgr-stamp-'), 'state.json');
    const old = new JsonFileStore(file);
    await old.load();
    await old.save(sharedState());
    await old.compact();
    await old.close();
    assert.equal((await headOnDisk(file)).daemon, null);
    const a = new JsonFileStore(file, { daemon: A });
    assert.equal(Object.keys((await a.load()).state.watches).length, 3, 'nothing lost');
    await a.close();
    assert.equal((await headOnDisk(file)).daemon, A, 'stamped before the engine acts');
  });

  it('two daemons’ engines started on one new file: the second one’s write is refused, the first one’s file kept', async () => {
    const file = path.join(tempDir('cgr-stamp-'), 'state.json');
    const a = new JsonFileStore(file, { daemon: A });
    const b = new JsonFileStore(file, { daemon: B });
    await a.load();
    await b.load(); // both find no file
    const mine = emptyState();
    mine.pausedAt = 1;
    await a.save(mine);
    await assert.rejects(b.save(emptyState()), /keeps the state of another daemon/);
    assert.equal((await headOnDisk(file)).daemon, A);
    await a.close();
    await b.close();
    const reread = new JsonFileStore(file, { daemon: A });
    assert.equal((await reread.load()).state.pausedAt, 1);
    await reread.close();
  });

  it('a store given no daemon neither stamps nor checks (the extension’s stores, older callers)', async () => {
    const file = path.join(tempDir('cgr-stamp-'), 'state.json');
    const a = new JsonFileStore(file, { daemon: A });
    await a.load();
    await a.save(emptyState());
    await a.close();
    const plain = new JsonFileStore(file);
    await plain.load();
    await plain.save(sharedState());
    await plain.compact();
    await plain.close();
    assert.equal((await headOnDisk(file)).daemon, null, 'its snapshot names no daemon');
  });
});

/** Text that looks like the fields a head reader looks for, escapes, and non-ASCII. */
const PIECES = ['"', '\\', '\\"', '"daemon":"', '"watches"', '"term":"9@x",', '/', 'a', 'é', '😀', '\n', '\u0000', ' '];

function text(random: () => number, max: number): string {
  let s = '';
  const n = Math.floor(random() * max);
  for (let i = 0; i < n; i++) s += PIECES[Math.floor(random() * PIECES.length)];
  return s;
}

describe('the daemon a snapshot names: its whole JSON and its head say the same', () => {
  it('over 400 generated snapshots (any daemon text, a term or not, goals that name another daemon)', async () => {
    const dir = tempDir('cgr-stamp-');
    const random = rng(4242);
    const seen = { fits: 0, past: 0, none: 0 };
    for (let i = 0; i < 400; i++) {
      const state = emptyState();
      for (let w = Math.floor(random() * 3); w > 0; w--) {
        const watch = newWatch(`t${w}`, 1_000);
        watch.title = text(random, 30);
        state.watches[watch.threadId] = watch;
      }
      const serializer = new StateSerializer();
      serializer.changes(state);
      const extra: Record<string, string> = { journal: '"g-1"' };
      if (random() < 0.5) extra.term = `"${1 + Math.floor(random() * 99)}@leader-a"`;
      const kind = random();
      // Empty, of any length (some past the head), not a string, or none.
      if (kind < 0.8) extra.daemon = JSON.stringify(kind < 0.1 ? '' : text(random, kind < 0.7 ? 200 : 2000));
      else if (kind < 0.9) extra.daemon = ['7', 'null', 'true'][i % 3];
      const file = path.join(dir, `s${i}.json`);
      const document = serializer.document(STATE_VERSION, extra);
      fs.writeFileSync(file, document);
      const whole = await readStateFile(file);
      assert.equal(whole.kind, 'state', document);
      const head = await headOnDisk(file);
      const fits = Buffer.byteLength(document.slice(0, document.indexOf('"watches"'))) <= 4096;
      seen[fits ? 'fits' : 'past'] += 1;
      if (fits) assert.equal(head.daemon, whole.kind === 'state' ? whole.daemon : undefined, document);
      else assert.equal(head.daemon, null, 'a stamp past the head is none, never another daemon');
      if (whole.kind === 'state' && whole.daemon === null) seen.none += 1;
    }
    assert.ok(seen.past > 0 && seen.fits > 300 && seen.none > 40, JSON.stringify(seen));
  });
});

describe('what a daemon takes from the shared file (claimShared)', () => {
  it('its threads by where their rollouts lie; the rest stay; the shared state is not changed', () => {
    const shared = sharedState();
    const copy = structuredClone(shared);
    const b = claimShared(shared, null, meB);
    assert.deepEqual([b.taken, b.left.sort(), b.owner], [['tb'], ['ta', 'tn'], false]);
    assert.deepEqual(b.state.disarmed, { tb: 6 }, 'the disarm of its own thread only');
    assert.equal(b.state.pausedAt, 9_000, 'a daemon that takes a thread takes the pause both runners showed');
    assert.deepEqual(shared, copy);
    b.state.watches.tb.title = 'changed';
    assert.equal(shared.watches.tb.title, 'tb', 'a copy, not the shared record');
  });

  it('no term in the file: the default Codex home owns it (threads without a rollout, other disarms, the pause)', () => {
    const a = claimShared(sharedState(), null, meA);
    assert.deepEqual([a.taken.sort(), a.left, a.owner], [['ta', 'tn'], ['tb'], true]);
    assert.deepEqual(a.state.disarmed, { ta: 5, gone: 7 });
    assert.equal(a.state.pausedAt, 9_000);
  });

  it('a term in the file: the daemon whose election wrote it last owns it, default home or not', () => {
    const b = claimShared(sharedState(), meB.election, meB);
    assert.deepEqual([b.taken.sort(), b.owner], [['tb', 'tn'], true]);
    assert.deepEqual(b.state.disarmed, { tb: 6, gone: 7 });
    const a = claimShared(sharedState(), meB.election, meA);
    assert.deepEqual([a.taken, a.owner], [['ta'], false]);
  });

  it('a daemon that owns nothing and takes nothing takes no pause either (it would leak from another home)', () => {
    const shared = sharedState();
    delete shared.watches.ta;
    const c = claimShared(shared, null, { election: 'leader-c', homes: ['/home/u/c'], isDefault: false });
    assert.deepEqual([c.taken, c.state.pausedAt, c.state.disarmed], [[], null, {}]);
  });

  it('a rollout is under a home only inside it (not a sibling with the same prefix, not the home itself); any of its names', () => {
    const shared = emptyState();
    for (const [id, rollout] of [
      ['in', '/home/u/a/sessions/r.jsonl'],
      ['sibling', '/home/u/ab/sessions/r.jsonl'],
      ['self', '/home/u/a'],
      ['real', '/real/a/sessions/r.jsonl'],
      ['up', '/home/u/a/../b/sessions/r.jsonl'],
    ] as const) {
      const w = newWatch(id, 1);
      w.rolloutPath = rollout;
      shared.watches[id] = w;
    }
    const c = claimShared(shared, null, { election: 'x', homes: ['/home/u/a', '/real/a'], isDefault: false });
    assert.deepEqual(c.taken.sort(), ['in', 'real']);
    const none = claimShared(shared, null, { election: 'x', homes: [], isDefault: false });
    assert.deepEqual(none.taken, [], 'a daemon named by its URL cannot tell its rollouts: takes none of them');
  });
});

describe('the runner’s daemon, as a state file sees it', () => {
  it('its Codex home: from the socket under it, a stdio child’s CODEX_HOME, none for a URL or another socket', () => {
    assert.equal(targetHome({ kind: 'socket', path: A }), '/home/u/a');
    assert.equal(targetHome({ kind: 'socket', path: '/run/x.sock' }), null);
    assert.equal(targetHome({ kind: 'url', url: 'ws://127.0.0.1:1' }), null);
    assert.equal(
      targetHome({ kind: 'stdio', command: 'codex', args: [], env: { CODEX_HOME: '/home/u/s' } }),
      '/home/u/s',
    );
    const env = { HOME: '/home/u', CODEX_HOME: '/home/u/a' } as NodeJS.ProcessEnv;
    assert.deepEqual(claimant({ kind: 'socket', path: A }, env).isDefault, true);
    assert.deepEqual(claimant({ kind: 'socket', path: B }, env).isDefault, false);
    assert.deepEqual(claimant({ kind: 'url', url: 'ws://127.0.0.1:1' }, env).homes, []);
  });

  it('a home reached through a symbolic link is matched by both of its names', () => {
    const dir = fs.realpathSync(tempDir('cgr-home-'));
    fs.mkdirSync(path.join(dir, 'real'));
    fs.symlinkSync(path.join(dir, 'real'), path.join(dir, 'link'));
    const sock = path.join(dir, 'link', 'app-server-control', 'app-server-control.sock');
    assert.deepEqual(claimant({ kind: 'socket', path: sock }, {}).homes, [
      path.join(dir, 'link'),
      path.join(dir, 'real'),
    ]);
  });

  it('its key: the election’s for a shared daemon, its home’s for a private stdio child', () => {
    assert.equal(daemonKey({ kind: 'socket', path: A }), A);
    assert.equal(daemonKey({ kind: 'url', url: 'ws://127.0.0.1:1' }), 'ws://127.0.0.1:1/');
    assert.equal(daemonKey({ kind: 'stdio', command: 'c', args: [], env: { CODEX_HOME: '/h' } }), 'stdio:/h');
  });
});

describe('taking over the shared file (SharedTakeoverStore)', () => {
  async function world() {
    const dir = tempDir('cgr-takeover-');
    const shared = path.join(dir, 'state.json');
    const old = new JsonFileStore(shared);
    await old.load();
    await old.save(sharedState());
    await old.compact();
    await old.close();
    return { dir, shared, bytes: fs.readFileSync(shared, 'utf8') };
  }

  it('a new file starts from what is this daemon’s, written at once; told once; the shared file unchanged', async () => {
    const w = await world();
    const mine = path.join(w.dir, 'state-b.json');
    const told: Takeover[] = [];
    const store = () =>
      new SharedTakeoverStore(new JsonFileStore(mine, { daemon: B }), w.shared, meB, (t) => told.push(t));
    const first = store();
    const loaded = await first.load();
    assert.deepEqual(Object.keys(loaded.state.watches), ['tb']);
    assert.deepEqual(loaded.changed, ['tb']);
    assert.equal(loaded.state.pausedAt, 9_000);
    assert.deepEqual(told, [{ from: w.shared, taken: ['tb'], left: 2, pausedAt: 9_000, unreadable: null }]);
    assert.ok(fs.existsSync(mine), 'written before the engine acts (a crash now takes nothing twice)');
    await first.close();
    assert.equal(fs.readFileSync(w.shared, 'utf8'), w.bytes, 'the shared file is only read');
    const second = store();
    assert.deepEqual(Object.keys((await second.load()).state.watches), ['tb']);
    await second.close();
    assert.equal(told.length, 1, 'said once: the file is there now');
    // The other home's runner takes its own later, from the same unchanged file.
    const other: Takeover[] = [];
    const a = new SharedTakeoverStore(
      new JsonFileStore(path.join(w.dir, 'state-a.json'), { daemon: A }),
      w.shared,
      meA,
      (t) => other.push(t),
    );
    assert.deepEqual(Object.keys((await a.load()).state.watches).sort(), ['ta', 'tn']);
    await a.close();
    assert.deepEqual(other[0].taken.sort(), ['ta', 'tn']);
  });

  it('no shared file: nothing said; an unreadable one: said, nothing taken, and the new file made so it is said once', async () => {
    const dir = tempDir('cgr-takeover-');
    const told: Takeover[] = [];
    const none = new SharedTakeoverStore(
      new JsonFileStore(path.join(dir, 'mine.json'), { daemon: A }),
      path.join(dir, 'state.json'),
      meA,
      (t) => told.push(t),
    );
    assert.deepEqual((await none.load()).state, emptyState());
    await none.close();
    assert.equal(told.length, 0);
    const shared = path.join(dir, 'state.json');
    fs.writeFileSync(shared, 'not json');
    const mine = path.join(dir, 'mine2.json');
    const bad = new SharedTakeoverStore(new JsonFileStore(mine, { daemon: A }), shared, meA, (t) => told.push(t));
    await bad.load();
    await bad.close();
    assert.equal(told.length, 1);
    assert.match(told[0].unreadable ?? '', /invalid JSON/);
    assert.equal(fs.readFileSync(shared, 'utf8'), 'not json', 'never moved aside: it is not this store’s file');
    assert.ok(fs.existsSync(mine));
  });

  it('said in words: what was taken, the pause, what stays; or why nothing could be', () => {
    const base = { from: '/s/state.json', left: 0, pausedAt: null, unreadable: null };
    assert.equal(
      takeoverText({ ...base, taken: ['x', 'y'], left: 1, pausedAt: 5 }, '/s/state-1.json'),
      'state: took 2 watched threads of this daemon from the shared state file /s/state.json into /s/state-1.json, and its pause of every recovery (resume to undo); its 1 other thread stays there for their own daemon (the shared file is left as it is)',
    );
    assert.equal(
      takeoverText({ ...base, taken: [] }, '/n.json'),
      'state: took no watched thread (none is of this daemon) from the shared state file /s/state.json into /n.json (the shared file is left as it is)',
    );
    assert.match(
      takeoverText({ ...base, taken: [], unreadable: 'empty file' }, '/n.json'),
      /could not be read \(empty file\): nothing taken/,
    );
    assert.equal(sharedStatePath({ XDG_STATE_HOME: '/st' }), '/st/codex-goal-recovery/state.json');
  });
});
