// Fault injection, item 4: corrupt state, systematically: every corruption in the table, in both
// stores (the runner's JSON file, the extension's globalState), through a real Engine against
// the fake daemon. For each: the load reports it in one clear message (where, what, where the
// bad bytes went, "starting clean"); the bad bytes are kept, unchanged, where the message says
// and are still there at the end; the engine starts clean, watches and recovers a goal normally,
// and saves a state that loads back without a problem. A state with a few bad records among good
// ones keeps the good ones (and a disarm whose time is unreadable stays a disarm).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { emptyState, newWatch, STATE_VERSION, type PersistedState } from '../../src/model/watch';
import { CORRUPT_PREFIX, GlobalStateStore, MAX_STATE_CHARS, STATE_KEY } from '../../src/store/globalStateStore';
import { DEFAULT_MAX_STATE_BYTES, JsonFileStore } from '../../src/store/jsonFileStore';
import type { LoadResult, StateStore } from '../../src/store/store';
import { makeHarness, TEST_OPTIONS } from '../support/engineHarness';
import { FakeDaemon } from '../support/fakeDaemon';
import { statusOfFile } from '../support/runnerProcess';
import { Memento } from '../support/memento';
import { tempDir } from '../support/wait';

const NOW = Date.UTC(2026, 10, 30, 9, 8, 7, 654);
const FILE_ASIDE_SUFFIX = '.corrupt-2026-11-30T09-08-07-654Z';
const MEMENTO_ASIDE_KEY = `${CORRUPT_PREFIX}2026-11-30T09:08:07.654Z`;
const MB = 1024 * 1024;

/** A good state with one watch (of a thread the daemon no longer has) and one disarm. */
function goodState(): PersistedState {
  const s = emptyState();
  const w = newWatch('kept-1', NOW - 60_000);
  w.title = 'Keep me';
  w.recovered = ['turn-0'];
  s.watches['kept-1'] = w;
  s.disarmed['kept-2'] = NOW - 30_000;
  return s;
}
const goodJson = () => JSON.stringify(goodState(), null, 2);

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

// ---- the table ----------------------------------------------------------------------------------

interface Corruption {
  name: string;
  /** What is at the state file's path (bytes), or a special case. */
  file: Buffer | 'directory' | 'unreadable' | null;
  fileReason: RegExp | null;
  /** The value under the globalState key, if the corruption exists there. */
  memento: { value: unknown } | null;
  mementoReason: RegExp | null;
}

function corruptions(): Corruption[] {
  const full = goodJson();
  const state = goodState();
  const bytes = randomBytes(4096);
  bytes[0] = 0; // binary, NULs included
  return [
    {
      name: 'truncated',
      file: Buffer.from(full.slice(0, Math.floor(full.length / 2))),
      fileReason: /invalid JSON/,
      memento: { value: { version: STATE_VERSION, pausedAt: null } }, // a write cut short: half the fields
      mementoReason: /does not match the schema: watches: /,
    },
    {
      name: "foreign JSON (another tool's file)",
      file: Buffer.from(JSON.stringify({ name: 'some-other-tool', settings: [1, 2, 3], version: '2.0.0-beta' })),
      fileReason: /"version" is not an integer \(got "2\.0\.0-beta"\)/,
      memento: { value: { name: 'some-other-tool', settings: [1, 2, 3] } },
      mementoReason: /no "version" field/,
    },
    {
      name: 'a future version',
      file: Buffer.from(JSON.stringify({ ...state, version: STATE_VERSION + 1, newThing: { a: 1 } })),
      fileReason: new RegExp(
        `written by a newer version of the extension \\(state version ${STATE_VERSION + 1}; this one reads up to ${STATE_VERSION}\\)`,
      ),
      memento: { value: { ...state, version: STATE_VERSION + 1 } },
      mementoReason: /written by a newer version/,
    },
    {
      name: 'an old, unknown version',
      file: Buffer.from(JSON.stringify({ ...state, version: 0 })),
      fileReason: /unknown state version 0/,
      memento: { value: { ...state, version: 0 } },
      mementoReason: /unknown state version 0/,
    },
    {
      name: 'a document of the wrong shape',
      file: Buffer.from(JSON.stringify({ ...state, pausedAt: 'yesterday' })),
      fileReason: /does not match the schema: pausedAt: /,
      memento: { value: { ...state, watches: [state.watches['kept-1']] } },
      mementoReason: /does not match the schema: watches: /,
    },
    {
      name: 'huge (50 MB)',
      // The file: 50 MB of a broken document (under the 64 MiB cap: read, then refused).
      file: Buffer.concat([Buffer.from('{"version":1,"pausedAt":null,"watches":{"x":"'), Buffer.alloc(50 * MB, 'x')]),
      fileReason: /invalid JSON/,
      // globalState: a good document made 50 MB by one field (over its 16 MiB cap: never parsed).
      memento: { value: { ...state, padding: 'p'.repeat(50 * MB) } },
      mementoReason: new RegExp(`too large \\(\\d+ characters; the limit is ${MAX_STATE_CHARS}\\)`),
    },
    {
      name: 'huge, over the file cap (70 MB)',
      file: Buffer.alloc(70 * MB, ' '),
      fileReason: new RegExp(`${70 * MB} bytes, more than the ${DEFAULT_MAX_STATE_BYTES}-byte limit`),
      memento: null,
      mementoReason: null,
    },
    {
      name: 'binary garbage',
      file: bytes,
      fileReason: /invalid JSON/,
      memento: { value: bytes }, // what a Buffer becomes in JSON: {type: "Buffer", data: [...]}
      mementoReason: /no "version" field/,
    },
    {
      name: 'empty',
      file: Buffer.alloc(0),
      fileReason: /empty file/,
      memento: { value: '' },
      mementoReason: /not a state object \(got string\)/,
    },
    {
      name: 'JSON null',
      file: Buffer.from('null\n'),
      fileReason: /not a state object \(got null\)/,
      memento: { value: null },
      mementoReason: /not a state object \(got null\)/,
    },
    {
      name: 'a directory where the file should be',
      file: 'directory',
      fileReason: /a directory, not a file/,
      memento: null,
      mementoReason: null,
    },
    {
      name: 'an unreadable file (mode 000, read by its owner)',
      file: 'unreadable',
      fileReason: /unreadable: EACCES: permission denied/,
      memento: null,
      mementoReason: null,
    },
  ];
}

