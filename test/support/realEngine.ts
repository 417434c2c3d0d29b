// An engine in-process against a real Codex app-server: the system clock, a JSON file store in a
// private directory, every decision recorded (and printed when a wait times out).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Engine } from '../../src/core/engine';
import { systemClock } from '../../src/core/clock';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import type { Random } from '../../src/core/backoff';
import type { Decision } from '../../src/model/decision';
import type { Connector } from '../../src/protocol/daemon';
import { JsonFileStore } from '../../src/store/jsonFileStore';
import { sleep } from '../../src/demo/codexProcesses';
import { until } from './wait';

export class RealEngine {
  readonly decisions: Decision[] = [];
  /** When each decision reached this process (Date.now(), ms): `decidedAt[i]` is `decisions[i]`'s. */
  readonly decidedAt: number[] = [];
  readonly engine: Engine;
  private readonly listeners: ((d: Decision) => void)[] = [];

  private constructor(
    readonly dir: string,
    options: Partial<EngineOptions>,
    connect: Connector,
    random: Random,
  ) {
    this.engine = new Engine(
      { ...DEFAULT_OPTIONS, ...options },
      {
        connect,
        store: new JsonFileStore(path.join(dir, 'state.json')),
        clock: systemClock,
        random,
        onDecision: (d) => {
          this.decisions.push(d);
          this.decidedAt.push(Date.now());
          for (const listener of this.listeners) listener(d);
        },
      },
    );
  }

  /** Starts the engine and waits for its first connection. `random`: the backoff's jitter (Math.random). */
  static async start(
    connect: Connector,
    options: Partial<EngineOptions> = {},
    random: Random = Math.random,
  ): Promise<RealEngine> {
    const r = new RealEngine(fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-real-engine-')), options, connect, random);
    await r.engine.start();
    await r.until(() => r.engine.connectionState().kind === 'connected', 'the connection');
    return r;
  }

  /**
   * Calls `listener` with each decision from now on, as the engine makes it (synchronously, as the
   * extension's window hands each one to its notifier with the engine's snapshot of that moment).
   */
  onDecision(listener: (d: Decision) => void): void {
    this.listeners.push(listener);
  }

  /** Every decision so far, a line each (for a failure's message). */
  decisionLog(): string {
    return this.decisions.map((d) => JSON.stringify(d)).join('\n');
  }

  until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
    return until(() => `${what}\n${this.decisionLog()}`, check, timeoutMs, 50);
  }

  /**
   * The positive wait before "nothing (more) happened" for an in-process engine (the runner's is
   * test/support/runnerProcess.ts settleAndStop): the wall clock past every due time it announced
   * (`dueAt` too, if given), no work under way and no recovery planned (a planned one is waited
   * out: past its due time it must have moved), then a full resync (the pass the shipped 60 s
   * timer makes) and its work. Only then may a test read the daemon's record and find nothing more.
   */
  async settle(opts: { dueAt?: number | null; timeoutMs?: number } = {}): Promise<void> {
    const announced = this.decisions.flatMap((d) => (d.type === 'backoff' ? [d.dueAt] : []));
    const latest = Math.max(0, opts.dueAt ?? 0, ...announced);
    const deadline = Math.max(Date.now(), latest) + (opts.timeoutMs ?? 20_000);
    await sleep(Math.max(0, latest + 100 - Date.now()));
    for (;;) {
      await this.engine.idle();
      const next = this.engine.nextDueAt();
      const under = this.engine.watches().filter((w) => w.state.kind === 'recovering' || w.pending !== null);
      if (next === null && under.length === 0) break;
      if (Date.now() > Math.max(deadline, (next ?? 0) + 20_000))
        throw new Error(
          `the engine never settled: next due ${next === null ? 'none' : new Date(next).toISOString()}, under way ${JSON.stringify(under.map((w) => [w.threadId, w.state]))}\n${this.decisions.map((d) => JSON.stringify(d)).join('\n')}`,
        );
      await sleep(Math.max(50, Math.min(500, (next ?? 0) + 100 - Date.now())));
    }
    await this.engine.resync();
    await this.engine.idle();
  }

  async close(): Promise<void> {
    await this.engine.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
