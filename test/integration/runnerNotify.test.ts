// `watch --notify PROGRAM` end to end: the runner (dist/cli.js watch --json) against the real Codex
// app-server daemon and the mock model (test/support/daemonLab.ts), with a real program: a
// `#!/bin/sh` script in a temp dir that appends its argument count and its argument to a file. A
// give-up runs it exactly once, with the JSON; a goal that needs a person and one whose budget is
// spent run it once each, typed so; the routine lines (armed, backoff, recovering, recovered,
// connection, role) never run it, and what it writes never reaches the runner's stdout or stderr. A
// program that fails (exit 1) is said in one `notify` line however often it fails, and one that
// hangs is stopped at the shipped 10 s timeout (itself and its child), said, while a recovery goes
// ahead meanwhile: neither holds a recovery. The daemon is the judge of the recoveries
// (test/support/daemonJudge.ts), as everywhere.
// Flags, and why: --base-delay 0.5 --max-delay 1 shorten the backoff so an outage fits in a test;
// --max-attempts 1 (shipped 6) makes a goal give up after its first failed recovery, and
// --recovery-budget 1 (shipped 12) spends a budget with one recovery. No tuning variable is set:
// the notify timeout is the shipped 10 s, the resync and limiter are shipped.
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pinnedCodex } from '../../src/demo/codexBinary';
import { trackedAlive } from '../../src/demo/codexProcesses';
import { waitTurnCompleted, type StartedGoalThread } from '../../src/demo/goalThreads';
import type { UserClient } from '../../src/demo/userClient';
import { DaemonLab } from '../support/daemonLab';
import { type RunnerDecision, RunnerProcess, settleAndStop } from '../support/runnerProcess';
import { assertOneRecoveryPerFailedTurn, daemonRecord } from '../support/daemonJudge';
import type { Json } from '../support/json';
import type { NotifyPayload } from '../../src/runner/notify';
import { VERSION } from '../../src/version';
import { poll, until } from '../support/wait';

const T = 60_000;
const FAST = ['--base-delay', '0.5', '--max-delay', '1'];

interface Env {
  /** The real daemon, the mock model and the user's client (test/support/daemonLab.ts). */
  lab: DaemonLab;
  user: UserClient<Json>;
  dir: string;
  state: string;
  /** What the hook wrote: one line per run, `ARGC<TAB>ARG`. */
  out: string;
  runners: RunnerProcess[];
}
let env: Env;

async function setUp(): Promise<void> {
  const lab = await DaemonLab.start(pinnedCodex());
  const user = await lab.user();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-notify-'));
  env = { lab, user, dir, state: path.join(dir, 'state.json'), out: path.join(dir, 'out'), runners: [] };
}

async function tearDown(): Promise<void> {
  for (const r of env.runners) await r.kill();
  // A hanging hook a failed test left (its shell leads its own process group): never left running.
  const pids = path.join(env.dir, 'pids');
  if (fs.existsSync(pids)) {
    const shell = Number(fs.readFileSync(pids, 'utf8').split(' ')[0]);
    try {
      if (shell > 0) process.kill(-shell, 'SIGKILL');
    } catch {
      // the group is gone: the hook ended as it should
    }
  }
  await env.lab.close();
  fs.rmSync(env.dir, { recursive: true, force: true });
  assert.deepEqual(trackedAlive(), [], 'a process was left behind');
}

/** An executable `#!/bin/sh` hook in the test's dir: it records its argv, then runs `rest`. */
function hook(rest = ''): string {
  const file = path.join(env.dir, 'hook.sh');
  fs.writeFileSync(file, `#!/bin/sh\nprintf '%s\\t%s\\n' "$#" "$1" >> '${env.out}'\n${rest}\n`, { mode: 0o755 });
  return file;
}

/** The hook's runs so far: the argument count and the JSON of each. */
function runs(): { argc: number; payload: NotifyPayload }[] {
  if (!fs.existsSync(env.out)) return [];
  return fs
    .readFileSync(env.out, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [argc, json] = l.split('\t');
      return { argc: Number(argc), payload: JSON.parse(json) as NotifyPayload };
    });
}