// ---- the engine after the load: watches and recovers, then saves a good state --------------------

interface EngineRun {
  warnings: string[];
  watchesAtStart: string[];
}

/**
 * Starts an Engine on `store` against a fake daemon with one active goal, blocks it on a
 * transient failure, and checks it is recovered; stops (saves). Returns what it warned about.
 */
async function engineRecovers(store: StateStore, extraThreads: string[] = []): Promise<EngineRun> {
  const daemonDir = tempDir('cgr-fs-daemon-');
  try {
    return await recoverWith(store, daemonDir, extraThreads);
  } finally {
    fs.rmSync(daemonDir, { recursive: true, force: true });
  }
}

async function recoverWith(store: StateStore, daemonDir: string, extraThreads: string[]): Promise<EngineRun> {
  const daemon = new FakeDaemon(daemonDir);
  daemon.addThread('thread-1');
  for (const id of extraThreads) daemon.addThread(id);
  // What the engine got from the store, before it saw the daemon.
  let watchesAtStart: string[] | undefined;
  const watching: StateStore = {
    location: store.location,
    load: async (): Promise<LoadResult> => {
      const r = await store.load();
      watchesAtStart = Object.keys(r.state.watches).sort(); // the engine changes r.state later
      return r;
    },
    save: (state) => store.save(state),
  };
  const h = await makeHarness({ dir: daemonDir, daemon, store: watching });
  try {
    assert.ok(watchesAtStart, 'the engine loaded its state');
    await h.reconcile();
    assert.equal(h.engine.watch('thread-1')?.state.kind, 'running', 'the engine watches the active goal');
    const t = daemon.thread('thread-1');
    daemon.fail('thread-1', 'turn-1');
    daemon.notify('thread/goal/updated', { threadId: 'thread-1', turnId: 'turn-1', goal: t.goal });
    daemon.notify('turn/completed', { threadId: 'thread-1', turn: t.turn });
    for (const id of extraThreads) {
      daemon.fail(id, 'turn-1');
      daemon.notify('thread/goal/updated', { threadId: id, turnId: 'turn-1', goal: daemon.thread(id).goal });
      daemon.notify('turn/completed', { threadId: id, turn: daemon.thread(id).turn });
    }
    await h.settle();
    assert.equal(h.engine.watch('thread-1')?.state.kind, 'backoff');
    await h.advance(TEST_OPTIONS.baseDelayMs); // the harness runs the shipped backoff (30 s)
    const sets = daemon.requests.filter((m) => m.method === 'thread/goal/set');
    assert.deepEqual(
      sets.map((m) => m.params?.threadId),
      ['thread-1'],
      'recovered thread-1, and nothing else',
    );
    assert.equal(h.engine.watch('thread-1')?.state.kind, 'running');
    assert.deepEqual(daemon.violations, []);
    await h.engine.stop();
    const warnings = h.decisions.filter((d) => d.type === 'warning').map((d) => (d as { message: string }).message);
    return { warnings, watchesAtStart };
  } finally {
    await h.cleanup();
  }
}

