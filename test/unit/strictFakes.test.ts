// The test doubles themselves: the strict fake daemon fails the test on every rule it guards
// (each one sent on purpose through a raw connection, as a wrong engine would send it), a
// violation surfaces even in a test that never calls the harness again, and the fake clock runs
// real time (one timer at a time, the engine reacting between) and refuses delays Node cannot keep.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { FakeClock, MAX_TIMER_DELAY_MS } from '../support/fakeClock';
import { FakeDaemon, type FakeConnection, testTurn, type Violation, type WireMessage } from '../support/fakeDaemon';
import { makeHarness, type Harness } from '../support/engineHarness';
import { turns } from '../support/wait';

const dirs: string[] = [];
const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-strict-'));
  dirs.push(d);
  return d;
}

/** A raw client on one connection: writes lines as a (wrong) engine would, reads the daemon's lines. */
function raw(daemon: FakeDaemon): {
  c: FakeConnection;
  send(m: WireMessage): void;
  next(id: string | number): Promise<WireMessage>;
} {
  const c = daemon.accept();
  const seen: WireMessage[] = [];
  const waiting: Array<() => void> = [];
  readline.createInterface({ input: c.toClient }).on('line', (line) => {
    seen.push(JSON.parse(line) as WireMessage);
    for (const w of waiting.splice(0)) w();
  });
  return {
    c,
    send: (m) => {
      c.fromClient.write(`${JSON.stringify(m)}\n`);
    },
    next: (id) =>
      new Promise((resolve) => {
        const look = () => {
          const m = seen.find((x) => x.id === id && x.method === undefined);
          if (m) resolve(m);
          else waiting.push(look);
        };
        look();
      }),
  };
}

let ids = 0;
/** Sends one request and waits for its answer. */
async function call(r: ReturnType<typeof raw>, method: string, params: Record<string, unknown>): Promise<WireMessage> {
  const id = `req-${++ids}`;
  r.send({ id, method, params });
  return r.next(id);
}

const automatic = (threadId = 'thread-1') => ({ threadId, status: 'active', origin: 'automatic' });

/** Exactly one violation, of `rule`, taken (so nothing is thrown for it), and the request was refused. */
function expectOne(daemon: FakeDaemon, reply: WireMessage, rule: Violation['rule']): Violation {
  const taken = daemon.takeViolations();
  assert.deepEqual(
    taken.map((v) => v.rule),
    [rule],
    `violations: ${JSON.stringify(taken.map((v) => v.message))}`,
  );
  assert.ok(reply.error, `the request was answered as a success: ${JSON.stringify(reply)}`);
  assert.doesNotThrow(() => daemon.check(), 'a taken violation is still thrown');
  return taken[0];
}