async function runsReach(n: number, r: RunnerProcess): Promise<void> {
  const what = () => `the hook's run ${n} (it ran ${runs().length} time(s))\n${r.transcript()}`;
  await until(what, () => runs().length >= n, 15_000, 50);
}

function runner(extra: string[]): RunnerProcess {
  const r = new RunnerProcess(['--codex-home', env.lab.home.dir, '--state', env.state, ...FAST, ...extra]);
  env.runners.push(r);
  return r;
}

function goal(objective: string): Promise<StartedGoalThread<Json>> {
  return env.lab.goal(objective, { timeoutMs: T });
}

/** A goal whose turns fail (HTTP 500) until the runner gives up on it (--max-attempts 1). */
async function givenUp(
  r: RunnerProcess,
  objective: string,
): Promise<{ t: StartedGoalThread<Json>; d: RunnerDecision }> {
  env.lab.mock.setMode('http500');
  const t = await goal(objective);
  const d = await r.waitFor((x) => x.type === 'gave-up' && x.threadId === t.threadId, T, `the give-up of ${objective}`);
  return { t, d };
}

/** A goal whose first turn fails and whose recovery completes it: the routine lines, all of them. */
async function recovered(r: RunnerProcess, objective: string): Promise<StartedGoalThread<Json>> {
  env.lab.mock.setMode('http500');
  const t = await goal(objective);
  await r.waitFor((x) => x.type === 'backoff' && x.threadId === t.threadId, T, `the backoff of ${objective}`);
  env.lab.mock.setMode('goalComplete');
  await r.waitFor((x) => x.type === 'recovered' && x.threadId === t.threadId, T, `the recovery of ${objective}`);
  return t;
}

/** The daemon's record: the recovered goal's failed turn re-activated exactly once, the goal complete. */
async function assertRecoveredByDaemon(t: StartedGoalThread<Json>): Promise<void> {
  await waitTurnCompleted(env.user, t.threadId, 'completed', T, t.goalSetSeq);
  const record = await daemonRecord(env.user, t.threadId, String(t.thread.path));
  assert.equal(record.failed.length, 1, JSON.stringify(record.turns));
  assertOneRecoveryPerFailedTurn(record);
  assert.equal(record.goalStatus, 'complete');
}

