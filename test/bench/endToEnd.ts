// End to end: with the real Codex app-server daemon (the pinned @openai/codex) and the
// project's mock model, how long after a goal's due moment does the daemon start the recovery
// turn? The due moment is the engine's own `dueAt` (its backoff decision); the end is the
// `turn/started` of the recovery turn as the user's client (subscribed to the thread, since it
// started it) receives it.
//
// Product: the Engine in this process with the system clock, connected to the daemon's control
// socket through the product's JSON-RPC client (exactly what `codex-goal-recovery watch` runs).
// Baseline, in the same run and against the same daemon: a naive reconciler that polls every
// watched thread's goal once a second and re-activates it when blocked and due
// (baselines/pollingDaemonClient.ts), given the same due moment relative to the failure.
//
// Both count the JSON-RPC requests they write on the wire. (In-process rather than the runner's
// child process: the requests are counted on the product's own transport, and the global
// limiter, which is not a command-line flag, can be set out of the way.)
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import { Engine } from '../../src/core/engine';
import { systemClock } from '../../src/core/clock';
import type { Decision } from '../../src/model/decision';
import { makeCodexHome, type CodexHome } from '../../src/demo/codexHome';
import { killAllTracked } from '../../src/demo/codexProcesses';
import { controlSocketPath, startDaemon, stopDaemon } from '../../src/demo/managedDaemon';
import { startMockModel } from '../../src/demo/mockModel';
import { type MockModel } from '../../src/demo/mockModes';
import {
  about,
  startThreadWithGoal,
  waitGoalStatus,
  waitTurnCompleted,
  type StartedGoalThread,
} from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import { startSession } from '../../src/protocol/client';
import type { DaemonListener, DaemonSession } from '../../src/protocol/daemon';
import { openTransport, type TransportTarget } from '../../src/protocol/transport';
import { JsonFileStore } from '../../src/store/jsonFileStore';
import { VERSION } from '../../src/version';
import { PollingDaemonReconciler } from './baselines/pollingDaemonClient';
import { figure, percentile, type Bench, type BenchContext, type BenchSection } from './types';
import { IGNORE_EVENTS } from './baselines/ignoreEvents';
import type { Json } from '../support/json';

const T = 60_000;
/** The engine's backoff for the bench: the first retry waits 0.5–1 s (equal jitter). */
const BASE_DELAY_MS = 1_000;
const MAX_DELAY_MS = 2_000;
const POLL_INTERVAL_MS = 1_000;

/** One JSON-RPC request written on the wire. */
interface RpcRecord {
  at: number;
  method: string;
  threadId: string | null;
}

interface Sample {
  threadId: string;
  /** Date.now() just before thread/goal/set was sent. */
  goalSetAt: number;
  /** The failed turn's turn/completed, as the user's client received it. */
  failedAt: number;
  /** The due moment: the engine's dueAt (product) or the same offset after the failure (baseline). */
  dueAt: number;
  /** turn/started of the recovery turn, as the user's client received it. */
  startedAt: number;
  /** When the recoverer wrote its thread/goal/set {active} for this thread. */
  setAt: number;
  /** Requests about this thread from goal/set to the recovery turn's start. */
  rpcs: number;
}

