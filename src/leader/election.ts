// Which VS Code window (or runner) runs the recovery engine against a given Codex daemon.
//
// Every engine builds a LeaderElection on the same private directory and name. Exactly one
// becomes the leader (it gets a LeaderServer and runs the engine); the others become followers
// (each gets a FollowerConnection to the leader: they mirror its state and send their commands
// to it). When the leader stops or dies, a follower takes over within a few hundred
// milliseconds, and never while another leader is still listening. Windows (named pipes) is not
// supported: the constructor throws there.
//
// Each part (the options, the private directory, the exclusive listen, the takeover lock, one
// attempt and the loop of them, the generation fence, the path watch, the two ends of the socket,
// the lease and its term) lives in a file of its own: docs/architecture.md, "`src/leader/`".
// This file holds the state: the role, the generation, the server or connection, the lease and
// its term, and the events. A follower whose connection closes runs the election again after a
// short random delay (50–250 ms); one whose leader went silent past its lease takes its socket
// over at once. A leader whose lease ran out (it was stopped or blocked) acts no more (`fence`)
// and steps down.
import * as fs from 'node:fs';
import type * as net from 'node:net';
import { attempt, randomBetween, type AttemptContext } from './electionAttempt';
import { ElectionLoop } from './electionLoop';
import { electionSettings, type ElectionSettings, type LeaderElectionOptions } from './electionOptions';
import { Emitter, type Unsubscribe } from './emitter';
import { Generations, type Generation } from './generation';
import { relinquish, type Candidate } from './exclusiveListen';
import { FollowerConnection, type Quiet } from './followerConnection';
import type { LeaderServer } from './leaderServer';
import { fileKey } from './files';
import { RENEW_MS, seconds } from './lease';
import { Tenure } from './tenure';
import { watchPath } from './pathWatch';
import {
  checkSocketPathLength,
  ensurePrivateDir,
  leaderFilePath,
  leaderSocketPath,
  sweepLeftovers,
  takeoverLockPath,
} from './privateDir';
import { TakeoverLock } from './takeoverLock';

export type Role = 'leader' | 'follower' | 'stopped';

export type { Quiet } from './followerConnection';
export type { LeaderElectionOptions } from './electionOptions';

export class LeaderElection {
  private readonly opts: ElectionSettings;
  private dir: string | undefined;
  private _socketPath: string | undefined;
  private lock: TakeoverLock | undefined;
  private _role: Role = 'stopped';
  /** A new one at every start and stop: async work of an older generation gives up. */
  private readonly generations = new Generations();
  private running = false;
  /** The start in flight: concurrent calls share it (a single flight, not a queue). */
  private starting: Promise<void> | undefined;
  private readonly loop: ElectionLoop<Generation>;
  private electTimer: NodeJS.Timeout | undefined;
  /** While leader: stops its path watch. */
  private unwatch: (() => void) | undefined;
  /** While leader: its server and the key (`dev:ino`) of its socket file. */
  private held: Candidate | undefined;
  private _connection: FollowerConnection | undefined;
  private tenure: Tenure | undefined;
  /** The highest term heard of as a follower: a new leader's term is above it. */
  private seenTerm = 0;
  /** The socket (`dev:ino`) of a leader found silent past its lease: the next attempt replaces it. */
  private silentKey: string | null = null;
  private readonly quietEmitter = new Emitter<Quiet | null>((m) => this.opts.log(m), 'onQuiet listener');
  private readonly leaderEmitter = new Emitter<LeaderServer>((m) => this.opts.log(m), 'onLeader listener');
  private readonly followerEmitter = new Emitter<FollowerConnection>((m) => this.opts.log(m), 'onFollower listener');
  private readonly roleEmitter = new Emitter<Role>((m) => this.opts.log(m), 'onRoleChange listener');

  constructor(opts: LeaderElectionOptions) {
    this.opts = electionSettings(opts);
    this.loop = new ElectionLoop<Generation>({
      retryMs: this.opts.retryMs,
      log: this.opts.log,
      live: (gen) => this.generations.current(gen),
      attempt: (gen) => attempt(this.attemptContext(gen)),
    });
  }

  get role(): Role {
    return this._role;
  }

  /** `<dir>/<name>.sock` (the real path of dir), once started. */
  get socketPath(): string | undefined {
    return this._socketPath;
  }

  /** The leader's server while leader. */
  get server(): LeaderServer | undefined {
    return this.held?.server;
  }

  /** The connection to the leader while follower (undefined between a leader's loss and the next election). */
  get connection(): FollowerConnection | undefined {
    return this._connection;
  }

  /** This leader's term while it leads (lease.ts). */
  get term(): number | undefined {
    return this._role === 'leader' ? this.tenure?.term : undefined;
  }

