// One engine per daemon, whoever runs it: the term of office that a headless runner
// (src/runner/role.ts) and a VS Code window (src/host/windowRole.ts) share, as thin hooks on it.
//
//  - leader: runs its engine while its lease holds (lease.ts: `fence`, asked by the engine before
//    every set, save and announcement; a leader stopped or blocked past it steps down), pushes
//    the engine's snapshot to the followers (throttled), streams every decision to them in order
//    (marked with who decided and which window notifies), and runs their commands (a window's
//    Pause, Retry now; the runner's `pause`, `retry` ...) once the engine has loaded its state;
//  - follower: runs nothing, keeps the leader's latest snapshot (parsed once, here) and hands the
//    leader's decisions to its hooks; when the leader goes away the election makes a follower the
//    leader, and its engine starts from its store merged with that snapshot (handover.ts);
//  - no election possible (Windows, an unsafe directory): runs the engine alone, and says so;
//  - a private daemon (stdio) has no election at all: nobody else can reach it.
// Every change of role is a new term: the old term's engine has fully stopped (and saved) before
// the next term's starts or follows, and work of an older term gives up.
import { randomUUID } from 'node:crypto';
import { parseChannelCommand, type ServiceCommand } from '../core/commandTable';
import { Throttle } from '../core/throttle';
import { DecisionSchema, type Decision } from '../model/decision';
import type { EngineSnapshot } from '../model/snapshot';
import { Serial } from '../util/serial';
import { errorText } from '../util/errorText';
import { LeaderElection, type LeaderElectionOptions, type Quiet } from './election';
import type { FollowerConnection } from './followerConnection';
import { parseSnapshot } from './handover';
import type { LeaderServer } from './leaderServer';
import type { DecisionMessage } from './messages';
import type { Term } from '../store/guard';
import { BurstTarget, type BurstTiming, type WindowFocus } from './notifyTarget';

/** What a term runs: an engine (the runner's Engine, or a window's EngineHost around one). */
export interface TermEngine {
  /** Loads the state and connects; resolves once commands can run. */
  start(): Promise<void>;
  /** Stops and saves. */
  stop(): Promise<void>;
  snapshot(): EngineSnapshot;
  run(command: ServiceCommand, threadId?: string): Promise<void>;
}

/** What the term's engine reports back (it is built with these). */
export interface TermEvents {
  /** The engine's state changed: its `snapshot()` shows the change from now on (it is broadcast as it is then). */
  changed(): void;
  /** A decision, once announced (durable); `snapshot()` shows the state it left. */
  decided(decision: Decision): void;
  /**
   * Null while this term may act; else why not (its lease ran out, it no longer leads). Asked
   * right before every set, save and announcement, with no `await` in between.
   */
  fence(): string | null;
  /** This term while it leads through the election (lease.ts), else null: stamped into saves. */
  term(): Term | null;
}

/** How this process leads: through the election, alone (no election possible), or a private daemon. */
export type LeadHow = 'elected' | 'alone' | 'private';

/** Who made a decision. */
export interface DecidedBy {
  who: string;
  pid: number;
  /** This process's engine. */
  self: boolean;
}

/** The leader, as a follower sees it: its parsed snapshots, and where its commands go. */
export interface LeaderView {
  /** Resolves with who leads once it has welcomed this follower; rejects if it went first. */
  readonly welcomed: Promise<{ pid: number; who: string | null }>;
  /** Every valid snapshot the leader pushes (the latest already received first). */
  onState(listener: (snapshot: EngineSnapshot) => void): () => void;
  command(command: ServiceCommand, threadId?: string, timeoutMs?: number): Promise<void>;
  /** The leader has not answered for a while (null: it was heard again): a view says so. */
  onQuiet(listener: (quiet: Quiet | null) => void): () => void;
}

