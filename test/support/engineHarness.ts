// Builds an Engine against the fake daemon, a fake clock and a store, for unit tests.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Engine } from '../../src/core/engine';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import type { Decision } from '../../src/model/decision';
import type { Connector } from '../../src/protocol/daemon';
import type { StateStore } from '../../src/store/store';
import { FakeClock } from './fakeClock';
import { FakeDaemon, type FakeConnection } from './fakeDaemon';
import { ScopedClock } from './crashWorld';
import { startSession } from '../../src/protocol/client';
import type { PersistedState } from '../../src/model/watch';
import { MemoryStore } from './memoryStore';

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
  /** Moves the fake clock and waits for what fell due. */
  advance(ms: number): Promise<void>;
  /** Lets in-memory streams deliver, then waits for the engine. */
  settle(): Promise<void>;
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
  get location(): string { return this.inner.location; }
  load() { return this.inner.load(); }
  save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void> {
    return this.dead ? new Promise<void>(() => undefined) : this.inner.save(state, changed);
  }
  async compact(): Promise<void> {
    if (!this.dead) await this.inner.compact?.();
  }
  kill(): void { this.dead = true; }
}

export const TEST_OPTIONS: EngineOptions = {
  ...DEFAULT_OPTIONS,
  baseDelayMs: 1_000,
  maxDelayMs: 60_000,
  limiterBurst: 1_000,
  limiterIntervalMs: 1,
  // The seed's scenarios start a recovery at its due time; preparing ahead has its own tests.
  prepareMs: 0,
};

export async function makeHarness(init: {
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
} = {}): Promise<Harness> {
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
  const engine = new Engine({ ...TEST_OPTIONS, ...init.options }, {
    connect: baseConnect ?? (async (listener) => {
      const c = daemon.accept();
      connections.push(c);
      return startSession(c.transport(), listener, { clientVersion: 'test', requestTimeoutMs: 5_000 });
    }),
    store: mortal,
    clock: scoped,
    random: init.random ?? (() => 1), // the seed's jitter(d) = d: the full nominal delay
    onDecision: (d) => { if (!crashed) decisions.push(d); },
    onChange: () => { changes += 1; },
    onRolloutRead: init.onRolloutRead,
  });
  const settle = async () => {
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      clock.advance(0); // timers due now fire, as real ones would
      if (!crashed) await engine.idle();
    }
  };
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
      clock.advance(ms);
      await settle();
    },
    settle,
    crash: () => {
      crashed = true;
      scoped.kill();
      mortal.kill();
      for (const c of connections) c.close('EOF (the engine crashed)');
    },
    cleanup: async () => {
      if (!crashed) await engine.stop();
      if (!init.dir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  if (init.start !== false) {
    await engine.start();
    await settle();
  }
  return h;
}