describe('the strict fake daemon: each rule fires', () => {
  it('an automatic set on an active goal with a running turn', async () => {
    const daemon = new FakeDaemon(tmp());
    daemon.addThread();
    const r = raw(daemon);
    const v = expectOne(daemon, await call(r, 'thread/goal/set', automatic()), 'set-not-recoverable');
    assert.deepEqual(v.thread, { goal: 'active', turnId: 'turn-1', turnStatus: 'inProgress', loaded: true });
    assert.equal(daemon.thread().goal?.status, 'active');
    assert.equal(daemon.thread().turn.id, 'turn-1', 'the refused set started a turn');
  });

  for (const [what, goal, turn] of [
    ['a paused goal', 'paused', testTurn('turn-1', 'failed')],
    ['a complete goal', 'complete', testTurn('turn-1', 'completed')],
    ['a goal the model blocked (its turn completed)', 'blocked', testTurn('turn-1', 'completed')],
    ['a blocked goal whose turn is still running (Codex retrying)', 'blocked', testTurn('turn-1', 'inProgress')],
    ['a usage-limited goal whose turn is still running', 'usageLimited', testTurn('turn-1', 'inProgress')],
  ] as const) {
    it(`an automatic set on ${what}`, async () => {
      const daemon = new FakeDaemon(tmp());
      const t = daemon.addThread('thread-1', goal, turn);
      const r = raw(daemon);
      expectOne(daemon, await call(r, 'thread/goal/set', automatic()), 'set-not-recoverable');
      assert.equal(t.goal?.status, goal, 'the refused set changed the goal');
    });
  }

  it('an automatic set on a thread the daemon has not loaded', async () => {
    const daemon = new FakeDaemon(tmp());
    daemon.addThread();
    daemon.fail();
    daemon.thread().loaded = false;
    const r = raw(daemon);
    expectOne(daemon, await call(r, 'thread/goal/set', automatic()), 'set-not-loaded');
    assert.equal(daemon.thread().goal?.status, 'blocked');
  });

  it("a blocked goal whose newest turn failed takes one automatic set; a second for the same failed turn fails, also when the first one's reply was lost", async () => {
    for (const lost of [false, true]) {
      const daemon = new FakeDaemon(tmp());
      daemon.addThread();
      daemon.fail();
      daemon.lostReply = lost;
      const first = raw(daemon);
      const id = `first-${lost}`;
      first.send({ id, method: 'thread/goal/set', params: automatic() });
      if (lost) await new Promise<void>((resolve) => first.c.onClose(() => resolve()));
      else assert.ok((await first.next(id)).result, 'a valid set was refused');
      assert.deepEqual(daemon.takeViolations(), [], 'a valid set broke a rule');
      assert.equal(daemon.automaticSets.get('thread-1/turn-1'), 1);
      // Something puts the thread back as it was (a stale fake, a test that fails the same turn again).
      daemon.lostReply = false;
      daemon.fail('thread-1', 'turn-1');
      const second = raw(daemon);
      const v = expectOne(daemon, await call(second, 'thread/goal/set', automatic()), 'set-duplicate');
      assert.match(v.message, /second automatic set for the failed turn turn-1/);
      assert.equal(daemon.automaticSets.get('thread-1/turn-1'), 1, 'the refused duplicate was counted as effective');
    }
  });

  for (const [what, params] of [
    [
      'a key beyond {threadId,status,origin}',
      { threadId: 'thread-1', status: 'active', origin: 'automatic', objective: 'something else' },
    ],
    ['an automatic set to paused', { threadId: 'thread-1', status: 'paused', origin: 'automatic' }],
    ['no origin', { threadId: 'thread-1', status: 'active' }],
    ['another origin', { threadId: 'thread-1', status: 'active', origin: 'system' }],
  ] as const) {
    it(`a set with ${what}`, async () => {
      const daemon = new FakeDaemon(tmp());
      daemon.addThread();
      daemon.fail();
      const r = raw(daemon);
      expectOne(daemon, await call(r, 'thread/goal/set', params), 'set-beyond-status');
      assert.equal(daemon.thread().goal?.status, 'blocked');
    });
  }

  it("a person's own set (origin user, from Pause goal) is served", async () => {
    const daemon = new FakeDaemon(tmp());
    daemon.addThread();
    const r = raw(daemon);
    assert.ok((await call(r, 'thread/goal/set', { threadId: 'thread-1', status: 'paused', origin: 'user' })).result);
    assert.deepEqual(daemon.takeViolations(), []);
    assert.equal(daemon.thread().goal?.status, 'paused');
  });

  it('an unexpected RPC', async () => {
    const daemon = new FakeDaemon(tmp());
    daemon.addThread();
    const r = raw(daemon);
    const reply = await call(r, 'turn/start', { threadId: 'thread-1', input: [] });
    expectOne(daemon, reply, 'unexpected-rpc');
    assert.equal((reply.error as { code: number }).code, -32601);
  });

  it('an answer to a server request (an approval), and one to a request the daemon never made', async () => {
    const daemon = new FakeDaemon(tmp());
    daemon.addThread();
    const r = raw(daemon);
    await call(r, 'initialize', { clientInfo: { name: 'raw', version: '0' } });
    daemon.serverRequest('approval-1', 'item/commandExecution/requestApproval', {
      threadId: 'thread-1',
      turnId: 'turn-1',
      itemId: 'i',
    });
    r.send({ id: 'approval-1', result: { decision: 'decline' } });
    r.send({ id: 'never-asked', result: null });
    await call(r, 'thread/loaded/list', {}); // the answers were read before this request
    const taken = daemon.takeViolations();
    assert.deepEqual(
      taken.map((v) => v.rule),
      ['answered-server-request', 'answered-server-request'],
    );
    assert.match(taken[0].message, /answered server request approval-1/);
  });
});

