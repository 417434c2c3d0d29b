// Soak: steady under a flapping provider. The product as users run it — the runner's bin
// (dist/cli.js executed itself, so its shebang starts Node with the flags it ships with;
// `watch --json`, shipped defaults) — against the real Codex app-server daemon
// (the pinned @openai/codex) and the project's mock model on 127.0.0.1, for 10 minutes (3 with
// --quick) while the model fails 3 s in every 30 s.
//
// The work: 4 goals, each running turns back to back for the whole soak. The mock answers in its
// `slow` mode (every turn takes TURN_MS, then a plain message): on an active goal Codex starts the
// next continuation turn at once, so each goal is a long sequence of turns that never completes
// until the end, when the mock completes them (mockModes.ts). The failures: for 3 s of every 30 s
// the mock answers HTTP 500 (odd windows) or drops the stream after response.created (even ones);
// a turn whose requests all land in a window fails after Codex's own retries, its goal is blocked,
// and the runner recovers it when due (shipped backoff: 15–30 s for a first attempt).
//
// Measured:
//   - recoveries, judged by the DAEMON's record (test/support/daemonJudge.ts): per failed turn in
//     thread/turns/list, the automatic activations right after it in the rollout (exactly one);
//     gave-up lines from the runner;
//   - lateness: the runner's own `backoff` line's dueAt → its `recovering` line (the set goes out
//     right after it) and → the daemon's turn/started of the recovery turn (as the user client that
//     started the thread receives it);
//   - the runner's RSS: /proc/PID/status VmRSS every RSS_EVERY_MS; the mean of the first third of
//     the soak is the baseline of the mean of the last third.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { makeCodexHome, type CodexHome } from '../../src/demo/codexHome';
import { killAllTracked } from '../../src/demo/codexProcesses';
import { controlSocketPath, startDaemon, stopDaemon } from '../../src/demo/managedDaemon';
import { startMockModel } from '../../src/demo/mockModel';
import type { MockMode, MockModel } from '../../src/demo/mockModes';
import { startThreadWithGoal, type StartedGoalThread } from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import { field } from '../../src/demo/userClientLog';
import { daemonRecord, rolloutPathOf, type DaemonRecord } from '../support/daemonJudge';
import type { Json } from '../support/json';
import { CLI, RunnerProcess, type RunnerDecision } from '../support/runnerProcess';
import { sleep } from '../support/wait';
import { figure, percentile, type Bench, type BenchContext, type BenchSection } from './types';

const T = 60_000;
const GOALS = 4;
/** How long each healthy turn takes (the mock's `slow` answer). */
const TURN_MS = 2_000;
const CYCLE_MS = 30_000;
const OUTAGE_MS = 3_000;
const RSS_EVERY_MS = 2_000;
/** After the soak: the mock completes every goal; how long a goal still blocked may take to be recovered. */
const DRAIN_MS = 5 * 60_000;
const LATENESS_P90_TARGET_MS = 10_000;
const RSS_TARGET = 0.05;

interface TurnEvent {
  at: number;
  method: 'turn/started' | 'turn/completed';
  threadId: string;
  status: string | null;
}

