// The leader's lease and tenure, as rules: a leader acts only within LEASE_MS of its last renewal
// on its own monotonic clock; a lease that ran out is never revived; each new leader's term is
// above every term known; a renewal lands in the leader's own file, never a newer leader's, and
// one the file cannot take is logged while the term goes on; a read of the file leaves none open. The
// lease's clock is the monotonic time it is given (here a number the test moves); the tenure runs
// on real timers renewing every RENEW (30 ms, not the shipped RENEW_MS of 1 s: the rules are
// about the order of renewals and the lease, not their length, and a file of rules must end
// fast), its files in a temporary directory.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Lease, LEASE_MS, LeaderFileWriter, readLeaderFile, seconds, type LeaderFile } from '../../src/leader/lease';
import { Tenure, type TenureOptions } from '../../src/leader/tenure';
import { sleep, tempDir, until } from '../support/wait';

/** The tenure's renewal period in these tests. */
const RENEW = 30;

/** How long a wait for a renewal lasts: one that never comes fails the test, not hangs it. */
const WAIT = 2000;

/** How many files this process holds open. */
const openFiles = (): number => fs.readdirSync('/dev/fd').length;

const content = (term: number, extra: Partial<LeaderFile> = {}): LeaderFile => ({
  term,
  pid: 42,
  who: 'window',
  socket: '1:2',
  since: 1000,
  renewedAt: 1000,
  ...extra,
});

describe('lease', () => {
  it('holds up to LEASE_MS since the last renewal and is lost one ms past it, for good', () => {
    let t = 100;
    const lease = new Lease(LEASE_MS, () => t);
    t += LEASE_MS;
    assert.equal(lease.check(), null);
    assert.equal(lease.sinceRenewalMs(), LEASE_MS);
    assert.equal(lease.renew(), true, 'renewed in time');
    t += LEASE_MS + 1;
    const lost = lease.check();
    assert.equal(
      lost,
      'this engine did not run for 5.0 s, past its 5.0 s lease (stopped or blocked): another engine may lead now',
    );
    assert.equal(lease.renew(), false, 'a late renewal revives nothing');
    t += 5000;
    assert.equal(lease.check(), lost, 'still lost, for the first reason');
  });

  it('a renewal restarts the count; a revoke ends the lease at once, with its first reason', () => {
    let t = 0;
    const lease = new Lease(1000, () => t);
    t = 900;
    lease.renew();
    t = 1800;
    assert.equal(lease.check(), null, 'counted from the renewal');
    lease.revoke('path lost');
    lease.revoke('stopped');
    assert.equal(lease.check(), 'path lost');
    assert.equal(lease.renew(), false);
  });

  it('counts on the monotonic clock by default', () => {
    const lease = new Lease();
    assert.equal(lease.leaseMs, LEASE_MS);
    assert.ok(lease.sinceRenewalMs() >= 0 && lease.sinceRenewalMs() < LEASE_MS);
    assert.equal(lease.check(), null);
  });

  it('seconds for people: one decimal under 10 s, whole seconds from 10 s', () => {
    assert.deepEqual([1500, 9949, 10_000, 12_345].map(seconds), ['1.5', '9.9', '10', '12']);
  });
});

describe('leader file', () => {
  it('is created whole (no temporary file left), private, one padded line; read back as it was', async () => {
    const dir = tempDir('cgr-lease-');
    const file = path.join(dir, 'n.leader');
    const w = await LeaderFileWriter.create(file, content(3));
    assert.equal(w.term, 3);
    assert.deepEqual(fs.readdirSync(dir), ['n.leader']);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    const text = fs.readFileSync(file, 'utf8');
    assert.equal(text.length, 513);
    assert.match(text, /^\{.*\} +\n$/);
    assert.deepEqual(await readLeaderFile(file), content(3));
    await w.close();
  });

  it("a renewal lands in the leader's own file, never in a newer leader's that replaced it", async () => {
    const dir = tempDir('cgr-lease-');
    const file = path.join(dir, 'n.leader');
    const old = await LeaderFileWriter.create(file, content(1));
    await old.renew(2000);
    assert.equal((await readLeaderFile(file))?.renewedAt, 2000);
    const newer = await LeaderFileWriter.create(file, content(2, { who: 'newer' }));
    await old.renew(3000);
    assert.deepEqual(await readLeaderFile(file), content(2, { who: 'newer' }));
    await old.close();
    await old.close();
    await old.renew(4000); // closed: nothing written, no error
    await newer.close();
  });

  it('none, or one that does not read as a leader file, is null; an unreadable path is an error', async () => {
    const dir = tempDir('cgr-lease-');
    const file = path.join(dir, 'n.leader');
    assert.equal(await readLeaderFile(file), null);
    for (const text of ['{"term": 1', '{"term": -1}', 'x'.repeat(5000)]) {
      fs.writeFileSync(file, text);
      assert.equal(await readLeaderFile(file), null, text.slice(0, 20));
    }
    fs.writeFileSync(file, JSON.stringify(content(7)) + ' '.repeat(5000));
    assert.deepEqual(await readLeaderFile(file), content(7), 'padding past the first 4 KiB is not read');
    await assert.rejects(readLeaderFile(dir), { code: 'EISDIR' });
  });

  it('a read leaves no file open; a writer holds one until closed, and closing it again changes nothing', async () => {
    const dir = tempDir('cgr-lease-');
    const file = path.join(dir, 'n.leader');
    const before = openFiles();
    const w = await LeaderFileWriter.create(file, content(1));
    assert.equal(openFiles(), before + 1, "the writer keeps its own file's handle");
    for (let i = 0; i < 3; i++) assert.equal((await readLeaderFile(file))?.term, 1);
    assert.equal(openFiles(), before + 1, 'no read left a file open');
    await w.close();
    assert.equal(openFiles(), before);
    await w.close();
    assert.equal(openFiles(), before);
  });

  it('a file that cannot be created is an error, and leaves no temporary file', async () => {
    const dir = tempDir('cgr-lease-');
    fs.mkdirSync(path.join(dir, 'n.leader'));
    await assert.rejects(LeaderFileWriter.create(path.join(dir, 'n.leader'), content(1)));
    assert.deepEqual(fs.readdirSync(dir), ['n.leader']);
  });
});

