// One row of the `outage-cost` bench (test/bench/outageCost.ts): an engine with the row's options
// on its own real daemon (@openai/codex, the pinned build) and its own mock model, N goals armed
// while running, and what one outage cost it: read from the daemon's own record of each thread
// (test/support/daemonJudge.ts: automatic activations, failed turns, the goal's status) and from
// the engine's decisions, timed as they reached this process.
import type { Random } from '../../src/core/backoff';
import type { EngineOptions } from '../../src/core/options';
import type { StartedGoalThread } from '../../src/demo/goalThreads';
import type { Decision } from '../../src/model/decision';
import { asksForPerson } from '../../src/model/notice';
import type { WatchState } from '../../src/model/watch';
import { connectDaemon } from '../../src/protocol/client';
import { Burst, type BurstTimers } from '../../src/views/notificationBurst';
import { daemonRecord } from '../support/daemonJudge';
import { DaemonLab } from '../support/daemonLab';
import type { Json } from '../support/json';
import { RealEngine } from '../support/realEngine';

/** A first answer that outlasts the arming of every goal: `down()` ends them all at once. */
const FIRST_ANSWER_MS = 5 * 60_000;

/**
 * Codex's shell snapshot off: each new thread would otherwise start the user's login shell to
 * capture its environment (here ~/.bashrc runs pyenv: hundreds of processes per thread), which
 * loads the machine while dozens of goals start at once. The mock's turns run no shell.
 */
export const CODEX_TOML = '[features]\nshell_snapshot = false';

/** Where a goal stays once the outage is over for it: done, or a person must act. */
const FINAL = new Set<WatchState['kind']>([
  'complete',
  'gaveUp',
  'budgetSpent',
  'needsAttention',
  'budgetLimited',
  'modelBlocked',
]);

/** A state that shows the engine armed a goal whose turn is under way (or between two turns). */
const ARMED_RUNNING = new Set<WatchState['kind']>(['running', 'idle', 'turnEnding']);

export interface RowSpec {
  /** "product", "per-goal", "fixed 1/2/4 s". */
  name: string;
  options: Partial<EngineOptions>;
  random: Random;
}

/** What one outage cost one row. */
export interface RowCost {
  goals: number;
  /** Automatic recoveries whose turn failed again (the daemon's record: activations − the one that took). */
  wasted: number;
  /** The same from the engine's `recovering` decisions (a cross-check). */
  wastedByDecisions: number;
  /** Automatic activations in all (the daemon's record). */
  recoveries: number;
  /**
   * Per goal that completed: from the heal to the activation that took, as the daemon wrote it
   * (0 if it went out before the heal).
   */
  downtimesMs: number[];
  gaveUp: number;
  /** When each decision that needs a person (`gave-up`, `attention`) reached this process. */
  needsPersonAt: number[];
  /** Goals whose record disagrees with itself (failed turns ≠ wasted + 1): said in the log. */
  oddities: string[];
}

export class OutageRow {
  readonly goals: StartedGoalThread<Json>[] = [];

  private constructor(
    readonly spec: RowSpec,
    readonly lab: DaemonLab,
    readonly real: RealEngine,
  ) {}

  static async start(spec: RowSpec): Promise<OutageRow> {
    const lab = await DaemonLab.start(undefined, CODEX_TOML);
    try {
      const real = await RealEngine.start(
        (listener) => connectDaemon({ kind: 'socket', path: lab.socket }, listener, { clientVersion: 'bench' }),
        spec.options,
        spec.random,
      );
      return new OutageRow(spec, lab, real);
    } catch (error) {
      await lab.close();
      throw error;
    }
  }

  get ids(): string[] {
    return this.goals.map((g) => g.threadId);
  }

  /** `n` goals, their first answers slow (the mock's `slow`, ended by `down()`), armed by the engine while they run. */
  async arm(n: number): Promise<void> {
    this.lab.mock.setMode('slow', { delayMs: FIRST_ANSWER_MS });
    for (let i = 0; i < n; i++) this.goals.push(await this.lab.goal(`outage goal ${i}`));
    const { engine } = this.real;
    const asked = () => this.lab.mock.requestLog.filter((r) => r.answered === 'slow').length;
    await this.real.until(
      () =>
        asked() >= n &&
        this.ids.every((id) => {
          const w = engine.watch(id);
          return w !== undefined && ARMED_RUNNING.has(w.state.kind) && w.runsOn !== null;
        }),
      `${this.spec.name}: ${n} goals armed while running`,
    );
    await engine.idle();
  }

  /** What the goals run on, as the engine read it (one provider and model: one group). */
  runsOn(): string[] {
    return [...new Set(this.ids.map((id) => this.real.engine.watch(id)?.runsOn ?? 'unknown'))];
  }

  /**
   * The provider goes down: every request fails with HTTP 500 (Codex retries once, then the turn
   * fails). The slow first answers end now, so every goal's next turn meets the outage at once.
   * Returns how many ended (one per goal).
   */
  down(): number {
    this.lab.mock.setMode('http500');
    return this.lab.mock.answerSlowNow();
  }