/** Opens a session like connectDaemon does, counting every request the client writes. */
async function countedSession(
  target: TransportTarget,
  listener: DaemonListener,
  log: RpcRecord[],
): Promise<DaemonSession> {
  const transport = await openTransport(target);
  const writer = transport.writer;
  transport.writer = new Proxy(writer, {
    get(t, prop) {
      const value = Reflect.get(t, prop, t) as unknown;
      if (prop === 'write' && typeof value === 'function') {
        return (msg: { id?: unknown; method?: unknown; params?: { threadId?: unknown } }) => {
          if (msg.id !== undefined && typeof msg.method === 'string') {
            log.push({
              at: Date.now(),
              method: msg.method,
              threadId: typeof msg.params?.threadId === 'string' ? msg.params.threadId : null,
            });
          }
          return (value as (m: unknown) => Promise<void>).call(t, msg);
        };
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
  return startSession(transport, listener, { clientVersion: VERSION });
}

function rpcsFor(log: RpcRecord[], threadId: string, from: number, to: number): number {
  return log.filter((r) => r.threadId === threadId && r.at >= from && r.at <= to).length;
}

/** The recoverer's thread/goal/set for the thread after its failure. */
function setAt(log: RpcRecord[], threadId: string, after: number): number {
  const set = log.find((r) => r.method === 'thread/goal/set' && r.threadId === threadId && r.at >= after);
  if (!set) throw new Error(`no thread/goal/set was written for ${threadId}`);
  return set.at;
}

function measured(log: RpcRecord[], s: Omit<Sample, 'rpcs' | 'setAt'>): Sample {
  return { ...s, setAt: setAt(log, s.threadId, s.failedAt), rpcs: rpcsFor(log, s.threadId, s.goalSetAt, s.startedAt) };
}

function codexVersion(): string {
  try {
    const file = path.resolve(__dirname, '..', '..', '..', 'node_modules', '@openai', 'codex', 'package.json');
    return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** Decisions as they arrive, with a way to wait for one. */
class DecisionLog {
  readonly entries: { at: number; decision: Decision }[] = [];
  private waiters = new Set<() => void>();

  push = (decision: Decision): void => {
    this.entries.push({ at: Date.now(), decision });
    const w = this.waiters;
    this.waiters = new Set();
    for (const f of w) f();
  };

  async waitFor(match: (d: Decision) => boolean, timeoutMs: number, what: string): Promise<Decision> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.entries.find((e) => match(e.decision));
      if (hit) return hit.decision;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `timed out waiting for ${what}; decisions: ${this.entries.map((e) => JSON.stringify(e.decision)).join('\n')}`,
        );
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.add(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }
}

type BackoffDecision = Extract<Decision, { type: 'backoff' }>;

export const endToEndBench: Bench = {
  id: 'end-to-end',
  title: 'End to end: due moment → turn/started of the recovery turn (real Codex daemon, mock model)',
  async run(ctx: BenchContext): Promise<BenchSection> {
    const samples = ctx.quick ? 5 : 12;
    let mock: MockModel | undefined;
    let home: CodexHome | undefined;
    let user: UserClient<Json> | undefined;
    let engine: Engine | undefined;
    let baseline: PollingDaemonReconciler | undefined;
    let baselineSession: DaemonSession | undefined;
    const threads: StartedGoalThread<Json>[] = [];
    try {
      mock = await startMockModel();
      home = await makeCodexHome(mock.url);
      await startDaemon(home.dir);
      const socket = controlSocketPath(home.dir);
      const target: TransportTarget = { kind: 'socket', path: socket };
      user = await UserClient.overSocket<Json>(socket, { name: 'bench-user' });
      ctx.log(
        `daemon up (codex ${codexVersion()}); ${samples} outages for the product, then ${samples} for the baseline`,
      );

      /** One outage: a goal whose first turn fails (HTTP 500), then a healthy model that completes it. */
      const outage = async (
        label: string,
        onFailed: (t: StartedGoalThread<Json>, failedAt: number) => number | Promise<number>,
        onGoalSet?: (t: StartedGoalThread<Json>) => void,
      ) => {
        mock!.setMode('http500');
        const goalSetAt = Date.now();
        const t = await startThreadWithGoal(user!, label, { timeoutMs: T });
        threads.push(t);
        onGoalSet?.(t);
        const failed = await waitTurnCompleted(user!, t.threadId, 'failed', T, t.goalSetSeq);
        mock!.setMode('goalComplete');
        const dueAt = await onFailed(t, failed.at);
        const started = await user!.waitFor(about(t.threadId, 'turn/started'), T, failed.seq);
        // Let the recovery turn finish (the model completes the goal) so the next outage starts on a quiet daemon.
        await waitGoalStatus(user!, t.threadId, 'complete', T, started.seq);
        await waitTurnCompleted(user!, t.threadId, undefined, T, started.seq);
        return { threadId: t.threadId, goalSetAt, failedAt: failed.at, dueAt, startedAt: started.at };
      };

      // ---- product: the engine, event-driven, with a timer at dueAt --------------------------
      const productRpcs: RpcRecord[] = [];
      const decisions = new DecisionLog();
      const options: EngineOptions = {
        ...DEFAULT_OPTIONS,
        baseDelayMs: BASE_DELAY_MS,
        maxDelayMs: MAX_DELAY_MS,
        // The global limiter (3 at once, then one per 5 s) throttles outages over many threads;
        // out of the way here, so each sample measures the scheduling, not the throttle.
        limiterBurst: samples + 1,
      };
      engine = new Engine(options, {
        connect: (listener) => countedSession(target, listener, productRpcs),
        target: socket,
        store: new JsonFileStore(path.join(ctx.tmpDir, 'state.json')),
        clock: systemClock,
        random: Math.random,
        onDecision: decisions.push,
      });
      await engine.start();
      await decisions.waitFor((d) => d.type === 'connection' && d.state === 'connected', T, 'the engine to connect');
      const product: Sample[] = [];
      for (let i = 0; i < samples; i++) {
        const s = await outage(`bench outage ${i + 1} (product)`, async (t) => {
          const backoff = await decisions.waitFor(
            (d) => d.type === 'backoff' && d.threadId === t.threadId,
            T,
            `the backoff of ${t.threadId}`,
          );
          return (backoff as BackoffDecision).dueAt;
        });
        const sample = measured(productRpcs, s);
        product.push(sample);
        ctx.log(
          `product  ${i + 1}/${samples}: due +${s.dueAt - s.failedAt} ms after the failure; set sent ${sample.setAt - s.dueAt} ms, turn/started ${s.startedAt - s.dueAt} ms after due; ${sample.rpcs} RPCs`,
        );
      }
      await engine.stop();
      engine = undefined;

      // ---- baseline: poll every watched goal once a second ---------------------------------
      const baselineRpcs: RpcRecord[] = [];
      const errors: string[] = [];
      baselineSession = await countedSession(target, IGNORE_EVENTS, baselineRpcs);
      baseline = new PollingDaemonReconciler(baselineSession, {
        intervalMs: POLL_INTERVAL_MS,
        onError: (threadId, error) =>
          errors.push(`${threadId}: ${error instanceof Error ? error.message : String(error)}`),
      });
      baseline.start();
      const polled: Sample[] = [];
      for (let i = 0; i < samples; i++) {
        // The same due moment as the product's i-th sample, relative to the failure.
        const offset = product[i].dueAt - product[i].failedAt;
        const s = await outage(
          `bench outage ${i + 1} (baseline)`,
          (t, failedAt) => {
            baseline!.setDue(t.threadId, failedAt + offset);
            return failedAt + offset;
          },
          (t) => baseline!.watch(t.threadId),
        );
        const sample = measured(baselineRpcs, s);
        polled.push(sample);
        ctx.log(
          `baseline ${i + 1}/${samples}: due +${offset} ms after the failure; set sent ${sample.setAt - s.dueAt} ms, turn/started ${s.startedAt - s.dueAt} ms after due; ${sample.rpcs} RPCs`,
        );
      }
      baseline.stop();
      if (errors.length > 0) throw new Error(`the baseline's polls failed: ${errors.slice(0, 5).join('; ')}`);

      const lat = (xs: Sample[]) => xs.map((x) => x.startedAt - x.dueAt);
      const rpc = (xs: Sample[]) => xs.map((x) => x.rpcs);
      const toSet = (xs: Sample[]) => xs.map((x) => x.setAt - x.dueAt);
      const daemonShare = (xs: Sample[]) => xs.map((x) => x.startedAt - x.setAt);
      const pLat = lat(product);
      const bLat = lat(polled);
      return {
        id: 'end-to-end',
        title: endToEndBench.title,
        params: {
          samples,
          codex: codexVersion(),
          engine: {
            baseDelayMs: BASE_DELAY_MS,
            maxDelayMs: MAX_DELAY_MS,
            limiterBurst: options.limiterBurst,
            jitter: 'Math.random (equal jitter)',
          },
          baselinePollIntervalMs: POLL_INTERVAL_MS,
          productLatenciesMs: pLat,
          baselineLatenciesMs: bLat,
          productDueToSetMs: toSet(product),
          baselineDueToSetMs: toSet(polled),
          setToTurnStartedMs: { product: daemonShare(product), baseline: daemonShare(polled) },
          dueAfterFailureMs: product.map((x) => x.dueAt - x.failedAt),
          productRpcsPerRecovery: rpc(product),
          baselineRpcsPerRecovery: rpc(polled),
          productRpcsByMethod: countBy(productRpcs),
          baselineRpcsByMethod: countBy(baselineRpcs),
        },
        figures: [
          figure('latency p50 (due → recovery turn/started)', 'ms', percentile(pLat, 50), percentile(bLat, 50)),
          figure('latency max', 'ms', Math.max(...pLat), Math.max(...bLat)),
          figure(
            'due → thread/goal/set written, p50',
            'ms',
            percentile(toSet(product), 50),
            percentile(toSet(polled), 50),
          ),
          figure(
            'requests per recovery, median (goal set → recovery turn/started)',
            'RPCs',
            percentile(rpc(product), 50),
            percentile(rpc(polled), 50),
          ),
        ],
        notes: [
          `Real Codex app-server daemon (@openai/codex ${codexVersion()}) with the project's mock model: each sample is a new thread whose goal's first turn fails (HTTP 500), then the model is healthy and the recovery turn completes the goal. Samples run one after another.`,
          "Latency: from the due moment to the recovery turn's turn/started as the user's own client (which started the thread) receives it; all clocks are this machine's Date.now().",
          `Product: the Engine in-process (as \`codex-goal-recovery watch\` runs it), system clock, backoff base ${BASE_DELAY_MS / 1000} s (first retry 0.5–1 s after the failure); the due moment is its own backoff decision's dueAt. The global limiter was raised to ${options.limiterBurst} so it never throttles these back-to-back samples.`,
          `Baseline: baselines/pollingDaemonClient.ts, a naive reconciler polling thread/goal/get for every watched thread every ${POLL_INTERVAL_MS} ms and sending thread/goal/set active when blocked and due, over the same JSON-RPC client, same daemon; its due moment is the failure (turn/completed at the user client) plus the product's delay for the same sample.`,
          "Requests: JSON-RPC requests written on the wire about the sample's thread, from its thread/goal/set to its recovery turn's start. The product's include arming (thread/resume, reads) and the re-reads it does before every set; the baseline's grow by one per second per watched thread for as long as it watches (here only the 2–3 s from goal set to recovery, then it stops polling the thread), whereas by design the product sends nothing between events apart from a resync every 60 s (not measured here).",
          "The latency splits into the recoverer's share (due → its thread/goal/set written: the product re-reads the goal, the thread and its latest turn, reads the rollout and saves its intent to disk before the set; the baseline waits for its next poll) and the rest (set → turn/started), which is the daemon's work for both, but is measured in the same process as the engine: right after its set the product reads the thread and its turns again and saves its state, which shares this event loop with the user client that timestamps turn/started, and the daemon with those reads. The product's figures include that.",
          `Latencies (ms), product: ${pLat.join(', ')}; baseline: ${bLat.join(', ')}. Set → turn/started (ms), product: ${daemonShare(product).join(', ')}; baseline: ${daemonShare(polled).join(', ')}.`,
        ],
      };
    } finally {
      baseline?.stop();
      await baselineSession?.close().catch(() => undefined);
      await engine?.stop().catch(() => undefined);
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

function countBy(log: RpcRecord[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of log) out[r.method] = (out[r.method] ?? 0) + 1;
  return out;
}
