// The leader window's service: runs the engine here, against the daemon the settings name,
// with its state in globalState. Its decisions go to the elected engine (src/leader/electedEngine.ts),
// which logs them in this window, streams them to the others and picks the window that notifies.
import type * as vscode from 'vscode';
import { systemClock } from '../core/clock';
import { runCommand } from '../core/commandTable';
import { Engine } from '../core/engine';
import type { Decision } from '../model/decision';
import type { EngineSnapshot } from '../model/snapshot';
import { startSession } from '../protocol/client';
import { openSharedTransport } from '../protocol/sharedTransport';
import type { FocusSource, TermEngine, TermEvents } from '../leader/electedEngine';
import { HandoverStore } from '../leader/handover';
import { GlobalStateStore, type MementoLike } from '../store/globalStateStore';
import { targetOf, type Settings } from '../config/settings';
import { VERSION } from '../version';
import type { RecoveryService, ServiceCommand } from './service';
import { Throttle } from '../core/throttle';
import { Listeners } from './listeners';
import { errorText } from '../util/errorText';

export interface HostIo {
  log: vscode.LogOutputChannel;
  /** Every decision this window's engine announces (once it is durable); none of another leader's. */
  decided?(decision: Decision): void;
  /** This window was picked to show a decision as a notification (the callee applies the notification level). */
  notify(decision: Decision, snapshot: EngineSnapshot): void;
  /** Whether this window has the focus: the leader notifies in the focused window only. */
  focus?: FocusSource;
}

export class EngineHost implements RecoveryService, TermEngine {
  readonly role = 'leader' as const;
  private readonly engine: Engine;
  private readonly listeners = new Listeners();
  private readonly throttle = new Throttle(100, () => this.listeners.fire());
  /** The snapshot as of the engine's last change; null once it changed: the next `snapshot()` makes it again. */
  private cached: EngineSnapshot | null = null;
  /** The engine's start: commands wait for it. */
  private ready: Promise<void> | null = null;

  /**
   * `seed`: the previous leader's last snapshot, when this window takes over from another engine.
   * `journalPath`: the crash journal beside globalState (a file in the extension's global storage);
   * omitted, globalState alone.
   */
  constructor(
    settings: Settings,
    globalState: MementoLike,
    private readonly io: HostIo,
    seed: EngineSnapshot | null,
    journalPath: string | undefined,
    events: TermEvents,
  ) {
    const target = targetOf(settings);
    this.engine = new Engine(settings.options, {
      connect: (listener) =>
        // The shared daemon only (never a private child on stdio): see protocol/sharedTransport.ts.
        openSharedTransport(target).then((transport) => startSession(transport, listener, { clientVersion: VERSION })),
      target: settings.socketPath,
      store: new HandoverStore(
        new GlobalStateStore(globalState, {
          ...(journalPath !== undefined && { journalPath }),
          info: (line) => io.log.info(line),
          onProblem: (message) => io.log.warn(message),
          guard: { fence: () => events.fence(), term: () => events.term() },
        }),
        seed,
        (taken) => io.log.info(`took over ${taken.length} watched thread(s) from the previous leader's last state`),
      ),
      clock: systemClock,
      random: Math.random,
      onDecision: (d) => this.changed(() => events.decided(d)),
      onChange: () => this.changed(() => events.changed()),
      fence: () => events.fence(),
    });
    this.cached = this.engine.snapshot();
  }

  /** Loads the state and connects (activation never waits for it); says why when it cannot. */
  start(): Promise<void> {
    this.ready = this.engine.start();
    this.ready.catch((error: unknown) => this.io.log.error(`could not start: ${errorText(error)}`));
    return this.ready;
  }

  /** New settings apply at once (a new daemon is a new EngineHost: see WindowRole). */
  applySettings(settings: Settings): void {
    this.engine.updateOptions(settings.options);
  }

  /**
   * The engine's state as of its last change, made at most once per change (a deep copy): whoever
   * reads it after being told of a change (this window's views, the broadcast to the followers)
   * sees that change.
   */
  snapshot(): EngineSnapshot {
    return (this.cached ??= this.engine.snapshot());
  }

  onDidChange(listener: () => void): { dispose(): void } {
    return this.listeners.add(listener);
  }

  /** Runs once the engine has loaded its state (a command before would save an empty state over it). */
  async run(command: ServiceCommand, threadId?: string): Promise<void> {
    if (!this.ready) throw new Error(`${command}: the engine has not started yet`);
    await this.ready;
    return runCommand(this.engine.commands, command, threadId);
  }

  /** Stops the engine (it saves its state). */
  async stop(): Promise<void> {
    this.throttle.dispose();
    await this.engine.stop();
  }

  /** The engine changed (`tell` passes it on): the next snapshot is made again, the views told soon. */
  private changed(tell: () => void): void {
    this.cached = null;
    tell();
    this.throttle.poke();
  }
}
