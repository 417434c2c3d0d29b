// The takeover lock, as rules: of candidates racing for it only one holds it; a live owner's lock
// is never broken (only a dead owner's, one past LOCK_STALE_MS, or one that does not read as a
// lock); a lock taken again between a breaker's look and its break is put back. Real files in a
// temporary directory, real processes as owners (the parent process, alive while the tests run,
// and one child that has exited, spawned once); where a rule is about a race at one exact step,
// the other candidate's move is made at that step (a wrapper around the one fs call).
import { after, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LOCK_STALE_MS, TakeoverLock } from '../../src/leader/takeoverLock';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function world(): { dir: string; lockPath: string; lock: () => TakeoverLock; logs: string[] } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-lock-'));
  dirs.push(dir);
  const lockPath = path.join(dir, 'n.takeover');
  const logs: string[] = [];
  return { dir, lockPath, logs, lock: () => new TakeoverLock(lockPath, (m) => logs.push(m)) };
}

/** A process other than this one that is alive until the tests end: the one that runs them. */
const liveOwner = (): number => process.ppid;

let dead: Promise<number> | undefined;
/** The pid of a process that has exited (one child, spawned once). */
function deadOwner(): Promise<number> {
  dead ??= new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    child.once('exit', () => resolve(child.pid!));
  });
  return dead;
}

const lockText = (pid: number | string, at: number | string = Date.now()) => `${pid} feedf00d ${at}\n`;
const read = (p: string) => fs.readFileSync(p, 'utf8');

describe('takeover lock: one holder', () => {
  it('of candidates racing for a free lock exactly one holds it; once released, the next one can', async () => {
    const w = world();
    const got = await Promise.all(Array.from({ length: 6 }, () => w.lock().acquire()));
    assert.equal(got.filter((g) => g !== null).length, 1);
    assert.equal(await w.lock().acquire(), null, 'held: a newcomer waits');
    await got.find((g) => g !== null)!.release();
    assert.equal(fs.existsSync(w.lockPath), false);
    assert.ok(await w.lock().acquire());
  });

  it("a live owner's fresh lock is never broken", async () => {
    const w = world();
    const text = lockText(liveOwner());
    fs.writeFileSync(w.lockPath, text);
    assert.equal(await w.lock().acquire(), null);
    assert.equal(read(w.lockPath), text);
    assert.deepEqual(fs.readdirSync(w.dir), ['n.takeover'], 'nothing left behind');
  });

  it('the lock is private to its owner (0600) and leaves no temporary file', async () => {
    const w = world();
    const held = await w.lock().acquire();
    assert.ok(held);
    assert.equal(fs.statSync(w.lockPath).mode & 0o777, 0o600);
    assert.deepEqual(fs.readdirSync(w.dir), ['n.takeover']);
    assert.match(read(w.lockPath), new RegExp(`^${process.pid} [0-9a-f]+ \\d+\\n$`));
  });
});

describe('takeover lock: stale locks', () => {
  it("a dead owner's lock is broken and taken at once, and the log says so", async () => {
    const w = world();
    const pid = await deadOwner();
    fs.writeFileSync(w.lockPath, lockText(pid));
    assert.ok(await w.lock().acquire());
    assert.match(read(w.lockPath), new RegExp(`^${process.pid} `));
    assert.deepEqual(w.logs, [`leader election: broke a stale takeover lock (owner pid ${pid}, dead)`]);
    assert.deepEqual(fs.readdirSync(w.dir), ['n.takeover']);
  });

  it(`a live owner's lock is kept up to LOCK_STALE_MS (${LOCK_STALE_MS} ms) and broken one ms past it`, async (t) => {
    const w = world();
    const pid = liveOwner();
    const now = Date.now();
    t.mock.timers.enable({ apis: ['Date'], now });
    fs.writeFileSync(w.lockPath, lockText(pid, now - LOCK_STALE_MS));
    assert.equal(await w.lock().acquire(), null);
    fs.writeFileSync(w.lockPath, lockText(pid, now - LOCK_STALE_MS - 1));
    assert.ok(await w.lock().acquire());
    assert.deepEqual(w.logs, [
      `leader election: broke a stale takeover lock (owner pid ${pid}, ${LOCK_STALE_MS + 1} ms old)`,
    ]);
  });

  it('a lock that does not read as one (no owner, no time) is broken', async () => {
    for (const text of ['garbage\n', `${liveOwner()} feedf00d\n`]) {
      const w = world();
      fs.writeFileSync(w.lockPath, text);
      assert.ok(await w.lock().acquire(), JSON.stringify(text));
    }
  });
});

