// Builds an Engine against the fake daemon, a fake clock and a store, for unit tests.
//
// The engine runs with the shipped options (DEFAULT_OPTIONS: backoff base 30 s, cap 30 min, the
// 200 ms preparation, the limiter's burst of 3 then one per 5 s, the 60 s resync). A test that
// needs another value passes it in `options`, and its describe/file header says which and why.
//
// The daemon is strict (test/support/fakeDaemon.ts): a broken rule fails the test. `settle`,
// `advance`, `reconcile` and `cleanup` throw the first one; the fake clock fires one timer at a
// time and waits for this engine to react (settle) before the next.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Engine } from '../../src/core/engine';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import type { Decision } from '../../src/model/decision';
import type { Connector } from '../../src/protocol/daemon';
import type { StateStore } from '../../src/store/store';
import { FakeClock } from './fakeClock';
import { FakeDaemon, type FakeConnection, StrictDaemonError } from './fakeDaemon';
import { ScopedClock } from './crashWorld';
import { startSession } from '../../src/protocol/client';
import type { PersistedState } from '../../src/model/watch';
import { MemoryStore } from './memoryStore';
import { immediate, tempDir } from './wait';

export interface Harness {
  dir: string;
  daemon: FakeDaemon;
  clock: FakeClock;
  store: StateStore;
  engine: Engine;
  decisions: Decision[];
  /** How many times the engine told its views that something changed. */
  changes(): number;
  /** The seed's reconcile(): a full resync, then wait until the engine is idle. */
  reconcile(): Promise<void>;
  /** Moves the fake clock, timer by timer, letting the engine react to each; then settles. */
  advance(ms: number): Promise<void>;
  /** Lets in-memory streams deliver and timers due now fire, until the engine is idle and nothing moves. */
  settle(): Promise<void>;
  /** Stops the engine (unless it crashed), removes the directory, and throws a broken rule no one reported. */
  cleanup(): Promise<void>;
  /**
   * A crash: the engine is dropped without `stop()`. Its timers die, its connections close, and
   * nothing it writes from now on reaches the store (a save under way may still land, as on a
   * real disk). `cleanup` then only removes the directory.
   */
  crash(): void;
}

/** A store whose writer can die: after `kill`, its saves never reach the store it wraps. */
class MortalStore implements StateStore {
  private dead = false;
  constructor(private readonly inner: StateStore) {}
  get location(): string {
    return this.inner.location;
  }
  load() {
    return this.inner.load();
  }
  save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void> {
    return this.dead ? new Promise<void>(() => undefined) : this.inner.save(state, changed);
  }
  async compact(): Promise<void> {
    if (!this.dead) await this.inner.compact?.();
  }
  kill(): void {
    this.dead = true;
  }
}

/** What every unit test runs with unless it says otherwise: the shipped defaults. */
export const TEST_OPTIONS: EngineOptions = { ...DEFAULT_OPTIONS };

export type HarnessInit = Parameters<typeof makeHarness>[0];

/**
 * The start of most engine tests: a harness whose daemon (`init.daemon`, or a new one in `init.dir`
 * or a private directory) has `threads` with active goals, each checked armed. `list` gets it, for
 * the test file's `after` to clean up.
 */
export async function armedHarness(threads: string[], init: HarnessInit = {}, list?: Harness[]): Promise<Harness> {
  const dir = init.dir ?? tempDir('cgr-engine-');
  const daemon = init.daemon ?? new FakeDaemon(dir);
  for (const id of threads) daemon.addThread(id);
  const h = await makeHarness({ ...init, dir, daemon });
  list?.push(h);
  for (const id of threads) assert.equal(h.engine.watch(id)?.state.kind, 'running', `${id} not armed`);
  return h;
}