  /**
   * Null while this instance leads within its lease; else why it may not act (a set, a save, an
   * announcement). The first time it says no, the leader steps down. Synchronous and cheap: call
   * it right before the act, with no `await` in between.
   */
  fence(): string | null {
    const tenure = this.tenure;
    if (this._role !== 'leader' || !tenure) return 'this engine no longer leads';
    let reason = tenure.check();
    if (reason === null && this.held) {
      try {
        if (fileKey(fs.lstatSync(this._socketPath!)) !== this.held.key) reason = 'its socket path is another now';
      } catch {
        reason = 'its socket path was removed';
      }
    }
    if (reason !== null) {
      tenure.revoke(reason);
      void this.stepDown(`lease lost: ${reason}`);
    }
    return reason;
  }

  /** A follower's leader has been silent for a while (null: it was heard again, or is gone). */
  onQuiet(cb: (quiet: Quiet | null) => void): Unsubscribe {
    return this.quietEmitter.on(cb);
  }

  /** Fires each time this instance becomes the leader, with its server. */
  onLeader(cb: (server: LeaderServer) => void): Unsubscribe {
    return this.leaderEmitter.on(cb);
  }

  /** Fires for each new connection to a leader (also when a follower follows a new leader). */
  onFollower(cb: (conn: FollowerConnection) => void): Unsubscribe {
    return this.followerEmitter.on(cb);
  }

  onRoleChange(cb: (role: Role) => void): Unsubscribe {
    return this.roleEmitter.on(cb);
  }

  /**
   * Checks the directory, then runs the election; resolves once this instance is leader or
   * follower. Throws (and stays stopped) on an unsafe directory or an unexpected error.
   */
  start(): Promise<void> {
    if (this.starting) return this.starting;
    if (this.running) return Promise.resolve();
    this.starting = this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    const dir = await ensurePrivateDir(this.opts.dir);
    const socketPath = leaderSocketPath(dir, this.opts.name);
    checkSocketPathLength(dir, socketPath);
    this.dir = dir;
    this._socketPath = socketPath;
    this.lock = new TakeoverLock(takeoverLockPath(dir, this.opts.name), this.opts.log);
    this.running = true;
    const gen = this.generations.begin();
    try {
      await this.loop.run(gen, true);
    } catch (e) {
      await this.stop();
      throw e;
    }
  }

  /** Gives up the role: a leader removes its socket (if still its own) and disconnects followers. */
  async stop(): Promise<void> {
    this.running = false;
    this.generations.begin();
    clearTimeout(this.electTimer);
    this.electTimer = undefined;
    this.loop.wakeUp();
    // Whether this leader may still touch its path: not once its lease ran out (another may be
    // replacing it under the takeover lock right now).
    const leaseHeld = this.tenure?.check() === null;
    // Report 'stopped' before letting go, so no observer ever sees two leaders at once.
    const held = this.leave('stopped', 'stopped');
    if (held) {
      // A closed server refuses connections: its file is a dead leader's, replaced under the lock.
      if (leaseHeld) await relinquish(held.server, held.key, this._socketPath!, this.opts.log);
      else await held.server.close();
    }
    const conn = this._connection;
    this._connection = undefined;
    conn?.close();
    // The elections asked for so far wind down (they give up at their next step), each cleaning
    // up after itself; drained() never rejects.
    await this.loop.drained();
  }

  /** Elects again (generation `gen`, that of the caller) after `delayMs`, unless `gen` is over. */
  private scheduleElection(gen: Generation, delayMs: number): void {
    if (!this.generations.current(gen)) return; // a stale caller leaves a current timer alone
    clearTimeout(this.electTimer);
    this.electTimer = setTimeout(() => {
      this.electTimer = undefined;
      const go = () => {
        const seat = { leading: this.held !== undefined, following: this._connection !== undefined };
        if (!this.generations.electsAgain(gen, seat)) return;
        this.loop.run(gen, false).catch((e) => this.opts.log(`leader election: ${(e as Error).message}`));
      };
      if (this.loop.idle) go();
      else void this.loop.drained().then(go);
    }, delayMs);
  }

  /** What an attempt of generation `gen` works with, read now. */
  private attemptContext(gen: Generation): AttemptContext {
    return {
      ...this.opts,
      dir: this.dir!,
      socketPath: this._socketPath!,
      lock: this.lock!,
      superseded: () => !this.generations.current(gen),
      silentKey: this.silentKey,
      lead: (cand) => this.becomeLeader(gen, cand),
      follow: (socket, key) => this.becomeFollower(gen, socket, key),
    };
  }