function tenureOptions(dir: string, extra: Partial<TenureOptions> = {}) {
  const events: string[] = [];
  const opts: TenureOptions = {
    filePath: path.join(dir, 'n.leader'),
    seenTerm: 0,
    leaseMs: LEASE_MS,
    renewMs: RENEW,
    who: 'runner',
    socketKey: '9:9',
    server: { setTerm: (term) => events.push(`term ${term}`), beat: () => events.push('beat') },
    log: (m) => events.push(`log ${m}`),
    lost: (reason) => events.push(`lost ${reason}`),
    ...extra,
  };
  return { opts, events };
}

describe('tenure', () => {
  it("takes a term above the leader file's and every term heard of, and writes it with who leads", async () => {
    const dir = tempDir('cgr-lease-');
    const file = path.join(dir, 'n.leader');
    fs.writeFileSync(file, JSON.stringify(content(4)));
    const a = tenureOptions(dir, { seenTerm: 2 });
    const first = await Tenure.begin(a.opts);
    first.end('test');
    assert.equal(first.term, 5);
    assert.deepEqual(a.events, ['term 5']);
    const written = (await readLeaderFile(file))!;
    assert.deepEqual([written.term, written.pid, written.who, written.socket], [5, process.pid, 'runner', '9:9']);
    assert.equal(written.since, written.renewedAt);
    const b = tenureOptions(dir, { seenTerm: 9 });
    const second = await Tenure.begin(b.opts);
    second.end('test');
    assert.equal(second.term, 10);
  });

  it('renews every renewMs (a beat to each follower, the time in the file) until it ends with its lease', async () => {
    const dir = tempDir('cgr-lease-');
    const t = tenureOptions(dir);
    const t0 = Date.now();
    const tenure = await Tenure.begin(t.opts);
    assert.equal(tenure.check(), null);
    await until('two beats', () => t.events.filter((e) => e === 'beat').length === 2, WAIT);
    assert.ok(Date.now() - t0 >= 2 * RENEW - 2);
    const renewedAt = () => Number(/"renewedAt":(\d+)/.exec(fs.readFileSync(t.opts.filePath, 'utf8'))?.[1]);
    await until('a renewal in the file', () => renewedAt() > t0 + RENEW / 2, WAIT);
    tenure.end('stepped down');
    tenure.end('again');
    assert.equal(tenure.check(), 'this engine no longer leads (stepped down)');
    const beats = t.events.length;
    await sleep(RENEW * 4); // a renewal would have come by now
    assert.equal(t.events.length, beats, 'no renewal after the end');
  });

  it('a renewal that comes after the lease ran out renews nothing: the leader is told it lost', async () => {
    const dir = tempDir('cgr-lease-');
    const t = tenureOptions(dir, { leaseMs: 200, renewMs: 300 });
    const tenure = await Tenure.begin(t.opts);
    await until('the loss', () => t.events.some((e) => e.startsWith('lost ')), WAIT);
    assert.deepEqual(t.events.slice(1), [`lost ${tenure.check()}`], 'no beat');
    assert.match(tenure.check()!, /did not run for 0\.[3-9] s, past its 0\.2 s lease/);
    tenure.revoke('ignored');
    tenure.end('test');
  });

  it('a revoke ends the lease at once; a leader file it cannot read or write is logged: the term goes on', async () => {
    const dir = tempDir('cgr-lease-');
    fs.mkdirSync(path.join(dir, 'n.leader'));
    const t = tenureOptions(dir, { seenTerm: 3 });
    const tenure = await Tenure.begin(t.opts);
    assert.equal(tenure.term, 4);
    assert.equal(t.events.length, 3);
    assert.match(t.events[0], /^log leader election: cannot read the leader file .*n\.leader: EISDIR/);
    assert.equal(t.events[1], 'term 4');
    assert.match(t.events[2], /^log leader election: cannot write the leader file .*n\.leader: /);
    await until('a beat', () => t.events.length === 4, WAIT);
    assert.equal(t.events[3], 'beat', 'renewed without a file');
    tenure.revoke('its socket path was removed');
    assert.equal(tenure.check(), 'its socket path was removed');
    tenure.end('test');
  });

  it('a renewal the leader file cannot take is logged; the lease and the beats go on', async (t) => {
    const dir = tempDir('cgr-lease-');
    const e = tenureOptions(dir);
    const enospc = () => Promise.reject(new Error('ENOSPC: no space left on device'));
    t.mock.method(LeaderFileWriter.prototype, 'renew', enospc);
    const tenure = await Tenure.begin(e.opts);
    await until('two beats', () => e.events.filter((x) => x === 'beat').length === 2, WAIT);
    assert.equal(tenure.check(), null);
    tenure.end('test');
    assert.deepEqual(e.events.slice(0, 3), [
      'term 1',
      'beat',
      'log leader election: cannot renew the leader file: ENOSPC: no space left on device',
    ]);
  });
});
