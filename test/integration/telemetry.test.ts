// The OpenTelemetry export (docs/telemetry.md) against the real Codex app-server daemon and the
// mock model: the runner (dist/cli.js watch --json) with --otlp-endpoint, or with
// --otlp-from-codex-config reading the [otel] table of the test's own CODEX_HOME/config.toml,
// exports to an OTLP/HTTP receiver on 127.0.0.1 (test/support/otlpReceiver.ts) through an outage
// and its recovery. The daemon is the judge, as everywhere (test/support/daemonJudge.ts): the
// recoveries the export counts are the automatic activations in the thread's rollout, and its
// wasted turns those activations less the one that completed the goal (the outage-cost bench's
// count). A collector that refuses (500) or is down changes nothing of the recovery, and is said
// in one line. The export's interval is shortened (CODEX_GOAL_RECOVERY_OTLP_INTERVAL_S=0.3) so
// that tries happen during the outage; the final flush at the clean stop sends what is left.
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startMockModel } from '../../src/demo/mockModel';
import { type MockModel } from '../../src/demo/mockModes';
import { pinnedCodex } from '../../src/demo/codexBinary';
import { makeCodexHome, type CodexHome } from '../../src/demo/codexHome';
import { killAllTracked, trackedAlive } from '../../src/demo/codexProcesses';
import { controlSocketPath, startDaemon, stopDaemon } from '../../src/demo/managedDaemon';
import {
  startThreadWithGoal,
  waitGoalStatus,
  waitTurnCompleted,
  type StartedGoalThread,
} from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import { RunnerProcess, settleAndStop } from '../support/runnerProcess';
import { assertOneRecoveryPerFailedTurn, daemonRecord, type DaemonRecord } from '../support/daemonJudge';
import { deadPort, OtlpReceiver } from '../support/otlpReceiver';
import type { Json } from '../support/json';

const T = 60_000;
const TUNING = { CODEX_GOAL_RECOVERY_OTLP_INTERVAL_S: '0.3' };

interface Env {
  mock: MockModel;
  home: CodexHome;
  user: UserClient<Json>;
  dir: string;
  state: string;
  receiver: OtlpReceiver;
  runners: RunnerProcess[];
  threads: StartedGoalThread<Json>[];
}
let env: Env;

/** A daemon on a fresh home whose config.toml holds `otel(receiverUrl)` (nothing when it returns ''). */
async function setUp(otel: (receiverUrl: string) => string = () => ''): Promise<void> {
  const receiver = await OtlpReceiver.start();
  const mock = await startMockModel();
  const home = await makeCodexHome(mock.url, otel(receiver.url), { codex: pinnedCodex() });
  await startDaemon(home.dir);
  const user = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: 'test-user' });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-otel-'));
  env = { mock, home, user, dir, state: path.join(dir, 'state.json'), receiver, runners: [], threads: [] };
}

async function tearDown(): Promise<void> {
  for (const r of env.runners) await r.kill();
  await env.user.close().catch(() => undefined);
  await stopDaemon(env.home.dir, { force: true });
  await env.home.cleanup();
  await env.mock.close();
  await env.receiver.close();
  for (const t of env.threads) await t.cleanup();
  await killAllTracked();
  fs.rmSync(env.dir, { recursive: true, force: true });
  assert.deepEqual(trackedAlive(), [], 'a process was left behind');
}

function runner(extra: string[]): RunnerProcess {
  const r = new RunnerProcess(
    ['--codex-home', env.home.dir, '--state', env.state, '--base-delay', '0.5', '--max-delay', '2', ...extra],
    TUNING,
  );
  env.runners.push(r);
  return r;
}

/**
 * An outage of `failures` failed turns on one goal, healed after the last one's backoff; the
 * runner settled and stopped cleanly. Returns the thread and the daemon's record of it.
 */
