// An engine in-process against a real Codex app-server: the system clock, a JSON file store in a
// private directory, every decision recorded (and printed when a wait times out).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Engine } from '../../src/core/engine';
import { systemClock } from '../../src/core/clock';
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import type { Decision } from '../../src/model/decision';
import type { Connector } from '../../src/protocol/daemon';
import { JsonFileStore } from '../../src/store/jsonFileStore';
import { sleep } from '../../src/demo/codexProcesses';

export class RealEngine {
  readonly decisions: Decision[] = [];
  readonly engine: Engine;

  private constructor(readonly dir: string, options: Partial<EngineOptions>, connect: Connector) {
    this.engine = new Engine({ ...DEFAULT_OPTIONS, ...options }, {
      connect,
      store: new JsonFileStore(path.join(dir, 'state.json')),
      clock: systemClock,
      random: Math.random,
      onDecision: (d) => this.decisions.push(d),
    });
  }

  /** Starts the engine and waits for its first connection. */
  static async start(connect: Connector, options: Partial<EngineOptions> = {}): Promise<RealEngine> {
    const r = new RealEngine(fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-real-engine-')), options, connect);
    await r.engine.start();
    await r.until(() => r.engine.connectionState().kind === 'connected', 'the connection');
    return r;
  }

  async until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${this.decisions.map((d) => JSON.stringify(d)).join('\n')}`);
      await sleep(50);
    }
  }

  async close(): Promise<void> {
    await this.engine.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