interface Recovery {
  threadId: string;
  failedTurnId: string;
  attempt: number;
  backoffAt: number;
  dueAt: number;
  /** The runner's `recovering` line (the set goes out right after it), or null if none came. */
  recoveringAt: number | null;
  /** The daemon's turn/started of the recovery turn, as the user client received it, or null. */
  startedAt: number | null;
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

function vmRssKiB(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

function codexVersion(): string {
  try {
    const file = path.resolve(__dirname, '..', '..', '..', 'node_modules', '@openai', 'codex', 'package.json');
    return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

const tsOf = (d: RunnerDecision) => Date.parse(d.ts);

/** Pairs each `backoff` line with the `recovering` line of the same attempt and the recovery turn's start. */
function recoveries(decisions: readonly RunnerDecision[], turns: readonly TurnEvent[]): Recovery[] {
  const out: Recovery[] = [];
  for (const b of decisions) {
    if (b.type !== 'backoff' || typeof b.threadId !== 'string') continue;
    const backoffAt = tsOf(b);
    const rec = decisions.find(
      (d) =>
        d.type === 'recovering' &&
        d.threadId === b.threadId &&
        d.failedTurnId === b.failedTurnId &&
        d.attempt === b.attempt &&
        tsOf(d) >= backoffAt,
    );
    // The goal is blocked from its failure to its recovery: the first turn to start on the thread
    // after the backoff decision is the recovery turn.
    const started = rec
      ? turns.find((t) => t.method === 'turn/started' && t.threadId === b.threadId && t.at >= backoffAt)
      : undefined;
    out.push({
      threadId: b.threadId,
      failedTurnId: String(b.failedTurnId),
      attempt: Number(b.attempt),
      backoffAt,
      dueAt: Number(b.dueAt),
      recoveringAt: rec ? tsOf(rec) : null,
      startedAt: started ? started.at : null,
    });
  }
  return out;
}

/** The daemon's record of each failed turn: recovered once, more, or not at all; activations after no failed turn. */
function judge(records: readonly DaemonRecord[]): {
  failed: number;
  once: number;
  duplicated: number;
  lost: string[];
  stray: number;
} {
  let failed = 0;
  let once = 0;
  let duplicated = 0;
  let stray = 0;
  const lost: string[] = [];
  for (const r of records) {
    failed += r.failed.length;
    for (const f of r.failed) {
      const n = r.automaticAfter.get(f)?.length ?? 0;
      if (n === 1) once += 1;
      else if (n > 1) duplicated += 1;
      else lost.push(`${r.threadId}/${f}`);
    }
    for (const [after, list] of r.automaticAfter) if (after === null || !r.failed.includes(after)) stray += list.length;
    if (r.rollout.unreadable.length > 0) throw new Error(`a rollout line of ${r.threadId} is not JSON`);
  }
  return { failed, once, duplicated, lost, stray };
}

export const soakBench: Bench = {
  id: 'soak',
  title: 'Soak: 4 goals back to back, the model failing 3 s in every 30 s (real Codex daemon, the runner process)',
  async run(ctx: BenchContext): Promise<BenchSection> {
    const soakMs = (ctx.quick ? 3 : 10) * 60_000;
    let mock: MockModel | undefined;
    let home: CodexHome | undefined;
    let user: UserClient<Json> | undefined;
    let runner: RunnerProcess | undefined;
    let rssTimer: NodeJS.Timeout | undefined;
    const threads: StartedGoalThread<Json>[] = [];
    try {
      mock = await startMockModel();
      mock.setMode('slow', { delayMs: TURN_MS });
      home = await makeCodexHome(mock.url);
      await startDaemon(home.dir);
      const socket = controlSocketPath(home.dir);
      user = await UserClient.overSocket<Json>(socket, { name: 'soak-user' });
      const turns: TurnEvent[] = [];
      const goalStatus = new Map<string, string>();
      user.onNotification((n) => {
        const threadId = field(n.params, 'threadId');
        if (typeof threadId !== 'string') return;
        if (n.method === 'turn/started' || n.method === 'turn/completed') {
          const status = field(n.params, 'turn', 'status');
          turns.push({ at: n.at, method: n.method, threadId, status: typeof status === 'string' ? status : null });
        } else if (n.method === 'thread/goal/updated') {
          const status = field(n.params, 'goal', 'status');
          if (typeof status === 'string') goalStatus.set(threadId, status);
        }
      });

      // The product as users run it: the bin itself (its shebang's Node and flags), shipped
      // defaults, its own state file, this daemon's CODEX_HOME.
      const runnerArgs = ['--codex-home', home.dir, '--state', path.join(ctx.tmpDir, 'state.json')];
      runner = new RunnerProcess(runnerArgs, {}, { asBin: true });
      await runner.connected(T);
      const pid = runner.child.pid!;
      const shebang = fs.readFileSync(CLI, 'utf8').split('\n', 1)[0];
      // What the bin's shebang started: the node and its flags, as the kernel and env ran them.
      const tmpDirs = [home.dir, ctx.tmpDir];
      const commandLine = fs
        .readFileSync(`/proc/${pid}/cmdline`, 'utf8')
        .split('\0')
        .filter(Boolean)
        .map((w) => (tmpDirs.some((d) => w.startsWith(d)) ? '<tmp>' : w))
        .join(' ');
      ctx.log(
        `daemon up (codex ${codexVersion()}), runner ${pid} connected; ${GOALS} goals for ${soakMs / 60_000} min`,
      );

      for (let i = 0; i < GOALS; i++)
        threads.push(await startThreadWithGoal(user, `soak goal ${i + 1}`, { timeoutMs: T }));
      for (const t of threads)
        await runner.waitFor((d) => d.type === 'armed' && d.threadId === t.threadId, T, `${t.threadId} armed`);

      const rss: { at: number; kib: number }[] = [];
      const sample = () => {
        const kib = vmRssKiB(pid);
        if (kib !== null) rss.push({ at: Date.now(), kib });
      };
      sample();
      rssTimer = setInterval(sample, RSS_EVERY_MS);

      // The flapping provider: healthy for 27 s, failing for 3 s, from the start of the soak.
      const startedAt = Date.now();
      const outages: { at: number; mode: MockMode }[] = [];
      for (let c = 0; Date.now() - startedAt < soakMs; c++) {
        const cycleAt = startedAt + c * CYCLE_MS;
        await sleep(Math.max(0, cycleAt + CYCLE_MS - OUTAGE_MS - Date.now()));
        const mode: MockMode = c % 2 === 0 ? 'http500' : 'dropStream';
        mock.setMode(mode);
        outages.push({ at: Date.now(), mode });
        await sleep(OUTAGE_MS);
        mock.setMode('slow', { delayMs: TURN_MS });
        const backoffs = runner.of('backoff').length;
        const recovering = runner.of('recovering').length;
        ctx.log(
          `cycle ${c + 1}: ${mode}; so far ${backoffs} backoffs, ${recovering} recoveries, ${runner.of('gave-up').length} given up; RSS ${Math.round((rss.at(-1)?.kib ?? 0) / 1024)} MB`,
        );
        if (!runner.running) throw new Error(`the runner exited during the soak\n${runner.transcript()}`);
      }
      const endedAt = Date.now();
      clearInterval(rssTimer);
      rssTimer = undefined;

      // Drain: the model completes each goal at its next turn; a goal still blocked completes with its recovery.
      mock.setMode('goalComplete');
      const drainFrom = Date.now();
      while (threads.some((t) => goalStatus.get(t.threadId) !== 'complete') && Date.now() - drainFrom < DRAIN_MS)
        await sleep(500);
      const notComplete = threads.filter((t) => goalStatus.get(t.threadId) !== 'complete').map((t) => t.threadId);
      ctx.log(`drained in ${Math.round((Date.now() - drainFrom) / 1000)} s; not complete: ${notComplete.length}`);
      await sleep(2_000);
      await runner.stop();

      const records: DaemonRecord[] = [];
      for (const t of threads)
        records.push(await daemonRecord(user, t.threadId, await rolloutPathOf(user, t.threadId)));
      const verdict = judge(records);
      const gaveUp = runner.of('gave-up').length;
      const all = recoveries(runner.decisions, turns);
      const soakRecoveries = all.filter((r) => r.backoffAt <= endedAt);
      const toSet = soakRecoveries.filter((r) => r.recoveringAt !== null).map((r) => r.recoveringAt! - r.dueAt);
      const toStarted = soakRecoveries.filter((r) => r.startedAt !== null).map((r) => r.startedAt! - r.dueAt);
      const held = runner.of('skipped').filter((d) => d.reason === 'global rate limit').length;

      const span = endedAt - startedAt;
      const third = (k: number) =>
        rss
          .filter((s) => s.at - startedAt >= (k * span) / 3 && s.at - startedAt < ((k + 1) * span) / 3)
          .map((s) => s.kib / 1024);
      const firstThird = mean(third(0));
      const lastThird = mean(third(2));
      const rssGrowth = lastThird / firstThird - 1;
      const failedTurnsDuringSoak = turns.filter((t) => t.method === 'turn/completed' && t.status === 'failed').length;
      const p50Set = percentile(toSet, 50);
      const p90Set = percentile(toSet, 90);
      const p90Started = percentile(toStarted, 90);
      const every = verdict.failed > 0 && verdict.once === verdict.failed && verdict.stray === 0 && gaveUp === 0;

      return {
        id: 'soak',
        title: soakBench.title,
        params: {
          quick: ctx.quick,
          soakMinutes: span / 60_000,
          codex: codexVersion(),
          goals: GOALS,
          turnMs: TURN_MS,
          cycleMs: CYCLE_MS,
          outageMs: OUTAGE_MS,
          outages: outages.length,
          outageModes: 'http500 and dropStream, alternating',
          runner:
            'dist/cli.js watch --json --codex-home <home> --state <tmp> (the bin executed itself; shipped defaults)',
          runnerShebang: shebang,
          runnerCommandLine: commandLine,
          engine: {
            baseDelayMs: DEFAULT_OPTIONS.baseDelayMs,
            maxAttempts: DEFAULT_OPTIONS.maxAttempts,
            limiterBurst: DEFAULT_OPTIONS.limiterBurst,
            limiterIntervalMs: DEFAULT_OPTIONS.limiterIntervalMs,
          },
          turnsStarted: turns.filter((t) => t.method === 'turn/started').length,
          failedTurns: verdict.failed,
          failedTurnsSeenByUserClient: failedTurnsDuringSoak,
          recoveredOnce: verdict.once,
          duplicated: verdict.duplicated,
          lost: verdict.lost,
          strayActivations: verdict.stray,
          gaveUp,
          heldByLimiter: held,
          notCompleteAfterDrain: notComplete,
          dueToSetMs: toSet,
          dueToTurnStartedMs: toStarted,
          rssSamplesMiB: rss.map((s) => Math.round((s.kib / 1024) * 10) / 10),
          rssEveryMs: RSS_EVERY_MS,
        },
        figures: [
          figure('failed turns recovered exactly once (daemon record)', 'turns', verdict.once, verdict.failed, {
            text: `= every failed turn (${verdict.failed}), none given up`,
            met: every,
          }),
          figure('given up', 'goals', gaveUp, null, { text: '0', met: gaveUp === 0 }),
          figure('lateness p50 (due → recovering/set)', 'ms', p50Set, null),
          figure('lateness p90 (due → recovering/set)', 'ms', p90Set, null, {
            text: `≤ ${LATENESS_P90_TARGET_MS / 1000} s`,
            met: p90Set <= LATENESS_P90_TARGET_MS,
          }),
          figure('lateness p50 (due → daemon turn/started)', 'ms', percentile(toStarted, 50), null),
          figure('lateness p90 (due → daemon turn/started)', 'ms', p90Started, null, {
            text: `≤ ${LATENESS_P90_TARGET_MS / 1000} s`,
            met: p90Started <= LATENESS_P90_TARGET_MS,
          }),
          figure('runner RSS, mean of the last third (baseline: first third)', 'MB', lastThird, firstThird, {
            text: `within ${RSS_TARGET * 100}% of the first third`,
            met: Math.abs(rssGrowth) <= RSS_TARGET,
          }),
        ],
        notes: [
          `${ctx.quick ? 'QUICK RUN: ' : ''}${Math.round(span / 60_000)} min soak${ctx.quick ? ' (the full run is 10 min)' : ''} on the real Codex app-server daemon (@openai/codex ${codexVersion()}) with the project's mock model; the runner process with shipped defaults (backoff base ${DEFAULT_OPTIONS.baseDelayMs / 1000} s, ${DEFAULT_OPTIONS.maxAttempts} attempts, limiter ${DEFAULT_OPTIONS.limiterBurst} at once then one per ${DEFAULT_OPTIONS.limiterIntervalMs / 1000} s).`,
          `Work: ${GOALS} goals started by a user client, each running turns back to back (the mock's slow mode: ${TURN_MS / 1000} s per turn, and Codex continues an active goal at once), completed by the mock after the soak. Failures: for ${OUTAGE_MS / 1000} s of every ${CYCLE_MS / 1000} s the mock answers HTTP 500 or drops the stream (alternating); ${outages.length} outages.`,
          `Recoveries are judged by the daemon's record: per failed turn in thread/turns/list, the automatic activations right after it in the rollout (test/support/daemonJudge.ts). ${verdict.failed} failed turns, ${verdict.once} recovered exactly once, ${verdict.duplicated} more than once, ${verdict.lost.length} not at all, ${verdict.stray} activations after no failed turn; ${gaveUp} given up. After the soak the mock completes each goal at its next turn (a blocked goal completes with its recovery): ${notComplete.length} not complete after the drain.`,
          `Lateness: the runner's backoff line's dueAt → its recovering line (the set goes out right after it), and → the daemon's turn/started of the recovery turn as the user client received it; ${toSet.length} recoveries decided during the soak; ${held} "global rate limit" skips.`,
          `The runner is the bin executed itself, as users run it (README: dist/cli.js installed as codex-goal-recovery): its shebang \`${shebang}\` started \`${commandLine}\`.`,
          `RSS: /proc/PID/status VmRSS of the runner every ${RSS_EVERY_MS / 1000} s during the soak; the baseline is the mean of the first third, the figure the mean of the last third (${rssGrowth >= 0 ? '+' : ''}${(rssGrowth * 100).toFixed(1)}%).`,
        ],
      };
    } finally {
      if (rssTimer) clearInterval(rssTimer);
      if (runner?.running) await runner.kill().catch(() => undefined);
      await user?.close().catch(() => undefined);
      if (home) {
        await stopDaemon(home.dir, { force: true }).catch(() => undefined);
        await home.cleanup().catch(() => undefined);
      }
      await mock?.close().catch(() => undefined);
      for (const t of threads) await t.cleanup().catch(() => undefined);
      await killAllTracked();
    }
  },
};