async function outage(r: RunnerProcess, failures: number): Promise<{ t: StartedGoalThread<Json>; rec: DaemonRecord }> {
  await r.connected();
  env.mock.setMode('http500');
  const t = await startThreadWithGoal(env.user, 'an outage', { timeoutMs: T });
  env.threads.push(t);
  await r.waitFor((d) => d.type === 'backoff' && d.attempt === failures, T, `backoff ${failures}`);
  env.mock.setMode('goalComplete');
  const complete = await waitGoalStatus(env.user, t.threadId, 'complete', T, t.goalSetSeq);
  await waitTurnCompleted(env.user, t.threadId, 'completed', T, complete.seq);
  await settleAndStop(r, env.state, { [t.threadId]: 'complete' });
  const rec = await daemonRecord(env.user, t.threadId, String(t.thread.path));
  assertOneRecoveryPerFailedTurn(rec);
  assert.equal(rec.goalStatus, 'complete');
  assert.equal(rec.failed.length, failures, 'the failed turns');
  return { t, rec };
}

/** What the daemon's record says the export must count: its automatic activations, less the one that completed. */
function judged(rec: DaemonRecord) {
  const activations = rec.rollout.automatic.length;
  return { recoveries: activations, wasted: activations - (rec.goalStatus === 'complete' ? 1 : 0) };
}

/** The runner's own telemetry lines (type "telemetry"). */
const telemetryLines = (r: RunnerProcess) => r.of('telemetry').map((d) => `${String(d.level)}: ${String(d.message)}`);