describe('the strict fake daemon: a violation fails the test', () => {
  it('check() throws it, and keeps throwing it; the judge can allow exactly the case it forgives', async () => {
    const daemon = new FakeDaemon(tmp());
    daemon.addThread();
    daemon.human('thread-1', 'paused');
    const seen: Violation[] = [];
    // The transport property's one forgiven case: the set left before the person's pause reached the engine.
    daemon.judge = (v) => {
      seen.push(v);
      return v.rule === 'set-not-recoverable' && v.thread?.goal === 'paused' ? 'allow' : 'fail';
    };
    const r = raw(daemon);
    const allowed = await call(r, 'thread/goal/set', automatic());
    assert.ok(allowed.result, 'an allowed set was refused');
    assert.equal(daemon.thread().goal?.status, 'active', 'an allowed set is served as usual');
    assert.doesNotThrow(() => daemon.check());
    assert.deepEqual(daemon.violations, []);
    const refused = await call(r, 'thread/goal/set', { ...automatic(), objective: 'x' });
    assert.ok(refused.error);
    assert.deepEqual(
      seen.map((v) => v.rule),
      ['set-not-recoverable', 'set-beyond-status'],
    );
    assert.throws(() => daemon.check(), /strict fake daemon saw a broken rule \(set-beyond-status\)/);
    assert.throws(() => daemon.check(), /set-beyond-status/, 'a second check() did not throw it again');
    daemon.takeViolations();
  });

  it("the harness's settle, advance, reconcile and cleanup throw it", async () => {
    for (const step of ['settle', 'advance', 'reconcile', 'cleanup'] as const) {
      const dir = tmp();
      const daemon = new FakeDaemon(dir);
      daemon.addThread();
      const h = await makeHarness({ dir, daemon });
      const r = raw(daemon);
      await call(r, 'thread/goal/set', automatic());
      const run =
        step === 'settle'
          ? h.settle()
          : step === 'advance'
            ? h.advance(1_000)
            : step === 'reconcile'
              ? h.reconcile()
              : h.cleanup();
      await assert.rejects(
        run,
        /strict fake daemon saw a broken rule \(set-not-recoverable\)/,
        `${step} did not throw it`,
      );
      if (step !== 'cleanup') await h.engine.stop();
      daemon.takeViolations();
    }
  });

  it('a test that never calls the harness again still fails: the violation is thrown where node:test reports it for that test', () => {
    // Run in a child test process: its one test makes a forbidden set and ends without a harness call.
    const fixture = path.join(__dirname, '..', 'support', 'strictBackstopFixture.js');
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT; // a test runner of its own, not a subtest of this one
    const child = spawnSync(process.execPath, ['--test', '--test-reporter=tap', fixture], {
      encoding: 'utf8',
      timeout: 60_000,
      env,
    });
    const out = `${child.stdout}\n${child.stderr}`;
    assert.match(out, /not ok 1 - makes a forbidden set and never calls the harness again/, out);
    assert.match(out, /strict fake daemon saw a broken rule \(set-not-recoverable\)/, out);
    assert.match(out, /# fail 1/, out);
    assert.match(out, /ok 2 - a clean test next to it passes/, out);
  });
});

describe('the fake clock: real time', () => {
  it('a timer set in reaction to an earlier one, due before the end, fires within the same advance, at its own time', async () => {
    const clock = new FakeClock();
    const fired: Array<[string, number]> = [];
    clock.setTimer(() => {
      fired.push(['first', clock.elapsed()]);
      // The reaction comes a few turns of the loop later (streams, a read), then sets a timer.
      void (async () => {
        await turns(3);
        clock.setTimer(() => {
          fired.push(['second', clock.elapsed()]);
          void Promise.resolve().then(() => clock.setTimer(() => fired.push(['third', clock.elapsed()]), 5_000));
        }, 1_000);
      })();
    }, 1_000);
    await clock.advance(10_000);
    assert.deepEqual(fired, [
      ['first', 1_000],
      ['second', 2_000],
      ['third', 7_000],
    ]);
    assert.equal(clock.elapsed(), 10_000);
  });

  it('what is not due by the end does not fire; time ends exactly at the end', async () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    clock.setTimer(() => fired.push(clock.elapsed()), 10_000);
    clock.setTimer(() => fired.push(clock.elapsed()), 10_001);
    await clock.advance(10_000);
    assert.deepEqual(fired, [10_000]);
    assert.equal(clock.nextIn(), 1);
  });

  it('refuses a delay Node cannot keep (over 2^31-1 ms, or not a number), and keeps 2^31-1 ms', async () => {
    const clock = new FakeClock();
    assert.throws(
      () => clock.setTimer(() => undefined, MAX_TIMER_DELAY_MS + 1),
      /RangeError|Node cannot keep a delay over 2147483647 ms/,
    );
    assert.throws(() => clock.setTimer(() => undefined, 30 * 24 * 60 * 60_000), RangeError);
    assert.throws(() => clock.setTimer(() => undefined, Number.NaN), RangeError);
    let fired = false;
    clock.setTimer(() => {
      fired = true;
    }, MAX_TIMER_DELAY_MS);
    await clock.advance(MAX_TIMER_DELAY_MS - 1);
    assert.equal(fired, false);
    await clock.advance(1);
    assert.equal(fired, true);
  });

  it('a timer that re-arms itself without time passing is a spin: the advance fails', async () => {
    const clock = new FakeClock();
    const spin = () => {
      clock.setTimer(spin, 0);
    };
    clock.setTimer(spin, 10);
    await assert.rejects(clock.advance(1_000), /a spin/);
  });

  it('jump moves only the wall clock; suspend moves both and what fell due fires late, on the next advance', async () => {
    const clock = new FakeClock();
    const fired: Array<[number, number]> = [];
    clock.setTimer(() => fired.push([clock.elapsed(), clock.now()]), 1_000);
    const wall = clock.now();
    clock.jump(-60_000);
    assert.equal(clock.now(), wall - 60_000);
    assert.equal(clock.elapsed(), 0);
    clock.suspend(5_000);
    assert.deepEqual(fired, [], 'a suspend fired a timer');
    await clock.advance(0);
    assert.deepEqual(fired, [[5_000, wall - 55_000]]);
  });
});