/** The state the engine saved loads back cleanly, with the recovery in it. */
async function savedStateIsGood(store: StateStore): Promise<PersistedState> {
  const r = await store.load();
  assert.equal(r.problem, null, 'the saved state loads without a problem');
  assert.deepEqual(r.state.watches['thread-1']?.recovered, ['turn-1'], 'the recovery was saved');
  return r.state;
}

// ---- loading an unreadable file: in a child process that cannot read it -------------------------

const OUT = path.resolve(__dirname, '..', '..');
const NOBODY = 65534;
const ROOT = process.getuid?.() === 0;

/** Whether this process can open `file` for reading. */
function canOpen(file: string): boolean {
  try {
    fs.closeSync(fs.openSync(file, 'r'));
    return true;
  } catch {
    return false;
  }
}

/**
 * Loads the store in a child process. As root (which reads any file), the child runs as uid
 * 65534 on a directory it owns, so that mode 000 really is unreadable to it.
 *
 * The child loads the compiled store while it still runs as the test's user, and only then drops
 * to uid 65534 (no supplementary groups, and so no capabilities left): uid 65534 need not be able
 * to read the checkout, which may be anywhere (a clone in a private 0700 directory is not
 * traversable by other users). The load itself, the only thing that touches the state file, runs
 * as uid 65534; the child checks that it does before it reads anything.
 */
