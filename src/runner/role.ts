// Which engine watches a daemon when a runner starts: the runner joins the same leader election
// as the VS Code windows (src/leader/), keyed by the daemon's address, so that two runners, or a
// runner and VS Code, never both run an engine against one daemon.
//
//  - leader: runs the engine, pushes its snapshot to the followers on every change (throttled)
//    and runs their commands (a window's Pause, Retry now, ...) on it;
//  - follower: runs nothing, says who leads and stands by, keeping the leader's latest snapshot;
//    when the leader goes away the election makes one follower the leader, and its engine starts
//    from its store merged with that snapshot (src/leader/handover.ts), so the threads the old
//    leader watched stay watched;
//  - no election possible (an unsafe directory): runs the engine anyway, and says so.
// A private stdio daemon has no election: nobody else can reach it.
import { parseChannelCommand, runCommand } from '../core/commands';
import type { Engine } from '../core/engine';
import { Throttle } from '../core/throttle';
import { LeaderElection } from '../leader/election';
import type { FollowerConnection } from '../leader/followerConnection';
import { parseSnapshot } from '../leader/handover';
import type { LeaderServer } from '../leader/leaderServer';
import type { EngineSnapshot } from '../model/snapshot';
import { Serial } from '../util/serial';

/** What the runner tells about its role (printed like a decision: one line, or one JSON object). */
export type RoleEvent =
  { role: 'leader'; elected: boolean } | { role: 'follower'; leaderPid: number; leaderWho: string | null };

export interface RunnerRoleOptions {
  /** The election to join (dir and name), or null for none (a private stdio daemon). */
  election: { dir: string; name: string } | null;
  /** Builds the engine for a new term as leader; `seed` is the previous leader's last snapshot. */
  makeEngine(seed: EngineSnapshot | null, onChange: () => void): Engine;
  onRole(event: RoleEvent): void;
  /** Something the user should know (the election is unavailable, a takeover could not start). */
  onWarning(message: string): void;
  /** Election diagnostics. */
  log?: (message: string) => void;
  /** How often a leader pushes its snapshot at most. Default 100 ms. */
  broadcastMs?: number;
}

/** What the runner says it is in the election's welcome. */
export const RUNNER_WHO = 'runner';

export class RunnerRole {
  private engine: Engine | null = null;
  private election: LeaderElection | null = null;
  private leaderSnapshot: EngineSnapshot | null = null;
  private readonly unsubscribe: (() => void)[] = [];
  private throttle: Throttle | null = null;
  /** Bumped by every change of role: work of an older term gives up. */
  private term = 0;
  /** Engines stop one after another: a new engine never starts before the previous one has stopped and saved. */
  private readonly stops = new Serial();
  private stopped = false;
  private fatalReject: ((error: Error) => void) | null = null;
  /** Rejects when an engine cannot start after a takeover (its store cannot be read). */
  readonly fatal: Promise<never>;

  constructor(private readonly opts: RunnerRoleOptions) {
    this.fatal = new Promise<never>((_, reject) => {
      this.fatalReject = reject;
    });
    this.fatal.catch(() => undefined);
  }

  /** The engine while this runner leads, else null. */
  get runningEngine(): Engine | null {
    return this.engine;
  }

  /**
   * Joins the election (or starts the engine at once when there is none). Resolves once this
   * runner leads, with its engine started, or follows; rejects if its engine cannot start.
   */
  async start(): Promise<void> {
    const spec = this.opts.election;
    if (!spec) {
      await this.lead(null, false); // a private daemon: nothing to tell
      return;
    }
    let election: LeaderElection;
    try {
      election = new LeaderElection({
        dir: spec.dir,
        name: spec.name,
        who: RUNNER_WHO,
        log: (m) => this.opts.log?.(m),
      });
    } catch (error) {
      return this.unavailable(error);
    }
    this.election = election;
    // The first term as leader, set by the onLeader callback (an object: TypeScript's narrowing
    // cannot see a callback's assignment).
    const first: { leading: Promise<void> | null } = { leading: null };
    election.onLeader((server) => {
      const leading = this.lead(server, true);
      first.leading ??= leading;
      leading.catch((error: unknown) => {
        if (first.leading !== leading) this.fatalReject?.(asError(error));
      });
    });
    election.onFollower((conn) => this.follow(conn));
    election.onRoleChange((role) => {
      // Stepped down (its socket was replaced) or stopped: stop the engine before anything else.
      if (role !== 'leader' && this.engine) void this.endTerm();
    });
    try {
      await election.start();
    } catch (error) {
      this.election = null;
      return this.unavailable(error);
    }
    if (first.leading) await first.leading;
  }

