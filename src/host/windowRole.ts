// Which window runs the engine. Every VS Code window has its own extension host; exactly one
// of them (the leader, elected through an exclusive Unix-socket listen in a private directory)
// runs the engine against a daemon. The others follow it: same tree, same countdown, the same
// decisions in their log, and their commands go to the leader. When the leader's window closes,
// another takes over. The term of office is src/leader/electedEngine.ts, shared with the runner;
// this file is the window's hooks on it: the views' service, the log, the notifications.
import { decisionLevel } from '../model/decisionLevel';
import type * as vscode from 'vscode';
import { targetOf, type Settings } from '../config/settings';
import { ElectedEngine, type TermEngine, type TermEvents } from '../leader/electedEngine';
import type { LeaderElection, LeaderElectionOptions } from '../leader/election';
import { electionDir, electionFor } from '../leader/naming';
import { decisionLine } from '../model/decisionText';
import { emptySnapshot, type EngineSnapshot } from '../model/snapshot';
import { EngineHost, type HostIo } from './engineHost';
import { FollowerHost } from './followerHost';
import { Listeners } from './listeners';
import type { RecoveryService } from './service';
import { Serial } from '../util/serial';

const STOPPED = 'the window stopped before the engine started';

/** One election per daemon, shared with the headless runners that watch the same socket. */
export function electionName(settings: Settings): string {
  return electionFor(targetOf(settings))!.name;
}

/** What a window says it is to the engines that follow it. */
export const WINDOW_WHO = 'VS Code window';

/** What a leader window runs: its views' service, a term's engine, and the settings it follows. */
export type WindowEngine = RecoveryService & TermEngine & { applySettings(settings: Settings): void };

export interface WindowRoleParts {
  /** The engine's crash journal beside globalState (see GlobalStateStore). */
  journalPath?: string;
  /** How the election is made (a test passes one that cannot be, as on Windows). */
  makeElection?: (opts: LeaderElectionOptions) => LeaderElection;
  /** How a term's engine is made (default: an EngineHost on this window's globalState; a test passes a fake). */
  makeEngine?: (settings: Settings, seed: EngineSnapshot | null, events: TermEvents) => WindowEngine;
}

export class WindowRole {
  private current: RecoveryService;
  private currentSubscription: { dispose(): void } | null = null;
  private elected: ElectedEngine<WindowEngine> | null = null;
  private readonly listeners = new Listeners();
  /** Settings apply one after another, in the order they came. */
  private readonly settingsChanges = new Serial();
  /** The window said once that it runs alone, with no election. */
  private saidAlone = false;
  /** `current` is the one made by `starting()`, before the election has decided. */
  private isStarting = true;
  /** Commands that came while starting: they go to the next service that is not the starting one. */
  private readonly waiting: { resolve(service: RecoveryService): void; reject(error: Error): void }[] = [];
  private disposed = false;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private settings: Settings,
    private readonly io: HostIo,
    private readonly parts: WindowRoleParts = {},
  ) {
    this.current = this.starting();
  }

  service(): RecoveryService {
    return this.current;
  }

  onDidChange(listener: () => void): { dispose(): void } {
    return this.listeners.add(listener);
  }

  /** Joins the election in the background. */
  start(): void {
    const log = this.io.log;
    const { makeElection, makeEngine, journalPath } = this.parts;
    const elected = new ElectedEngine<WindowEngine>({
      election: { dir: electionDir(), name: electionName(this.settings) },
      who: WINDOW_WHO,
      ...(makeElection && { makeElection }),
      makeEngine: (seed, events) =>
        makeEngine
          ? makeEngine(this.settings, seed, events)
          : new EngineHost(this.settings, this.context.globalState, this.io, seed, journalPath, events),
      onLead: (host, how) => {
        log.info(how === 'elected' ? 'this window runs the engine (leader)' : 'this window runs the engine');
        this.swap(host);
      },
      onFollow: (leader) => {
        leader.welcomed.then(
          ({ pid, who }) =>
            log.info(`another engine (${who ?? 'a window'}, pid ${pid}) runs against this daemon: following it`),
          () => undefined,
        );
        this.swap(new FollowerHost(leader, this.settings.socketPath));
      },
      onDecision: (d, by, at) => {
        // Another engine's decision says who made it: this window's log shows every decision.
        const line = by.self ? decisionLine(d, at) : `[${by.who}, pid ${by.pid}] ${decisionLine(d, at)}`;
        // At the runner's severity (src/model/decisionLevel.ts): the daemon's quiet tries are debug.
        const level = decisionLevel(d);
        log[level === 'error' || level === 'warning' ? 'warn' : level === 'debug' ? 'debug' : 'info'](line);
        if (by.self) this.io.decided?.(d);
      },
      notify: (d) => this.io.notify(d, this.current.snapshot()),
      ...(this.io.focus && { focus: this.io.focus }),
      onAlone: (error) => {
        // No election here (Windows: no Unix sockets in a private directory; an unsafe directory):
        // this window runs the engine alone. Said once, not at every settings change.
        if (!this.saidAlone)
          log.warn(`leader election unavailable (${error.message}); this window runs the engine alone`);
        this.saidAlone = true;
      },
      onWarning: (message) => log.warn(message),
      log: (m) => log.debug(`election: ${m}`),
    });
    this.elected = elected;
    // An engine that cannot start has said why (EngineHost); nothing more to do here.
    elected.start().catch(() => undefined);
  }

  /** Applies settings in the order they came: a new daemon means a new election. */
  applySettings(settings: Settings): Promise<void> {
    return this.settingsChanges.run(async () => {
      const moved = electionName(settings) !== electionName(this.settings);
      this.settings = settings;
      if (moved) {
        await this.stop();
        this.start();
      } else {
        this.elected?.runningEngine?.applySettings(settings);
      }
    });
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await this.stop();
    this.listeners.clear();
    for (const w of this.waiting.splice(0)) w.reject(new Error(STOPPED));
  }

  /**
   * Before the election has decided: nothing to show yet. A command that comes now (the window
   * has just opened) waits for the engine, this window's or the leader's, and is carried out there.
   */
  private starting(): RecoveryService {
    const snap = emptySnapshot(this.settings.socketPath, Date.now());
    const started = () =>
      new Promise<RecoveryService>((resolve, reject) => {
        if (this.disposed) reject(new Error(STOPPED));
        else if (this.isStarting) this.waiting.push({ resolve, reject });
        else resolve(this.current);
      });
    return {
      role: 'follower',
      snapshot: () => snap,
      onDidChange: () => ({ dispose: () => undefined }),
      run: (command, threadId) => started().then((service) => service.run(command, threadId)),
    };
  }

  private swap(service: RecoveryService, starting = false): void {
    this.currentSubscription?.dispose();
    this.current = service;
    this.isStarting = starting;
    this.currentSubscription = service.onDidChange(() => this.listeners.fire());
    if (!starting) for (const w of this.waiting.splice(0)) w.resolve(service);
    this.listeners.fire();
  }

  private async stop(): Promise<void> {
    const elected = this.elected;
    this.elected = null;
    await elected?.stop();
    this.swap(this.starting(), true);
  }
}