/** Whether this process's window has the focus (windows only: the leader picks the one that notifies). */
export interface FocusSource {
  focused(): boolean;
  onDidChange(listener: (focused: boolean) => void): () => void;
}

export interface ElectedEngineOptions<E extends TermEngine> {
  /** The election to join, or null for none (a private stdio daemon). */
  election: { dir: string; name: string } | null;
  /** What this process is, told to the others ("runner", "VS Code window"). */
  who: string;
  /** How the election is made (a test passes one that cannot be, as on Windows). */
  makeElection?: (opts: LeaderElectionOptions) => LeaderElection;
  /** Builds the engine of a new term as leader; `seed` is the previous leader's last snapshot. */
  makeEngine(seed: EngineSnapshot | null, events: TermEvents): E;
  /** This process leads: `engine` is about to start. */
  onLead(engine: E, how: LeadHow): void;
  /** This process follows `leader`. */
  onFollow(leader: LeaderView): void;
  /** Every decision: this process's engine's, or one the leader streamed (`at`: when it was made). */
  onDecision(decision: Decision, by: DecidedBy, at: number): void;
  /** This window was picked to show `decision` as a notification (windows only). */
  notify?(decision: Decision): void;
  /** This window's focus (windows only). */
  focus?: FocusSource;
  /** No election can run here (`error` says why): this process runs the engine alone. */
  onAlone(error: Error): void;
  /** Something the user should know (a malformed state from the leader, an engine that did not stop cleanly). */
  onWarning(message: string): void;
  /** Election diagnostics. */
  log?: (message: string) => void;
  /** How often a leader pushes its snapshot at most. Default 100 ms. */
  broadcastMs?: number;
  /** How close decisions must come to go to one window as one burst. Default model/notice.ts's. */
  notifyBurst?: BurstTiming;
}

export class ElectedEngine<E extends TermEngine> {
  private engine: E | null = null;
  private election: LeaderElection | null = null;
  private conn: FollowerConnection | null = null;
  /** The latest snapshot the leader pushed while this process followed: the start of its own term. */
  private leaderSnapshot: EngineSnapshot | null = null;
  /** What the current term subscribed to: undone when it ends. */
  private readonly termOffs: (() => void)[] = [];
  private throttle: Throttle | null = null;
  /** Bumped by every change of role: work of an older term gives up. */
  private term = 0;
  /** Engines stop one after another: a new term never starts before the previous engine has stopped and saved. */
  private readonly stops = new Serial();
  private stopped = false;
  /** The windows that follow this leader, by viewer id, as each last said of its focus. */
  private readonly windows = new Map<string, WindowFocus>();
  /** This process as a window that may show notifications (its id is told with its focus). */
  private readonly self: WindowFocus = { viewer: randomUUID(), focused: false, focusedSeq: 0 };
  private focusSeq = 0;
  /** Keeps the window picked for a burst of decisions that need a person. */
  private readonly burstTarget: BurstTarget;
  private offFocus: (() => void) | null = null;
  /** Set by the executor of `fatal` (so declared before it). */
  private fatalReject!: (error: Error) => void;
  /** Rejects when an engine cannot start after a takeover (its store cannot be read, ...). */
  readonly fatal = new Promise<never>((_, reject) => (this.fatalReject = reject));

  constructor(private readonly opts: ElectedEngineOptions<E>) {
    this.burstTarget = new BurstTarget(undefined, opts.notifyBurst);
    this.fatal.catch(() => undefined);
  }

  /** The engine while this process leads, else null. */
  get runningEngine(): E | null {
    return this.engine;
  }