describe(`runner --notify against the real daemon, codex ${pinnedCodex().version}`, () => {
  beforeEach(setUp);
  afterEach(tearDown);

  it(
    'a give-up runs the program exactly once, with one JSON argument; routine lines never run it',
    { timeout: 2 * T },
    async () => {
      // It writes to its stdout and stderr too: neither may reach the runner's (a JSON-lines stream).
      const r = runner(['--max-attempts', '1', '--notify', hook("echo 'hook says hello'; echo 'hook complains' >&2")]);
      await r.connected();
      const { t, d } = await givenUp(r, 'given up');
      await runsReach(1, r);
      const calm = await recovered(r, 'recovered');
      await settleAndStop(r, env.state, { [t.threadId]: 'gaveUp', [calm.threadId]: 'complete' });
      await assertRecoveredByDaemon(calm);
      const all = runs();
      assert.equal(all.length, 1, `the hook ran for more than the give-up: ${JSON.stringify(all)}`);
      const [{ argc, payload }] = all;
      assert.equal(argc, 1);
      const role = r.of('role')[0];
      const armed = r.of('armed', t.threadId)[0];
      assert.deepEqual(payload, {
        source: 'codex-goal-recovery',
        version: VERSION,
        type: 'gave-up',
        ts: payload.ts,
        target: role.target,
        threadId: t.threadId,
        title: armed.title,
        reason: null,
        attempts: 1,
        failedTurnId: d.failedTurnId,
        used: null,
        limit: null,
      });
      assert.ok(Math.abs(Date.parse(payload.ts) - Date.parse(d.ts)) < 1_000, `${payload.ts} vs the line's ${d.ts}`);
      // The routine lines were there, and a hook that worked says nothing.
      for (const type of ['connection', 'armed', 'backoff', 'recovering', 'recovered'])
        assert.ok(r.of(type).length > 0, `no ${type} line`);
      assert.deepEqual(r.of('notify'), []);
      assert.deepEqual(
        r.stderr.filter((l) => l.includes('hook')),
        [],
        'the program wrote into the runner',
      );
    },
  );

  it('a goal that needs a person and a spent budget run it once each, typed so', { timeout: 2 * T }, async () => {
    const r = runner(['--recovery-budget', '1', '--notify', hook()]);
    await r.connected();
    env.lab.mock.setMode('http400');
    const refused = await goal('refused by the provider');
    await r.waitFor((x) => x.type === 'attention' && x.threadId === refused.threadId, T, 'the attention');
    await runsReach(1, r);
    env.lab.mock.setMode('http500');
    const spent = await goal('spends its budget');
    await r.waitFor((x) => x.type === 'attention' && x.threadId === spent.threadId, T, 'the budget spent');
    await runsReach(2, r);
    await settleAndStop(r, env.state, { [refused.threadId]: 'needsAttention', [spent.threadId]: 'budgetSpent' });
    const [first, second] = runs().map((x) => x.payload);
    assert.equal(runs().length, 2, JSON.stringify(runs()));
    assert.deepEqual([first.type, first.threadId], ['attention', refused.threadId]);
    assert.equal(first.reason, r.of('attention', refused.threadId)[0].reason);
    assert.deepEqual([second.type, second.threadId, second.used, second.limit], ['budget-spent', spent.threadId, 1, 1]);
  });

  it(
    'a program that fails is said once, however often it fails; the recoveries go on',
    { timeout: 2 * T },
    async () => {
      const r = runner(['--max-attempts', '1', '--notify', hook("echo 'hook failed: boom' >&2; exit 1")]);
      await r.connected();
      const first = await givenUp(r, 'first give-up');
      await r.waitFor((x) => x.type === 'notify', 15_000, 'the notify line');
      const second = await givenUp(r, 'second give-up');
      await runsReach(2, r);
      const calm = await recovered(r, 'recovered after');
      await settleAndStop(r, env.state, {
        [first.t.threadId]: 'gaveUp',
        [second.t.threadId]: 'gaveUp',
        [calm.threadId]: 'complete',
      });
      await assertRecoveredByDaemon(calm);
      const said = r.of('notify');
      assert.equal(said.length, 1, JSON.stringify(said));
      assert.equal(said[0].level, 'warning');
      assert.match(String(said[0].message), /hook\.sh for gave-up \S+ exited with 1 \(its stderr: hook failed: boom\)/);
      assert.equal(runs().length, 2);
    },
  );

  it(
    'a program that hangs holds no recovery, and is stopped with its child at the timeout',
    { timeout: 2 * T },
    async () => {
      const pids = path.join(env.dir, 'pids'); // tearDown stops this hook if the test fails
      const r = runner(['--max-attempts', '1', '--notify', hook(`sleep 300 & echo "$$ $!" > '${pids}'; wait`)]);
      await r.connected();
      const hung = await givenUp(r, 'given up, its hook hangs');
      await runsReach(1, r);
      const started = Date.now();
      // While the hook hangs, another goal fails and is recovered.
      const calm = await recovered(r, 'recovered while the hook hangs');
      const recoveredAt = Date.now();
      const line = await r.waitFor((x) => x.type === 'notify', 20_000, 'the timeout line');
      assert.ok(recoveredAt - started < 10_000, 'the recovery took longer than the hook timeout: nothing shown');
      assert.ok(r.decisions.indexOf(line) > r.decisions.indexOf(r.of('recovered', calm.threadId)[0]));
      assert.match(String(line.message), /for gave-up \S+ did not end within 10 s: stopped/);
      const [shell, sleeper] = fs.readFileSync(pids, 'utf8').trim().split(' ').map(Number);
      await poll(() => ![shell, sleeper].some(alive), 5_000, 50);
      assert.deepEqual([shell, sleeper].filter(alive), [], 'the hook or its child outlived the timeout');
      await settleAndStop(r, env.state, { [hung.t.threadId]: 'gaveUp', [calm.threadId]: 'complete' });
      await assertRecoveredByDaemon(calm);
    },
  );
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
