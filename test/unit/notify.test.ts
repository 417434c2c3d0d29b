// `watch --notify PROGRAM` (src/runner/notify.ts): which decision runs the program and with what
// JSON (a row per decision type: a new type needs one), how the flag's value is read, and the
// runs themselves, with real programs (Node scripts in a temp dir): the JSON as the last
// argument, a failure said once until a run works again, a program that cannot start, the
// timeout stopping the program's whole process group, the bound on runs at once, the stop.
// The runs have 5 s (shipped 10 s: the option the runner sets from
// CODEX_GOAL_RECOVERY_NOTIFY_TIMEOUT_S), the timeout's own test 1.5 s, so that a hanging program
// is stopped within the test while a Node script still has the time to start on a busy machine.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { budgetWhy } from '../../src/core/stepRules';
import type { Decision, DecisionType } from '../../src/model/decision';
import { parseCli, UsageError } from '../../src/runner/args';
import { Notifier, notifyPayload, parseNotifyCommand, TEXT_MAX, type NotifyPayload } from '../../src/runner/notify';
import { VERSION } from '../../src/version';
import { tempDir, until } from '../support/wait';

const t = { threadId: 'th' };
/** One decision of each type, and whether it runs the program. */
const ROWS: Record<DecisionType, [Decision, boolean]> = {
  'gave-up': [{ type: 'gave-up', ...t, attempts: 6, failedTurnId: 'turn-9' }, true],
  attention: [{ type: 'attention', ...t, reason: 'a request the provider refuses (HTTP 400)' }, true],
  warning: [{ type: 'warning', message: 'disk full', ...t }, false],
  connection: [{ type: 'connection', state: 'disconnected', detail: 'gone' }, false],
  skipped: [{ type: 'skipped', ...t, reason: 'global rate limit' }, false],
  loaded: [{ type: 'loaded', ...t, reason: 'a client loaded it' }, false],
  armed: [{ type: 'armed', ...t, title: 'g' }, false],
  backoff: [
    { type: 'backoff', ...t, attempt: 1, failedTurnId: 'x', dueAt: 1, delayMs: 1, error: 'internalServerError' },
    false,
  ],
  recovering: [{ type: 'recovering', ...t, attempt: 1, failedTurnId: 'x' }, false],
  recovered: [{ type: 'recovered', ...t, attempt: 1, failedTurnId: 'x', how: 'set' }, false],
  disarmed: [{ type: 'disarmed', ...t, reason: 'by the user' }, false],
  rearmed: [{ type: 'rearmed', ...t, reason: 'by the user' }, false],
  probe: [{ type: 'probe', ...t, group: 'mock/m · server error', others: 9 }, false],
  released: [{ type: 'released', ...t, by: 'p', reason: 'answered' }, false],
  elsewhere: [{ type: 'elsewhere', ...t, status: 'blocked', reason: 'in the desktop app' }, false],
};

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);
const RUNNING = { kind: 'running' } as const;
const CTX = {
  now: NOW,
  target: 'socket /h/app-server-control.sock',
  version: '9.9.9',
  watch: { title: 'fix the build', state: RUNNING },
};
const NONE = { reason: null, attempts: null, failedTurnId: null, used: null, limit: null };
const BASE = {
  source: 'codex-goal-recovery',
  version: '9.9.9',
  ts: '2026-01-02T03:04:05.000Z',
  target: CTX.target,
  threadId: 'th',
  title: 'fix the build',
};