  /**
   * Joins the election (or leads at once when there is none, or none can run). Resolves once
   * this process leads, with its engine started, or follows; rejects if its engine cannot start.
   */
  async start(): Promise<void> {
    const focus = this.opts.focus;
    if (focus) {
      this.noteOwnFocus(focus.focused());
      this.offFocus = focus.onDidChange((focused) => this.noteOwnFocus(focused));
    }
    const spec = this.opts.election;
    if (!spec) return this.lead(null, 'private');
    let election: LeaderElection;
    try {
      const options: LeaderElectionOptions = {
        dir: spec.dir,
        name: spec.name,
        who: this.opts.who,
        log: (m) => this.opts.log?.(m),
      };
      election = this.opts.makeElection ? this.opts.makeElection(options) : new LeaderElection(options);
    } catch (error) {
      return this.alone(error);
    }
    this.election = election;
    // The first term as leader, set by the onLeader callback (an object: TypeScript's narrowing
    // cannot see a callback's assignment).
    const first: { leading: Promise<void> | null } = { leading: null };
    const current = () => this.election === election && !this.stopped;
    election.onLeader((server) => {
      if (!current()) return;
      const leading = this.lead(server, 'elected');
      first.leading ??= leading;
      leading.catch((error: unknown) => {
        if (first.leading !== leading) this.fatalReject(asError(error));
      });
    });
    election.onFollower((conn) => current() && void this.follow(conn));
    election.onRoleChange((role) => {
      // Stepped down (its socket was replaced) or stopped: stop the engine before anything else.
      if (current() && role !== 'leader' && this.engine) void this.endTerm();
    });
    try {
      await election.start();
    } catch (error) {
      if (this.election !== election) return;
      this.election = null;
      return this.alone(error);
    }
    if (first.leading) await first.leading;
  }

  /** Stops the engine (it saves its state), then leaves the election so a follower takes over. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.offFocus?.();
    this.offFocus = null;
    await this.endTerm();
    const election = this.election;
    this.election = null;
    await election?.stop();
  }

  private async alone(error: unknown): Promise<void> {
    this.opts.onAlone(asError(error));
    await this.lead(null, 'alone');
  }

  /** Starts this process's engine: elected (`server`), or on its own. */
  private async lead(server: LeaderServer | null, how: LeadHow): Promise<void> {
    const term = await this.newTerm();
    if (term !== this.term || this.stopped) return;
    const seed = this.leaderSnapshot;
    this.leaderSnapshot = null;
    // Called only once `engine` is set: the throttle fires from a timer, decisions come later.
    const broadcast = () => {
      if (server && this.engine === engine) server.broadcast(engine.snapshot());
    };
    const throttle = new Throttle(this.opts.broadcastMs ?? 100, broadcast);
    const election = this.election;
    const engine: E = this.opts.makeEngine(seed, {
      changed: () => throttle.poke(),
      decided: (d) => this.decided(engine, server, d),
      // The term's engine still saves when its term ends (its stop), unless the lease was lost.
      fence: () => (server && election ? election.fence() : null),
      term: () => {
        const n = server && election ? election.term : undefined;
        return n === undefined || !this.opts.election ? null : { n, of: this.opts.election.name };
      },
    });
    this.engine = engine;
    this.throttle = throttle;
    this.windows.clear();
    if (server) {
      this.termOffs.push(
        server.onFocus((viewer, focused) => {
          if (focused === null) this.windows.delete(viewer);
          else this.noteFocus(viewer, focused);
        }),
      );
    }
    this.opts.onLead(engine, how);
    await engine.start();
    if (this.engine !== engine) return;
    if (server) {
      // Only now: a command on an engine that has not loaded its state would save an empty one
      // over it. Commands that came earlier wait in the server's queue.
      this.termOffs.push(
        server.onCommand(async (name, args) => {
          const { command, threadId } = parseChannelCommand(name, args);
          if (this.engine !== engine) throw new Error(`${command}: this ${this.opts.who} no longer runs the engine`);
          await engine.run(command, threadId);
        }),
      );
    }
    broadcast();
  }