  /** The provider is back: the next request completes the goal. */
  heal(): void {
    this.lab.mock.setMode('goalComplete');
  }

  /** When each goal's first failure was decided (its first `backoff`), or null until every goal has one. */
  firstFailures(): number[] | null {
    const first = new Map<string, number>();
    this.real.decisions.forEach((d, i) => {
      if (d.type === 'backoff' && !first.has(d.threadId)) first.set(d.threadId, this.real.decidedAt[i]);
    });
    return this.ids.every((id) => first.has(id)) ? this.ids.map((id) => first.get(id)!) : null;
  }

  /** Every goal is done with the outage: complete, or waiting for a person. */
  finished(): boolean {
    return this.ids.every((id) => {
      const kind = this.real.engine.watch(id)?.state.kind;
      return kind !== undefined && FINAL.has(kind);
    });
  }

  /** What the outage cost, once `finished()`: the engine settled, then the daemon's record read. */
  async measure(healedAt: number): Promise<RowCost> {
    await this.real.settle();
    const user = await this.lab.user();
    const timed = this.real.decisions.map((d, i) => ({ d, at: this.real.decidedAt[i] }));
    const cost: RowCost = {
      goals: this.goals.length,
      wasted: 0,
      wastedByDecisions: 0,
      recoveries: 0,
      downtimesMs: [],
      gaveUp: 0,
      needsPersonAt: timed.filter((x) => asksForPerson(x.d)).map((x) => x.at),
      oddities: [],
    };
    for (const g of this.goals) {
      const record = await daemonRecord(user, g.threadId, String(g.thread.path));
      const complete = record.goalStatus === 'complete';
      const activations = record.rollout.automatic.length;
      const wasted = activations - (complete ? 1 : 0);
      const mine = timed.filter((x) => 'threadId' in x.d && x.d.threadId === g.threadId);
      const recovering = mine.filter((x) => x.d.type === 'recovering');
      cost.recoveries += activations;
      cost.wasted += wasted;
      cost.wastedByDecisions += recovering.length - (complete ? 1 : 0);
      if (mine.some((x) => x.d.type === 'gave-up')) cost.gaveUp += 1;
      if (complete) {
        // When the recovery that took was written, by the daemon's clock (the machine's), else its decision.
        const at = record.rollout.automatic.at(-1)?.at ?? NaN;
        const decided = recovering.at(-1)?.at ?? NaN;
        const setAt = Number.isFinite(at) ? at : decided;
        if (Number.isFinite(setAt)) cost.downtimesMs.push(Math.max(0, setAt - healedAt));
        else cost.oddities.push(`${g.threadId}: complete without a recovery`);
      }
      if (record.failed.length !== wasted + 1)
        cost.oddities.push(
          `${g.threadId}: ${record.failed.length} failed turns, ${activations} automatic activations, goal ${record.goalStatus}`,
        );
    }
    return cost;
  }

  /** Every decision of this row, a line each (for a failure's message). */
  decisionLog(): string {
    return this.real.decisions.map((d: Decision, i) => `${this.real.decidedAt[i]} ${JSON.stringify(d)}`).join('\n');
  }

  private engineStopped = false;

  /** Stops the engine (once). */
  async stopEngine(): Promise<void> {
    if (this.engineStopped) return;
    this.engineStopped = true;
    await this.real.close().catch(() => undefined);
  }

  /** Stops the engine, then the lab (which kills every daemon this process started: stop every engine first). */
  async close(): Promise<void> {
    await this.stopEngine();
    await this.lab.close();
  }
}

/**
 * How many notifications the product's burst rule (src/views/notificationBurst.ts `Burst`, the
 * windows of src/model/notice.ts, here `holdMs` and `maxMs`) shows for decisions at these times:
 * the product's own `Burst` on a virtual clock.
 */
export function burstNotifications(times: readonly number[], holdMs: number, maxMs: number): number {
  let now = 0;
  let timers: { at: number; fire: () => void }[] = [];
  const clock: BurstTimers = {
    now: () => now,
    set: (fire, ms) => {
      const t = { at: now + ms, fire };
      timers.push(t);
      return () => {
        timers = timers.filter((x) => x !== t);
      };
    },
  };
  let shown = 0;
  const burst = new Burst<number>(
    clock,
    () => {
      shown += 1;
    },
    holdMs,
    maxMs,
  );
  const runUntil = (t: number) => {
    for (;;) {
      const next = timers.filter((x) => x.at <= t).sort((a, b) => a.at - b.at)[0];
      if (next === undefined) break;
      timers = timers.filter((x) => x !== next);
      now = next.at;
      next.fire();
    }
    now = Math.max(now, t);
  };
  for (const t of [...times].sort((a, b) => a - b)) {
    runUntil(t);
    burst.add(t);
  }
  runUntil(Number.MAX_SAFE_INTEGER);
  return shown;
}