/** Runs `before` just before the first call of `fs.promises[name]` on `p` (a rival's move). */
function rivalBefore(t: TestContext, name: 'rename' | 'readFile', p: string, before: () => void): void {
  const real = fs.promises[name] as (...args: unknown[]) => Promise<unknown>;
  let done = false;
  t.mock.method(fs.promises, name, (...args: unknown[]) => {
    if (!done && args[0] === p) {
      done = true;
      before();
    }
    return real.apply(fs.promises, args);
  });
}

describe('takeover lock: races between breakers', () => {
  it('a stale lock released while a candidate looks at it is taken at once', async (t) => {
    const w = world();
    fs.writeFileSync(w.lockPath, lockText(liveOwner()));
    rivalBefore(t, 'readFile', w.lockPath, () => fs.unlinkSync(w.lockPath));
    assert.ok(await w.lock().acquire());
  });

  it('a stale lock another breaker removed first is taken', async (t) => {
    const w = world();
    fs.writeFileSync(w.lockPath, lockText(await deadOwner()));
    rivalBefore(t, 'rename', w.lockPath, () => fs.unlinkSync(w.lockPath));
    assert.ok(await w.lock().acquire());
    assert.deepEqual(fs.readdirSync(w.dir), ['n.takeover']);
  });

  it('a lock taken again by a live candidate between the look and the break is put back, not broken', async (t) => {
    const w = world();
    fs.writeFileSync(w.lockPath, lockText(await deadOwner()));
    const fresh = lockText(liveOwner());
    rivalBefore(t, 'rename', w.lockPath, () => {
      fs.unlinkSync(w.lockPath); // another breaker broke the stale one,
      fs.writeFileSync(w.lockPath, fresh); // and a live candidate took the lock
    });
    assert.equal(await w.lock().acquire(), null);
    assert.equal(read(w.lockPath), fresh);
    assert.deepEqual(fs.readdirSync(w.dir), ['n.takeover'], 'nothing left aside');
    assert.deepEqual(w.logs, []);
  });

  it('a lock moved by mistake whose place was taken again is not put back over the newer one (logged)', async (t) => {
    const w = world();
    fs.writeFileSync(w.lockPath, lockText(await deadOwner()));
    const fresh = lockText(liveOwner(), Date.now() - 1);
    const newer = lockText(liveOwner());
    const real = fs.promises.rename;
    t.mock.method(fs.promises, 'rename', async (from: string, to: string) => {
      fs.writeFileSync(w.lockPath, fresh);
      await real(from, to);
      fs.writeFileSync(w.lockPath, newer);
    });
    assert.equal(await w.lock().acquire(), null);
    assert.equal(read(w.lockPath), newer);
    assert.deepEqual(fs.readdirSync(w.dir), ['n.takeover']);
    assert.deepEqual(w.logs, ['leader election: could not restore a takeover lock moved by mistake']);
  });
});

describe('takeover lock: release', () => {
  it('removes only its own lock: one broken and taken by another meanwhile stays, and that is logged', async () => {
    const w = world();
    const held = await w.lock().acquire();
    const other = lockText(liveOwner());
    fs.writeFileSync(w.lockPath, other);
    await held!.release();
    assert.equal(read(w.lockPath), other);
    assert.deepEqual(w.logs, ['leader election: the takeover lock was no longer ours at release']);
    fs.unlinkSync(w.lockPath);
    await held!.release(); // gone: nothing to do
  });
});

describe('takeover lock: errors are not taken for a held lock', () => {
  it('a lock path that cannot be read is an error', async () => {
    const w = world();
    fs.mkdirSync(w.lockPath);
    await assert.rejects(w.lock().acquire(), { code: 'EISDIR' });
  });

  it('a failing link or rename is an error', async (t) => {
    const w = world();
    const eio = () => Promise.reject(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
    const link = t.mock.method(fs.promises, 'link', eio);
    await assert.rejects(w.lock().acquire(), { code: 'EIO' });
    link.mock.restore();
    fs.writeFileSync(w.lockPath, lockText(await deadOwner()));
    t.mock.method(fs.promises, 'rename', eio);
    await assert.rejects(w.lock().acquire(), { code: 'EIO' });
    assert.deepEqual(fs.readdirSync(w.dir), ['n.takeover'], 'no temporary file left');
  });
});