  private decided(engine: E, server: LeaderServer | null, d: Decision): void {
    const at = Date.now();
    const by = { who: this.opts.who, pid: process.pid };
    const notify = this.engine === engine ? this.notifyViewer(d) : null;
    this.opts.onDecision(d, { ...by, self: true }, at);
    if (notify === this.self.viewer) this.opts.notify?.(d);
    if (server && this.engine === engine && server.followerCount > 0) {
      // The state first: a follower shows the decision against the state it left behind.
      server.broadcast(engine.snapshot());
      server.sendDecision({ at, decision: d, by, notify });
    }
  }

  private async follow(conn: FollowerConnection): Promise<void> {
    const term = await this.newTerm();
    if (term !== this.term || this.stopped) return;
    this.conn = conn;
    const states = new Set<(snapshot: EngineSnapshot) => void>();
    this.termOffs.push(
      conn.onState((value) => {
        const snapshot = parseSnapshot(value);
        if (!snapshot) return this.opts.onWarning('ignored a malformed state from the leader');
        this.leaderSnapshot = snapshot;
        for (const listener of [...states]) listener(snapshot);
      }),
      conn.onDecision((msg) => this.leaderDecided(msg)),
      () => {
        if (this.conn === conn) this.conn = null;
      },
    );
    if (this.opts.focus) conn.reportFocus(this.self.viewer, this.self.focused);
    const view: LeaderView = {
      welcomed: conn.welcomed.then((pid) => ({ pid, who: conn.leaderWho ?? null })),
      onState: (listener) => {
        states.add(listener);
        if (this.leaderSnapshot && this.conn === conn) listener(this.leaderSnapshot);
        return () => states.delete(listener);
      },
      command: async (command, threadId, timeoutMs) => {
        await conn.command(command, threadId === undefined ? [] : [threadId], timeoutMs);
      },
      onQuiet: (listener) => {
        const off = this.election?.onQuiet(listener) ?? (() => undefined);
        this.termOffs.push(off);
        return off;
      },
    };
    view.welcomed.catch(() => undefined); // gone before its welcome: the election runs again
    this.opts.onFollow(view);
  }

  private leaderDecided(msg: DecisionMessage): void {
    const parsed = DecisionSchema.safeParse(msg.decision);
    if (!parsed.success) {
      this.opts.onWarning(
        `ignored a malformed decision from the leader (${msg.by.who}, pid ${msg.by.pid}): ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      );
      return;
    }
    this.opts.onDecision(parsed.data, { ...msg.by, self: false }, msg.at);
    if (msg.notify !== null && msg.notify === this.self.viewer) this.opts.notify?.(parsed.data);
  }

  private noteOwnFocus(focused: boolean): void {
    if (focused) this.self.focusedSeq = ++this.focusSeq;
    this.self.focused = focused;
    this.conn?.reportFocus(this.self.viewer, focused);
  }

  private noteFocus(viewer: string, focused: boolean): void {
    const known = this.windows.get(viewer) ?? { viewer, focused: false, focusedSeq: 0 };
    if (focused && !known.focused) known.focusedSeq = ++this.focusSeq;
    known.focused = focused;
    this.windows.set(viewer, known);
  }

  /** The window that shows this decision as a notification (itself first, when it is a window). */
  private notifyViewer(d: Decision): string | null {
    const candidates = this.opts.focus ? [this.self, ...this.windows.values()] : [...this.windows.values()];
    return this.burstTarget.target(candidates, d);
  }

  /** Ends the current term (stopping its engine) and starts a new one. */
  private async newTerm(): Promise<number> {
    const term = ++this.term;
    await this.endTerm();
    return term;
  }

  private endTerm(): Promise<void> {
    for (const off of this.termOffs.splice(0)) off();
    this.throttle?.dispose();
    this.throttle = null;
    this.conn = null;
    const engine = this.engine;
    this.engine = null;
    return this.stops
      .run(() => engine?.stop())
      .catch((error: unknown) => this.opts.onWarning(`the engine did not stop cleanly: ${errorText(error)}`));
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
