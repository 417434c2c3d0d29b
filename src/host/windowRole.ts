// Which window runs the engine. Every VS Code window has its own extension host; exactly one
// of them (the leader, elected through an exclusive Unix-socket listen in a private directory)
// runs the engine against a daemon. The others follow it: same tree, same countdown, and their
// commands go to the leader. When the leader's window closes, another takes over.
import type * as vscode from 'vscode';
import { targetOf, type Settings } from '../config/settings';
import { parseChannelCommand } from '../core/commands';
import { LeaderElection, type LeaderElectionOptions } from '../leader/election';
import type { FollowerConnection } from '../leader/followerConnection';
import type { LeaderServer } from '../leader/leaderServer';
import { electionDir, electionFor } from '../leader/naming';
import { emptySnapshot, type EngineSnapshot } from '../model/snapshot';
import { EngineHost, type HostIo } from './engineHost';
import { FollowerHost } from './followerHost';
import { Listeners } from './listeners';
import type { RecoveryService, ServiceCommand } from './service';
import { Serial } from '../util/serial';
import { errorText } from '../util/errorText';

/** Before the election has decided: nothing to show yet. */
class Starting implements RecoveryService {
  readonly role = 'follower' as const;
  private readonly snap: EngineSnapshot;
  constructor(target: string) {
    this.snap = emptySnapshot(target, Date.now());
  }
  snapshot(): EngineSnapshot {
    return this.snap;
  }
  onDidChange(): { dispose(): void } {
    return { dispose: () => undefined };
  }
  run(command: ServiceCommand): Promise<void> {
    return Promise.reject(new Error(`${command}: still starting, try again in a moment`));
  }
}

/** One election per daemon, shared with the headless runners that watch the same socket. */
export function electionName(settings: Settings): string {
  return electionFor(targetOf(settings))!.name;
}

/** What a window says it is to the engines that follow it. */
export const WINDOW_WHO = 'VS Code window';

export class WindowRole {
  private current: RecoveryService;
  private engine: EngineHost | null = null;
  private election: LeaderElection | null = null;
  private readonly listeners = new Listeners();
  private readonly subscriptions: { dispose(): void }[] = [];
  /** Settings apply one after another, in the order they came. */
  private readonly settingsChanges = new Serial();
  /** The latest state the leader pushed while this window followed: the start of its own term. */
  private leaderSnapshot: EngineSnapshot | null = null;
  /** The window said once that it runs alone, with no election. */
  private saidAlone = false;

  /** `journalPath`: the engine's crash journal beside globalState (see GlobalStateStore). */
  constructor(
    private readonly context: vscode.ExtensionContext,
    private settings: Settings,
    private readonly io: HostIo,
    private readonly journalPath?: string,
    /** How the election is made (a test passes one that cannot be, as on Windows). */
    private readonly makeElection: (opts: LeaderElectionOptions) => LeaderElection = (opts) => new LeaderElection(opts),
  ) {
    this.current = new Starting(settings.socketPath);
  }

  service(): RecoveryService {
    return this.current;
  }

  onDidChange(listener: () => void): { dispose(): void } {
    return this.listeners.add(listener);
  }

  /** Joins the election in the background. */
  start(): void {
    this.leaderSnapshot = null; // a new election: another daemon's state means nothing here
    let election: LeaderElection;
    try {
      election = this.makeElection({
        dir: electionDir(),
        name: electionName(this.settings),
        who: WINDOW_WHO,
        log: (m) => this.io.log.debug(`election: ${m}`),
      });
    } catch (error) {
      // No election on this platform (Windows: no Unix sockets in a private directory): this
      // window runs the engine alone. Said once, not at every settings change.
      if (!this.saidAlone)
        this.io.log.warn(`leader election unavailable (${errorText(error)}); this window runs the engine alone`);
      this.saidAlone = true;
      this.lead(null);
      return;
    }
    this.election = election;
    // Events of an election this window has left (settings moved it to another daemon) are ignored.
    const current = () => this.election === election;
    election.onLeader((server) => current() && this.lead(server));
    election.onFollower((conn) => current() && this.follow(conn));
    election.onRoleChange((role) => {
      // Stepped down (its socket was replaced): stop the engine at once, before following.
      if (current() && role !== 'leader' && this.engine) this.clearRole();
    });
    election.start().catch((error: unknown) => {
      if (!current()) return;
      // No election possible (e.g. an unsafe directory): run the engine here, and say so.
      this.io.log.warn(`leader election unavailable (${errorText(error)}); this window runs the engine`);
      this.lead(null);
    });
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
        this.engine?.applySettings(settings);
      }
    });
  }

  async dispose(): Promise<void> {
    await this.stop();
    this.listeners.clear();
  }

  private lead(server: LeaderServer | null): void {
    this.clearRole();
    const host = new EngineHost(
      this.settings,
      this.context.globalState,
      this.io,
      this.leaderSnapshot,
      this.journalPath,
    );
    this.leaderSnapshot = null;
    this.engine = host;
    this.io.log.info(server ? 'this window runs the engine (leader)' : 'this window runs the engine');
    if (server) {
      server.onCommand(async (name, args) => {
        const { command, threadId } = parseChannelCommand(name, args);
        await host.run(command, threadId);
      });
      this.subscriptions.push(host.onDidChange(() => server.broadcast(host.snapshot())));
    }
    this.swap(host);
    host.start();
    server?.broadcast(host.snapshot());
  }

  private follow(conn: FollowerConnection): void {
    this.clearRole();
    conn.welcomed.then(
      (pid) =>
        this.io.log.info(
          `another engine (${conn.leaderWho ?? 'a window'}, pid ${pid}) runs against this daemon: following it`,
        ),
      () => undefined,
    );
    const host = new FollowerHost(conn, this.settings.socketPath, (m) => this.io.log.warn(m));
    // It fires on every valid state the leader pushes (parsed once, there).
    host.onDidChange(() => {
      this.leaderSnapshot = host.snapshot();
    });
    this.swap(host);
  }

  private swap(service: RecoveryService): void {
    this.current = service;
    this.subscriptions.push(service.onDidChange(() => this.fire()));
    this.fire();
  }

  private clearRole(): void {
    for (const s of this.subscriptions.splice(0)) s.dispose();
    const engine = this.engine;
    this.engine = null;
    if (engine) void engine.dispose();
  }

  private async stop(): Promise<void> {
    for (const s of this.subscriptions.splice(0)) s.dispose();
    const engine = this.engine;
    this.engine = null;
    await engine?.dispose();
    const election = this.election;
    this.election = null;
    await election?.stop();
    this.current = new Starting(this.settings.socketPath);
    this.fire();
  }

  private fire(): void {
    this.listeners.fire();
  }
}