  /** AttemptContext.lead. */
  private async becomeLeader(gen: Generation, cand: Candidate): Promise<boolean> {
    if (!this.generations.current(gen)) {
      await relinquish(cand.server, cand.key, this._socketPath!, this.opts.log);
      return true; // relinquish closed it
    }
    this.held = cand;
    this.silentKey = null;
    this.endTenure('a new term');
    const tenure = await Tenure.begin({
      filePath: leaderFilePath(this.dir!, this.opts.name),
      seenTerm: this.seenTerm,
      leaseMs: this.opts.leaseMs,
      renewMs: RENEW_MS,
      who: this.opts.who ?? 'engine',
      socketKey: cand.key,
      server: cand.server,
      log: this.opts.log,
      lost: (reason) => void this.stepDown(`lease lost: ${reason}`),
    });
    // A stop meanwhile let go of the server (and so does a newer start, stopped before it).
    if (this.held !== cand) {
      tenure.end('stopped meanwhile');
      return true;
    }
    this.tenure = tenure;
    this.seenTerm = tenure.term;
    this.opts.log(`leader election: leader (pid ${process.pid}, term ${tenure.term}) at ${this._socketPath}`);
    this.startWatch(cand.key);
    void sweepLeftovers(this.dir!, this.opts.name);
    this.setRole('leader');
    this.leaderEmitter.fire(cand.server);
    return true;
  }

  private becomeFollower(gen: Generation, socket: net.Socket, key: string): void {
    if (!this.generations.current(gen)) {
      socket.destroy();
      return;
    }
    this.silentKey = null;
    const conn = new FollowerConnection(socket, {
      log: this.opts.log,
      commandTimeoutMs: this.opts.commandTimeoutMs,
      silence: { leaseMs: this.opts.leaseMs, graceMs: RENEW_MS, quietMs: RENEW_MS * 2.5, everyMs: RENEW_MS / 2 },
    });
    this._connection = conn;
    const noteTerm = () => (this.seenTerm = Math.max(this.seenTerm, conn.term ?? 0));
    void conn.welcomed.then(noteTerm, () => undefined);
    conn.onQuiet((ms) => {
      noteTerm();
      this.quietEmitter.fire(ms === null ? null : conn.quietOf(ms));
    });
    conn.onSilent((ms) => {
      if (this._connection !== conn) return; // a stop let go of it
      noteTerm();
      const who = conn.leaderPid !== undefined ? ` (${conn.leaderWho ?? 'engine'}, pid ${conn.leaderPid})` : '';
      this.opts.log(
        `leader election: the leader${who} has not answered for ${seconds(ms)} s, past its ` +
          `${seconds(this.opts.leaseMs)} s lease (stopped or blocked); taking its place`,
      );
      this.silentKey = key;
      this.quietEmitter.fire(conn.quietOf(ms));
      this._connection = undefined;
      conn.close();
      this.scheduleElection(gen, 0);
    });
    conn.onClose(() => {
      if (this._connection !== conn) return; // a stop (or a silent leader's replacement) let go of it
      this._connection = undefined;
      this.quietEmitter.fire(null);
      this.opts.log('leader election: lost the leader; electing again');
      this.scheduleElection(gen, randomBetween(50, 250));
    });
    this.setRole('follower');
    this.followerEmitter.fire(conn);
  }

  private startWatch(key: string): void {
    this.stopWatch();
    const gen = this.generations.now;
    this.unwatch = watchPath({
      socketPath: this._socketPath!,
      key,
      everyMs: this.opts.checkMs,
      log: this.opts.log,
      current: () => this.generations.current(gen) && this._role === 'leader',
      serverClosed: () => this.held?.server.closed === true,
      lost: (reason) => this.stepDown(this.tenure?.check() ? `lease lost: ${this.tenure.check()}` : reason),
    });
  }

  private stopWatch(): void {
    this.unwatch?.();
    this.unwatch = undefined;
  }

  /**
   * Stop leading and elect again. The path is left as it is: it is another's already (the watch),
   * or this leader's lease ran out and another may be replacing it under the takeover lock right
   * now; a closed server's file refuses connections, and the takeover protocol removes it.
   */
  private async stepDown(reason: string): Promise<void> {
    if (this._role !== 'leader') return;
    const gen = this.generations.now;
    this.opts.log(`leader election: stepping down: ${reason}`);
    await this.leave('follower', 'stepped down')?.server.close();
    this.scheduleElection(gen, randomBetween(0, 100));
  }

  /** Ends the term and the path watch, and takes `role`; returns the server held, to let go of. */
  private leave(role: Role, why: string): Candidate | undefined {
    this.stopWatch();
    this.endTenure(why);
    const held = this.held;
    this.held = undefined;
    this.setRole(role);
    return held;
  }

  private endTenure(reason: string): void {
    this.tenure?.end(reason);
    this.tenure = undefined;
  }

  private setRole(role: Role): void {
    if (this._role === role) return;
    this._role = role;
    this.opts.log(`leader election: role ${role}`);
    this.roleEmitter.fire(role);
  }
}