describe('which decision runs the program, with what JSON', () => {
  for (const [type, [d, runs]] of Object.entries(ROWS))
    it(`${type}: ${runs ? 'runs it' : 'never'}`, () => {
      assert.equal(notifyPayload(d, CTX) !== null, runs);
    });

  it('a give-up: its attempts and last failed turn', () => {
    assert.deepEqual(notifyPayload(ROWS['gave-up'][0], CTX), {
      ...BASE,
      ...NONE,
      type: 'gave-up',
      attempts: 6,
      failedTurnId: 'turn-9',
    });
  });

  it('a goal that needs a person: its reason', () => {
    assert.deepEqual(notifyPayload(ROWS.attention[0], CTX), {
      ...BASE,
      ...NONE,
      type: 'attention',
      reason: 'a request the provider refuses (HTTP 400)',
    });
  });

  it('a spent budget: the thread’s state says so (budget-spent, how many of how many), whatever the words', () => {
    const spent = { kind: 'budgetSpent', used: 12, limit: 12, until: NOW } as const;
    const reason = budgetWhy(spent);
    const watch = { title: 'fix the build', state: spent };
    assert.deepEqual(notifyPayload({ type: 'attention', ...t, reason }, { ...CTX, watch }), {
      ...BASE,
      ...NONE,
      type: 'budget-spent',
      reason,
      used: 12,
      limit: 12,
    });
    const worded = notifyPayload({ type: 'attention', ...t, reason: 'other words' }, { ...CTX, watch })!;
    assert.deepEqual([worded.type, worded.used, worded.limit], ['budget-spent', 12, 12]);
    // The engine's words for it, on a thread in another state (or none known): a plain attention.
    assert.equal(notifyPayload({ type: 'attention', ...t, reason }, CTX)!.type, 'attention');
    assert.equal(notifyPayload({ type: 'attention', ...t, reason }, { ...CTX, watch: null })!.type, 'attention');
  });

  it('every key always there (null where the event has none); a long text clipped; no title: null', () => {
    const long = 'x'.repeat(5 * TEXT_MAX);
    const p = notifyPayload(
      { type: 'attention', ...t, reason: long },
      { ...CTX, watch: { title: long, state: RUNNING } },
    )!;
    assert.equal(p.reason!.length, TEXT_MAX);
    assert.equal(p.title!.length, TEXT_MAX);
    assert.deepEqual(Object.keys(p).sort(), Object.keys({ ...BASE, ...NONE, type: '' }).sort());
    assert.equal(notifyPayload(ROWS['gave-up'][0], { ...CTX, watch: null })!.title, null);
  });
});

describe('--notify on the command line', () => {
  it('the whole value is the program (never split); a JSON array is an argv', () => {
    assert.deepEqual(parseNotifyCommand('/opt/my hooks/notify.sh'), ['/opt/my hooks/notify.sh']);
    assert.deepEqual(parseNotifyCommand('["python3", "/x/hook.py", "-v"]'), ['python3', '/x/hook.py', '-v']);
  });

  it('an empty value, a broken or empty array, or one with a non-string: a usage error naming the flag', () => {
    for (const bad of ['', '  ', '[', '[]', '["a", 1]', '[{"a":1}]', '[""]']) {
      assert.throws(
        () => parseCli(['watch', '--notify', bad], {}),
        (e: unknown) => e instanceof UsageError && e.message.startsWith('--notify '),
        JSON.stringify(bad),
      );
    }
    assert.throws(() => parseCli(['watch', '--notify'], {}), UsageError);
    assert.throws(() => parseCli(['status', '--notify', 'x'], {}), UsageError);
  });

  it('watch --notify PROGRAM: its argv; without the flag: none', () => {
    const args = parseCli(['watch', '--notify', './hook.sh'], {});
    assert.equal(args.command, 'watch');
    assert.deepEqual(args.command === 'watch' && args.notify, ['./hook.sh']);
    const plain = parseCli(['watch'], {});
    assert.equal(plain.command === 'watch' && plain.notify, null);
  });
});

const dir = tempDir('cgr-notify-');
let scripts = 0;

/** A Node script in the temp dir, run as `node FILE JSON`; `out` is where it may write. */
function script(body: string): { argv: string[]; out: string } {
  const n = ++scripts;
  const file = path.join(dir, `hook${n}.js`);
  const out = path.join(dir, `out${n}.txt`);
  fs.writeFileSync(file, `const fs = require('fs'); const out = ${JSON.stringify(out)};\n${body}\n`);
  return { argv: [process.execPath, file], out };
}
const APPEND = `fs.appendFileSync(out, process.argv[2] + '\\n');`;

