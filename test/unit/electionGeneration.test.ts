// The generation fence of the election, as rules: an election stopped (superseded) while its
// attempt is under way does nothing further: it neither leads nor follows, and a stopped follower
// does not report a lost leader or elect again. Real elections on real sockets in a temporary
// directory; the stop is made at the exact step it races with (a wrapper around that fs call).
import { after, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LeaderElection } from '../../src/leader/election';
import { tempDir, until } from '../support/wait';

const NAME = 'gen-test';
const elections: LeaderElection[] = [];
after(async () => {
  await Promise.all(elections.map((e) => e.stop()));
});

function election(dir: string, checkMs = 60_000): { e: LeaderElection; logs: string[]; led: number } {
  const logs: string[] = [];
  const e = new LeaderElection({ dir, name: NAME, checkMs, log: (m) => logs.push(m) });
  elections.push(e);
  const t = { e, logs, led: 0 };
  e.onLeader(() => t.led++);
  return t;
}

/** Stops `e` just before the first call of `fs.promises[name]` on `p` (the step it races with). */
function stopBefore(
  t: TestContext,
  e: LeaderElection,
  name: 'link' | 'lstat' | 'open',
  p: string,
): { stopped: () => Promise<void> | undefined } {
  const real = fs.promises[name] as (...args: unknown[]) => Promise<unknown>;
  let stopped: Promise<void> | undefined;
  t.mock.method(fs.promises, name, (...args: unknown[]) => {
    if (stopped === undefined && args[name === 'link' ? 1 : 0] === p) stopped = e.stop();
    return real.apply(fs.promises, args);
  });
  return { stopped: () => stopped };
}

describe('election generations', () => {
  it('an election stopped just as its candidate takes the path does not lead, and lets the path go', async (t) => {
    const dir = tempDir('cgr-gen-', { realpath: true });
    const a = election(dir);
    const sock = path.join(dir, `${NAME}.sock`);
    const stop = stopBefore(t, a.e, 'link', sock);
    await a.e.start();
    assert.ok(stop.stopped(), 'the stop raced the link');
    await stop.stopped();
    assert.equal(a.e.role, 'stopped');
    assert.equal(a.led, 0);
    assert.equal(a.e.server, undefined);
    assert.equal(fs.existsSync(sock), false, 'the path is free for the next candidate');
  });

  it('an election stopped while its candidate begins its term does not lead', async (t) => {
    const dir = tempDir('cgr-gen-', { realpath: true });
    const a = election(dir);
    const stop = stopBefore(t, a.e, 'open', path.join(dir, `${NAME}.leader`));
    await a.e.start();
    assert.ok(stop.stopped(), 'the stop raced the term');
    await stop.stopped();
    assert.equal(a.e.role, 'stopped');
    assert.equal(a.led, 0);
    assert.equal(a.e.term, undefined);
    assert.equal(a.e.fence(), 'this engine no longer leads');
  });

  it('an election stopped just as it finds a live leader does not follow it', async (t) => {
    const dir = tempDir('cgr-gen-', { realpath: true });
    const leader = election(dir);
    await leader.e.start();
    const b = election(dir);
    const stop = stopBefore(t, b.e, 'lstat', path.join(dir, `${NAME}.sock`));
    await b.e.start();
    assert.ok(stop.stopped(), 'the stop raced the look at the path');
    await stop.stopped();
    assert.equal(b.e.role, 'stopped');
    assert.equal(b.e.connection, undefined);
    assert.equal(leader.e.role, 'leader');
    await leader.e.stop();
  });

  it('a follower that is stopped does not report a lost leader, nor elect again', async () => {
    const dir = tempDir('cgr-gen-', { realpath: true });
    const leader = election(dir);
    await leader.e.start();
    const b = election(dir);
    await b.e.start();
    assert.equal(b.e.role, 'follower');
    const server = leader.e.server!;
    await until('the follower', () => server.followerCount === 1, Infinity);
    await b.e.stop();
    await until('no follower', () => server.followerCount === 0, Infinity);
    assert.deepEqual(
      b.logs.filter((l) => /lost the leader/.test(l)),
      [],
    );
    assert.equal(b.e.role, 'stopped');
    await leader.e.stop();
  });
});