  /** Stops the engine (it saves its state), then leaves the election so a follower takes over. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.endTerm();
    const election = this.election;
    this.election = null;
    await election?.stop();
  }

  private async unavailable(error: unknown): Promise<void> {
    this.opts.onWarning(
      `leader election unavailable (${asError(error).message}); this runner runs the engine without it`,
    );
    await this.lead(null, true);
  }

  /** Starts this runner's engine: elected (`server`), or on its own; `announce`: print the role. */
  private async lead(server: LeaderServer | null, announce: boolean): Promise<void> {
    const term = await this.newTerm();
    if (term !== this.term || this.stopped) return;
    const seed = this.leaderSnapshot;
    this.leaderSnapshot = null;
    // Called only once `engine` is set: the throttle fires from a timer, the last call is below.
    const broadcast = () => {
      if (server && this.engine === engine) server.broadcast(engine.snapshot());
    };
    const throttle = new Throttle(this.opts.broadcastMs ?? 100, broadcast);
    const engine = this.opts.makeEngine(seed, () => throttle.poke());
    this.engine = engine;
    this.throttle = throttle;
    if (announce) this.opts.onRole({ role: 'leader', elected: server !== null });
    await engine.start();
    if (this.engine !== engine) return;
    if (server) {
      // Only now: a command on an engine that has not loaded its state would save an empty one
      // over it. Commands that came earlier wait in the server's queue.
      this.unsubscribe.push(
        server.onCommand(async (name, args) => {
          const { command, threadId } = parseChannelCommand(name, args);
          if (this.engine !== engine) throw new Error(`${command}: this runner no longer runs the engine`);
          await runCommand(engine, command, threadId);
        }),
      );
    }
    broadcast();
  }

  private follow(conn: FollowerConnection): void {
    void this.newTerm().then((term) => {
      if (term !== this.term || this.stopped) return;
      this.unsubscribe.push(
        conn.onState((value) => {
          const snapshot = parseSnapshot(value);
          if (snapshot) this.leaderSnapshot = snapshot;
        }),
      );
      conn.welcomed.then(
        (leaderPid) => {
          if (term === this.term && !this.stopped)
            this.opts.onRole({ role: 'follower', leaderPid, leaderWho: conn.leaderWho ?? null });
        },
        () => undefined, // gone before its welcome: the election runs again
      );
    });
  }

  /** Ends the current term (stopping its engine) and starts a new one. */
  private async newTerm(): Promise<number> {
    const term = ++this.term;
    await this.endTerm();
    return term;
  }

  private endTerm(): Promise<void> {
    for (const off of this.unsubscribe.splice(0)) off();
    this.throttle?.dispose();
    this.throttle = null;
    const engine = this.engine;
    this.engine = null;
    return this.stops
      .run(() => engine?.stop())
      .catch((error: unknown) => {
        this.opts.onWarning(`the engine did not stop cleanly: ${asError(error).message}`);
      });
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** A role event as a readable line, in the style of the decision lines. */
export function roleLine(event: RoleEvent, target: string, now: number): string {
  const ts = new Date(now).toISOString();
  if (event.role === 'leader') {
    return event.elected
      ? `${ts} leader: this runner runs the engine for ${target}; any other engine on this daemon stands by`
      : `${ts} leader: this runner runs the engine for ${target} (without an election)`;
  }
  const who = event.leaderWho ? `${event.leaderWho}, pid ${event.leaderPid}` : `pid ${event.leaderPid}`;
  return `${ts} standby: another engine (${who}) is watching ${target}; this runner stands by and takes over if it stops`;
}

/** A role event as one JSON object: `{ts, type: "role", role, target, …}`. */
export function roleJson(event: RoleEvent, target: string, now: number): string {
  return JSON.stringify({ ts: new Date(now).toISOString(), type: 'role', ...event, target });
}