interface Said {
  level: string;
  fields: Record<string, unknown>;
  message: string;
}
/** The notifiers of the test that runs: stopped at its end, whatever it asserted (no run outlives it). */
const made: Notifier[] = [];
function notifier(argv: string[], opts: { timeoutMs?: number; maxRunning?: number } = {}) {
  const said: Said[] = [];
  const n = new Notifier(argv, (level, fields, message) => said.push({ level, fields, message }), {
    target: 'tgt',
    watchOf: (id) => ({ title: `title of ${id}`, state: RUNNING }),
    timeoutMs: 5_000,
    ...opts,
  });
  made.push(n);
  return { n, said };
}
const gaveUp = (threadId: string): Decision => ({ type: 'gave-up', threadId, attempts: 6, failedTurnId: 'f' });
const lines = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
describe('the runs', () => {
  afterEach(() => Promise.all(made.splice(0).map((n) => n.stop(0))));
  it('one run per decision that asks for a person, with the JSON as its last argument; none for the rest', async () => {
    const s = script(APPEND);
    const { n, said } = notifier(s.argv);
    for (const [d] of Object.values(ROWS)) n.decided(d, NOW);
    await n.stop(5_000);
    const got = lines(s.out).map((l) => JSON.parse(l) as NotifyPayload);
    assert.deepEqual(got.map((p) => p.type).sort(), ['attention', 'gave-up']);
    for (const p of got)
      assert.deepEqual([p.threadId, p.title, p.target, p.version], ['th', 'title of th', 'tgt', VERSION]);
    assert.deepEqual(said, []);
  });

  it('a failing program is said once, with its stderr’s first line, until a run works; then once again', async () => {
    const s = script(
      `${APPEND} if (!process.argv[2].includes('"threadId":"ok"')) { console.error('boom\\nmore'); process.exit(3); }`,
    );
    const { n, said } = notifier(s.argv);
    n.decided(gaveUp('a'));
    await n.stop(5_000);
    n.decided(gaveUp('b'));
    await n.stop(5_000);
    assert.equal(said.length, 1, JSON.stringify(said));
    assert.equal(said[0].level, 'warning');
    assert.deepEqual(said[0].fields, { outcome: 'failed' });
    assert.match(said[0].message, /for gave-up a exited with 3 \(its stderr: boom\)/);
    n.decided(gaveUp('ok'));
    await n.stop(5_000);
    assert.equal(said.length, 2);
    assert.equal(said[1].level, 'notice');
    assert.match(said[1].message, /works again \(1 more failed run\(s\) not said\)/);
    n.decided(gaveUp('c'));
    await n.stop(5_000);
    assert.equal(said.length, 3);
    assert.match(said[2].message, /for gave-up c exited with 3/);
    assert.equal(lines(s.out).length, 4, 'a run was skipped');
  });

  it('a program that cannot be started: said once', async () => {
    const { n, said } = notifier([path.join(dir, 'no-such-program')]);
    n.decided(gaveUp('a'));
    n.decided(gaveUp('b'));
    await n.stop(5_000);
    assert.equal(said.length, 1, JSON.stringify(said));
    assert.match(said[0].message, /no-such-program for gave-up a cannot be started: .*ENOENT/);
  });

  it('past its timeout the program and everything in its process group are stopped, and said', async () => {
    const s = script(
      `const c = require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
       fs.writeFileSync(out, process.pid + ' ' + c.pid); setInterval(() => {}, 1000);`,
    );
    const { n, said } = notifier(s.argv, { timeoutMs: 1_500 });
    const started = Date.now();
    n.decided(gaveUp('a'));
    await until('the program started', () => lines(s.out).length === 1);
    const pids = lines(s.out)[0].split(' ').map(Number);
    assert.ok(pids.every(alive));
    await until('the timeout said', () => said.length === 1);
    assert.ok(Date.now() - started >= 1_500);
    assert.match(said[0].message, /for gave-up a did not end within 1\.5 s: stopped/);
    await until('the program and its child gone', () => !pids.some(alive));
  });

  it('never waits, and at most maxRunning run at once: the rest dropped and counted, said once', async () => {
    // Each run writes its line only after 300 ms: a decided() that waited for its run would find it written.
    const s = script(`setTimeout(() => { ${APPEND} }, 300);`);
    const { n, said } = notifier(s.argv, { maxRunning: 2 });
    for (const id of ['a', 'b', 'c', 'd', 'e']) n.decided(gaveUp(id));
    assert.deepEqual(lines(s.out), [], 'decided() waited for a run');
    await n.stop(5_000);
    assert.equal(lines(s.out).length, 2);
    assert.equal(said.length, 1, JSON.stringify(said));
    assert.deepEqual(said[0].fields, { outcome: 'dropped', dropped: 3 });
  });

  it('the stop: a run still going gets up to the limit, then is stopped', async () => {
    const s = script(`fs.writeFileSync(out, String(process.pid)); setInterval(() => {}, 1000);`);
    const { n, said } = notifier(s.argv, { timeoutMs: 60_000 });
    n.decided(gaveUp('a'));
    await until('the program started', () => lines(s.out).length === 1);
    const started = Date.now();
    await n.stop(200);
    assert.ok(Date.now() - started < 3_000);
    assert.ok(!alive(Number(lines(s.out)[0])));
    assert.match(said[0]?.message ?? '', /for gave-up a had not ended when the runner stopped: stopped/);
  });
});