describe(`telemetry: the runner's OTLP/HTTP export, real daemon (codex ${pinnedCodex().version})`, () => {
  afterEach(tearDown);

  describe('--otlp-endpoint', () => {
    beforeEach(() => setUp());

    it(
      'an outage and its recovery: log records with conversation.id, a recoveries counter the daemon agrees with',
      { timeout: 2 * T },
      async () => {
        const r = runner(['--otlp-endpoint', env.receiver.url]);
        const { t, rec } = await outage(r, 1);
        const mine = env.receiver.logs().filter((l) => l.service === 'codex-goal-recovery');
        const ofThread = mine.filter((l) => l.attributes['conversation.id'] === t.threadId);
        const kinds = ofThread.map((l) => l.attributes['codex_goal_recovery.decision']);
        for (const kind of ['armed', 'backoff', 'recovering', 'recovered'])
          assert.ok(kinds.includes(kind), `no ${kind} record for ${t.threadId}: ${kinds.join(', ')}`);
        const recovered = ofThread.find((l) => l.attributes['codex_goal_recovery.decision'] === 'recovered')!;
        assert.deepEqual([recovered.severityNumber, recovered.severityText], [10, 'NOTICE']);
        assert.equal(recovered.attributes['codex_goal_recovery.failed_turn_id'], rec.failed[0]);
        // Every request as OTLP/HTTP JSON says.
        for (const q of env.receiver.requests) assert.equal(q.headers['content-type'], 'application/json', q.path);
        // The counters, judged against the daemon's record.
        const want = judged(rec);
        assert.equal(want.recoveries, 1);
        assert.equal(env.receiver.latest('codex_goal_recovery.recoveries'), want.recoveries);
        assert.equal(env.receiver.latest('codex_goal_recovery.wasted_turns'), want.wasted);
        assert.equal(env.receiver.latest('codex_goal_recovery.give_ups'), 0);
        const waited = env.receiver.latest('codex_goal_recovery.backoff.time')!;
        const backoff = r.of('backoff', t.threadId)[0];
        assert.ok(
          waited >= Number(backoff.delayMs) / 1000 - 0.05,
          `time in backoff ${waited} s, announced ${String(backoff.delayMs)} ms`,
        );
        // Never a goal's text: the objective is nowhere in what was sent.
        assert.doesNotMatch(JSON.stringify(env.receiver.requests.map((q) => q.body)), /an outage/);
        assert.deepEqual(telemetryLines(r), [
          `notice: telemetry: exporting decisions and counters: OTLP/HTTP JSON to ${env.receiver.url} (/v1/logs, /v1/metrics)`,
        ]);
      },
    );

    it('a collector that answers 500: the same recovery, one line', { timeout: 2 * T }, async () => {
      env.receiver.status = 500;
      const r = runner(['--otlp-endpoint', env.receiver.url]);
      const { rec } = await outage(r, 2);
      assert.equal(judged(rec).recoveries, 2);
      assert.ok(env.receiver.requests.length >= 2, 'no tries reached the collector');
      const lines = telemetryLines(r);
      assert.equal(lines.length, 2, lines.join('\n'));
      assert.match(
        lines[1],
        /^warning: telemetry: the OTLP collector at .*\/v1\/logs did not take the export \(HTTP 500\)/,
      );
    });

    it('a collector that is down: the same recovery, one line', { timeout: 2 * T }, async () => {
      const r = runner(['--otlp-endpoint', `http://127.0.0.1:${await deadPort()}`]);
      const { rec } = await outage(r, 2);
      assert.equal(judged(rec).recoveries, 2);
      const lines = telemetryLines(r);
      assert.equal(lines.length, 2, lines.join('\n'));
      assert.match(
        lines[1],
        /^warning: telemetry: the OTLP collector at .* did not take the export \(connect ECONNREFUSED/,
      );
    });
  });

  describe("--otlp-from-codex-config: the exporter in the test's CODEX_HOME/config.toml", () => {
    beforeEach(() =>
      setUp(
        (url) => `[otel]
environment = "cgr-test"
exporter = { otlp-http = { endpoint = "${url}/v1/logs", protocol = "json", headers = { "x-test-token" = "t0k" } } }`,
      ),
    );

    it(
      "two failed turns: the records beside Codex's own, its headers, recoveries and wasted turns the daemon agrees with",
      { timeout: 2 * T },
      async () => {
        const r = runner(['--otlp-from-codex-config']);
        const { t, rec } = await outage(r, 2);
        const mine = env.receiver.logs().filter((l) => l.service === 'codex-goal-recovery');
        assert.ok(
          mine.some(
            (l) =>
              l.attributes['conversation.id'] === t.threadId &&
              l.attributes['codex_goal_recovery.decision'] === 'recovered',
          ),
          'no recovered record for the thread',
        );
        const ours = env.receiver.requests.filter((q) => JSON.stringify(q.body).includes('codex-goal-recovery'));
        assert.ok(ours.length > 0);
        for (const q of ours) assert.equal(q.headers['x-test-token'], 't0k', `${q.path} without the config's header`);
        assert.ok(
          ours.some((q) => q.path === '/v1/metrics'),
          'no metrics beside the logs',
        );
        const want = judged(rec);
        assert.deepEqual(want, { recoveries: 2, wasted: 1 });
        assert.equal(env.receiver.latest('codex_goal_recovery.recoveries'), want.recoveries);
        assert.equal(env.receiver.latest('codex_goal_recovery.wasted_turns'), want.wasted);
        // The daemon exports its own records to the same exporter (measured: service.name
        // "codex-app-server"), and names the thread with the same attribute: they sit side by side.
        const codex = env.receiver.logs().filter((l) => l.service === 'codex-app-server');
        assert.ok(
          codex.some((l) => l.attributes['conversation.id'] === t.threadId),
          `no record of Codex's own names ${t.threadId} as conversation.id`,
        );
        assert.match(
          telemetryLines(r)[0],
          /^notice: telemetry: exporting decisions and counters: OTLP\/HTTP JSON to Codex's exporter .*config\.toml\): logs http:\/\/127\.0\.0\.1:\d+\/v1\/logs, metrics http:\/\/127\.0\.0\.1:\d+\/v1\/metrics, with its headers \(x-test-token\)$/,
        );
      },
    );
  });
});