export async function makeHarness(
  init: {
    dir?: string;
    daemon?: FakeDaemon;
    store?: StateStore;
    clock?: FakeClock;
    options?: Partial<EngineOptions>;
    random?: () => number;
    start?: boolean;
    /** Sees every read of a rollout (the engine's `onRolloutRead`). */
    onRolloutRead?: (path: string, position: number, length: number) => void;
    /** How the engine connects (default: straight to the fake daemon). */
    connect?: (daemon: FakeDaemon, clock: FakeClock) => Connector;
    /** The engine's fence (EngineDeps.fence): why it may not act now, or null (default: it always may). */
    fence?: () => string | null;
  } = {},
): Promise<Harness> {
  const dir = init.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-unit-'));
  const daemon = init.daemon ?? new FakeDaemon(dir);
  const clock = init.clock ?? new FakeClock();
  const store = init.store ?? new MemoryStore();
  const decisions: Decision[] = [];
  let changes = 0;
  const scoped = new ScopedClock(clock);
  const mortal = new MortalStore(store);
  const connections: FakeConnection[] = [];
  const baseConnect = init.connect ? init.connect(daemon, clock) : null;
  let crashed = false;
  const engine = new Engine(
    { ...TEST_OPTIONS, ...init.options },
    {
      connect:
        baseConnect ??
        (async (listener) => {
          const c = daemon.accept();
          connections.push(c);
          return startSession(c.transport(), listener, { clientVersion: 'test', requestTimeoutMs: 5_000 });
        }),
      store: mortal,
      clock: scoped,
      random: init.random ?? (() => 1), // the seed's jitter(d) = d: the full nominal delay
      onDecision: (d) => {
        if (!crashed) decisions.push(d);
      },
      onChange: () => {
        changes += 1;
      },
      onRolloutRead: init.onRolloutRead,
      ...(init.fence && { fence: init.fence }),
    },
  );
  // Until nothing moves: three turns of the loop in a row with no timer due and the engine idle.
  // A livelock is what never lets it: timers that keep falling due at one instant, or frames that
  // keep coming from the reordering daemon. Each is counted, never turns of the loop (a gap of the
  // reordering daemon is up to 8 ms of real time: thousands of turns on a fast machine), and the
  // error says which one it was.
  const quiet = async () => {
    const reorder = daemon.reorder;
    const sentBefore = reorder?.delivered.length ?? 0;
    let timers = 0;
    let waited = 0; // turns in a row waiting for the reordering daemon with no frame out
    let sent = sentBefore;
    for (let calm = 0; calm < 3;) {
      const frames = (reorder?.delivered.length ?? 0) - sentBefore;
      if (timers > 10_000 || frames > 1_000 || waited > 100_000)
        throw new Error(
          `the engine never settled: ${timers} timers fired at one instant, ${frames} frames sent by the ` +
            `reordering daemon, ${waited} turns of the loop with none`,
        );
      await immediate();
      const fired = clock.fireDue();
      if (fired || reorder?.busy()) {
        if (fired) timers += 1;
        waited = reorder && reorder.delivered.length === sent ? waited + 1 : 0;
        sent = reorder?.delivered.length ?? 0;
        calm = 0;
        continue;
      } // timers due now fire, as real ones would; a reordering daemon's notifications go out
      if (!crashed) await engine.idle();
      calm += 1;
    }
  };
  const settle = () => daemon.checking(quiet);
  const unreact = clock.onReact(settle);
  const h: Harness = {
    dir,
    daemon,
    clock,
    store,
    engine,
    decisions,
    changes: () => changes,
    reconcile: async () => {
      await settle();
      await engine.resync();
      await settle();
    },
    advance: async (ms) => {
      await clock.advance(ms);
      await settle();
    },
    settle,
    crash: () => {
      crashed = true;
      unreact();
      scoped.kill();
      mortal.kill();
      for (const c of connections) c.close('EOF (the engine crashed)');
    },
    cleanup: async () => {
      // Violations the test was told of already (it failed on them): not thrown again here, so an
      // `after` hook cleaning many harnesses goes on. Any other is.
      const told = daemon.hasUnreported() ? -1 : daemon.violations.length;
      try {
        await daemon.checking(async () => {
          unreact();
          if (!crashed) await engine.stop();
          if (!init.dir) fs.rmSync(dir, { recursive: true, force: true });
        }, false);
      } catch (error) {
        if (!(error instanceof StrictDaemonError) || daemon.violations.length !== told) throw error;
      }
    },
  };
  if (init.start !== false) {
    await engine.start();
    await settle();
  }
  return h;
}
