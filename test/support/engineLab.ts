// The integration lab, set up once: for a describe, a real Codex daemon of one build (with the mock
// model, in a private CODEX_HOME: test/support/daemonLab.ts) and an engine in-process on its
// control socket (test/support/realEngine.ts), started before the describe's tests and stopped
// after them, whatever state they are in.
import { after, before } from 'node:test';
import type { CodexBuild } from '../../src/demo/codexBinary';
import type { EngineOptions } from '../../src/core/options';
import { connectDaemon } from '../../src/protocol/client';
import { DaemonLab } from './daemonLab';
import { RealEngine } from './realEngine';

export interface EngineLab {
  /** The daemon, its mock model and the user's client (set once the describe's `before` ran). */
  readonly lab: DaemonLab;
  /** The engine on the lab's socket: the shipped options, but for `options`. */
  readonly real: RealEngine;
}

/** Registers the lab's `before` and `after` in the calling describe; its parts are there in the tests. */
export function engineLab(codex: CodexBuild, options: Partial<EngineOptions> = {}): EngineLab {
  const parts: { lab?: DaemonLab; real?: RealEngine } = {};
  before(async () => {
    const lab = (parts.lab = await DaemonLab.start(codex));
    parts.real = await RealEngine.start(
      (listener) => connectDaemon({ kind: 'socket', path: lab.socket }, listener, { clientVersion: 'test' }),
      options,
    );
  });
  after(async () => {
    await parts.real?.close();
    await parts.lab?.close();
  });
  return {
    get lab() {
      if (!parts.lab) throw new Error('the lab is not started: its parts are there in tests, not in describe');
      return parts.lab;
    },
    get real() {
      if (!parts.real) throw new Error('the engine is not started: its parts are there in tests, not in describe');
      return parts.real;
    },
  };
}