function loadInChild(file: string): { state?: PersistedState; problem?: string | null; error?: string } {
  const script = `
    const { JsonFileStore } = require(${JSON.stringify(path.join(OUT, 'src', 'store', 'jsonFileStore.js'))});
    if (${ROOT}) {
      process.setgroups([]);
      process.setgid(${NOBODY});
      process.setuid(${NOBODY});
      const ids = [process.getuid(), process.geteuid(), process.getgid(), process.getegid(), process.getgroups().filter((g) => g !== ${NOBODY}).length];
      if (ids.join() !== '${NOBODY},${NOBODY},${NOBODY},${NOBODY},0') throw new Error('could not become uid ${NOBODY}: ' + ids.join());
    }
    // The reader reaches the file (its directories are searchable): only the file's mode stops it.
    require('node:fs').statSync(${JSON.stringify(file)});
    new JsonFileStore(${JSON.stringify(file)}, { now: () => ${NOW} }).load()
      .then((r) => process.stdout.write(JSON.stringify(r)), (e) => process.stdout.write(JSON.stringify({ error: e.message })));`;
  // cwd: the state file's directory (the child's own, as root), not the checkout, which uid
  // 65534 may not be able to reach.
  const r = spawnSync(process.execPath, ['-e', script], { cwd: path.dirname(file), encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as { state?: PersistedState; problem?: string | null; error?: string };
}

// ---- the tests ----------------------------------------------------------------------------------

describe('corrupt state in the JSON file store (the runner)', () => {
  for (const c of corruptions()) {
    const what = c.file;
    const reason = c.fileReason;
    if (what === null || reason === null) continue;
    test(`Invariant: ${c.name}: reported in one clear message, kept aside unchanged and never deleted; the engine starts clean, recovers normally and saves a good state`, async (t) => {
      const dir = tempDir('cgr-fs-');
      const file = path.join(dir, 'state.json');
      const aside = `${file}${FILE_ASIDE_SUFFIX}`;
      try {
        let problem: string | null | undefined;
        let checkAside: () => void;
        if (what === 'unreadable') {
          const content = Buffer.from(goodJson());
          fs.writeFileSync(file, content);
          if (ROOT) {
            fs.chownSync(dir, NOBODY, NOBODY);
            fs.chownSync(file, NOBODY, NOBODY);
          }
          fs.chmodSync(file, 0o000);
          if (!ROOT && canOpen(file)) {
            // Not root, so the child cannot switch to another user; and this user reads a mode-000
            // file of its own (a capability such as CAP_DAC_OVERRIDE): nothing here is unreadable.
            t.skip(
              `uid ${process.getuid?.()} can read a mode-000 file (it has a capability such as CAP_DAC_OVERRIDE) and, not being root, cannot run the reader as another user: this case needs root or a user without that capability`,
            );
            return;
          }
          t.diagnostic(
            ROOT
              ? `the reader runs as uid ${NOBODY}, the file's owner (the test runs as root, which reads any file)`
              : `the reader runs as uid ${process.getuid?.()}, the file's owner (not root: no other user to switch to, and none needed)`,
          );
          const loaded = loadInChild(file);
          assert.equal(loaded.error, undefined, loaded.error);
          assert.deepEqual(loaded.state, emptyState());
          problem = loaded.problem;
          if (ROOT) fs.chownSync(dir, 0, 0);
          fs.chmodSync(aside, 0o600);
          checkAside = () =>
            assert.equal(sha(fs.readFileSync(aside)), sha(content), 'the unreadable file is kept aside unchanged');
          checkAside();
          const run = await engineRecovers(new JsonFileStore(file, { now: () => NOW }));
          assert.deepEqual(run.watchesAtStart, [], 'the engine started clean');
        } else {
          if (what === 'directory') {
            fs.mkdirSync(file);
            fs.writeFileSync(path.join(file, 'notes.txt'), "something of the user's");
            checkAside = () =>
              assert.equal(
                fs.readFileSync(path.join(aside, 'notes.txt'), 'utf8'),
                "something of the user's",
                'the directory is kept aside whole',
              );
          } else {
            const content = what;
            fs.writeFileSync(file, content);
            checkAside = () =>
              assert.equal(sha(fs.readFileSync(aside)), sha(content), 'the bad bytes are kept aside unchanged');
          }
          const run = await engineRecovers(new JsonFileStore(file, { now: () => NOW }));
          const about = run.warnings.filter((m) => m.includes(file));
          assert.equal(about.length, 1, `reported once: ${JSON.stringify(about)}`);
          problem = about[0];
          assert.deepEqual(run.watchesAtStart, [], 'the engine started clean');
          checkAside();
        }
        // One clear message: where, what, where it went, and that the engine starts clean.
        assert.ok(problem, 'the corruption was reported');
        assert.ok(!problem.includes('\n') && problem.length < 800, `one short line: ${problem.slice(0, 300)}`);
        assert.ok(problem.startsWith(`state file ${file} was unusable (`), problem);
        assert.match(problem, reason);
        assert.ok(problem.endsWith(`; kept aside as ${aside}; starting clean`), problem);
        // The engine saved a good state next to the kept file, which is still there.
        await savedStateIsGood(new JsonFileStore(file));
        assert.deepEqual(fs.readdirSync(dir).sort(), [path.basename(file), path.basename(aside)]);
        checkAside();
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  test('Invariant: a good file with bad records keeps its good watches and disarms (a disarm with an unreadable time stays a disarm), reports each bad record, keeps the original aside; the engine recovers and never touches the disarmed thread', async () => {
    const dir = tempDir('cgr-fs-');
    const file = path.join(dir, 'state.json');
    try {
      const raw = JSON.parse(goodJson()) as { watches: Record<string, unknown>; disarmed: Record<string, unknown> };
      raw.watches['broken'] = { threadId: 'broken', title: 7 };
      raw.watches['stray'] = { ...(raw.watches['kept-1'] as object), threadId: 'someone-else' };
      raw.disarmed['thread-2'] = 'when the user said so';
      const content = Buffer.from(JSON.stringify(raw));
      fs.writeFileSync(file, content);
      // `status` (read-only) shows the good part and says what it leaves out.
      const status = statusOfFile(file, ['--socket', path.join(dir, 'no-daemon.sock')]);
      // No daemon in this test: the file is read all the same, and status says so (exit 4).
      assert.equal(status.status, 4, status.stderr);
      assert.deepEqual(
        (JSON.parse(status.stdout) as { watches: Array<{ threadId: string }> }).watches.map((w) => w.threadId),
        ['kept-1'],
      );
      assert.match(
        status.stderr,
        /^codex-goal-recovery: .*state\.json: 3 records could not be used \(watch "broken": .*\); not shown \(the runner keeps them aside and loads the rest\)\n$/,
      );
      assert.equal(sha(fs.readFileSync(file)), sha(content), 'status changes nothing');
      const run = await engineRecovers(new JsonFileStore(file, { now: () => NOW }), ['thread-2']);
      const problem = run.warnings.find((m) => m.includes(file)) ?? '';
      // "broken" lacks armedAt, state and updatedAt too (the fields a stored record may leave out
      // are not missing: src/store/watchRecord.ts).
      assert.match(
        problem,
        /^state file .*: 3 records could not be used \(watch "broken": title: Invalid input: expected string, received number \(\+3 more\); watch "stray": its threadId is "someone-else"; disarm of "thread-2": its time "when the user said so" is unreadable; the thread stays disarmed\); the file as it was is kept as .*\.corrupt-2026-11-30T09-08-07-654Z; the other 1 watch loaded$/,
      );
      assert.deepEqual(run.watchesAtStart, ['kept-1'], 'the good watch was loaded');
      assert.equal(sha(fs.readFileSync(`${file}${FILE_ASIDE_SUFFIX}`)), sha(content), 'the original is kept');
      const saved = await savedStateIsGood(new JsonFileStore(file));
      assert.deepEqual(saved.watches['kept-1']?.recovered, ['turn-0'], 'the good watch survived');
      assert.equal(saved.disarmed['kept-2'], NOW - 30_000);
      assert.equal(typeof saved.disarmed['thread-2'], 'number', 'still disarmed');
      assert.equal(saved.watches['thread-2']?.state.kind ?? 'disarmed', 'disarmed');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('corrupt state in globalState (the extension)', () => {
  for (const c of corruptions()) {
    if (c.memento === null || c.mementoReason === null) continue;
    test(`Invariant: ${c.name}: reported in one clear message, kept aside unchanged under its own key and never deleted; the engine starts clean, recovers normally and saves a good state`, async () => {
      const m = new Memento();
      await m.update(STATE_KEY, c.memento!.value);
      const original = sha(Buffer.from(JSON.stringify(m.get(STATE_KEY))));
      const run = await engineRecovers(new GlobalStateStore(m, () => NOW));
      const problems = run.warnings.filter((w) => w.startsWith('the stored watch state'));
      assert.equal(problems.length, 1, 'reported once');
      const problem = problems[0];
      assert.ok(!problem.includes('\n') && problem.length < 800, `one short line: ${problem.slice(0, 300)}`);
      assert.ok(problem.startsWith('the stored watch state could not be used: '), problem);
      assert.match(problem, c.mementoReason!);
      assert.ok(problem.endsWith(`; kept aside as "${MEMENTO_ASIDE_KEY}"; starting clean`), problem);
      assert.deepEqual(run.watchesAtStart, [], 'the engine started clean');
      assert.equal(sha(Buffer.from(JSON.stringify(m.get(MEMENTO_ASIDE_KEY)))), original, 'kept aside unchanged');
      await savedStateIsGood(new GlobalStateStore(m));
      assert.deepEqual([...m.keys()].sort(), [STATE_KEY, MEMENTO_ASIDE_KEY].sort());
    });
  }

  test('Invariant: a good value with bad records keeps its good watches and disarms, reports each bad record, keeps the original under its own key; the engine recovers and never touches the disarmed thread', async () => {
    const m = new Memento();
    const raw = JSON.parse(goodJson()) as { watches: Record<string, unknown>; disarmed: Record<string, unknown> };
    raw.watches['broken'] = { threadId: 'broken', state: { kind: 'nope' } };
    raw.disarmed['thread-2'] = null;
    await m.update(STATE_KEY, raw);
    const original = JSON.stringify(m.get(STATE_KEY));
    const run = await engineRecovers(new GlobalStateStore(m, () => NOW), ['thread-2']);
    const problem = run.warnings.find((w) => w.startsWith('the stored watch state')) ?? '';
    assert.match(
      problem,
      new RegExp(
        `^the stored watch state: 2 records could not be used \\(watch "broken": [^;]*; disarm of "thread-2": its time null is unreadable; the thread stays disarmed\\); the value as it was is kept as "${MEMENTO_ASIDE_KEY.replace(/\./g, '\\.')}"; the other 1 watch loaded$`,
      ),
    );
    assert.deepEqual(run.watchesAtStart, ['kept-1']);
    assert.equal(JSON.stringify(m.get(MEMENTO_ASIDE_KEY)), original);
    const saved = await savedStateIsGood(new GlobalStateStore(m));
    assert.deepEqual(saved.watches['kept-1']?.recovered, ['turn-0']);
    assert.equal(typeof saved.disarmed['thread-2'], 'number', 'still disarmed');
  });
});
