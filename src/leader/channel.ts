// Both ends of the leader's socket (election.ts decides who is which).
//
//  - LeaderServer: the leader's side. Answers each follower's `hello` with `welcome` and at once
//    the latest state (if any), pushes every later state to every follower (latest only: a
//    follower that cannot keep up gets the newest snapshot when its socket drains, never a
//    backlog), and runs followers' commands through one handler.
//  - FollowerConnection: a follower's side. Keeps the latest state, sends commands and matches
//    their results; every pending command rejects with a clear error on timeout or when the
//    leader goes away.
//
// Malformed lines are reported through `log` and skipped on both sides, never thrown.
import type * as net from 'node:net';
import {
  encodeMessage,
  LEADER_PROTOCOL_VERSION,
  LeaderMessageSchema,
  FollowerMessageSchema,
  LineDecoder,
  type CommandId,
  type FollowerMessage,
  type LeaderMessage,
} from './messages';

export type Log = (message: string) => void;
export type Unsubscribe = () => void;

/** A minimal typed event emitter: listeners' exceptions are logged, never propagated. */
export class Emitter<T> {
  private readonly listeners = new Set<(value: T) => void>();

  constructor(
    private readonly log?: Log,
    private readonly label = 'listener',
  ) {}

  on(cb: (value: T) => void): Unsubscribe {
    this.listeners.add(cb);
    return () => {
      this.listeners.delete(cb);
    };
  }

  fire(value: T): void {
    for (const cb of [...this.listeners]) {
      try {
        cb(value);
      } catch (e) {
        this.log?.(`${this.label} threw: ${(e as Error)?.message ?? String(e)}`);
      }
    }
  }

  clear(): void {
    this.listeners.clear();
  }

  get size(): number {
    return this.listeners.size;
  }
}

/** Runs a follower's command on the leader; its value (JSON) goes back as the result. */
export type CommandHandler = (name: string, args: unknown[]) => Promise<unknown> | unknown;

export interface LeaderServerOptions {
  log?: Log;
  /** Sent in the welcome: what kind of engine this leader is (e.g. "runner"). */
  who?: string;
  /** A connection that has not said hello within this time is dropped. Default 5000 ms. */
  helloTimeoutMs?: number;
}

interface Peer {
  socket: net.Socket;
  decoder: LineDecoder<FollowerMessage>;
  welcomed: boolean;
  pid: number | null;
  /** A state is waiting for the socket to drain. */
  stateDirty: boolean;
  helloTimer: NodeJS.Timeout | undefined;
}

interface QueuedCommand {
  peer: Peer;
  id: CommandId;
  name: string;
  args: unknown[];
}

const MAX_QUEUED_COMMANDS = 1000;

/** The leader's end: one net.Server (already listening or about to), any number of followers. */
export class LeaderServer {
  private readonly peers = new Set<Peer>();
  private readonly log: Log;
  private readonly helloTimeoutMs: number;
  private readonly who: string | undefined;
  private handler: CommandHandler | undefined;
  /** Commands that arrived before a handler was set; run when one is. */
  private queued: QueuedCommand[] = [];
  private latest: { snapshot: unknown; line: string } | undefined;
  private _closed = false;
  private closing: Promise<void> | undefined;
  private readonly followersEmitter: Emitter<number>;

  constructor(
    private readonly server: net.Server,
    opts: LeaderServerOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
    this.helloTimeoutMs = opts.helloTimeoutMs ?? 5000;
    this.who = opts.who;
    this.followersEmitter = new Emitter<number>(this.log, 'followers listener');
    server.on('connection', (socket) => this.accept(socket));
    server.on('error', (err) => this.log(`leader server error: ${err.message}`));
  }

  /** Followers that said hello and are still connected. */
  get followerCount(): number {
    let n = 0;
    for (const p of this.peers) if (p.welcomed) n++;
    return n;
  }

  get closed(): boolean {
    return this._closed;
  }

  /** The last snapshot broadcast, or undefined. */
  get latestState(): unknown {
    return this.latest?.snapshot;
  }

  /** Called with the follower count whenever it changes. */
  onFollowersChange(cb: (count: number) => void): Unsubscribe {
    return this.followersEmitter.on(cb);
  }

  /**
   * Sets the handler for followers' commands (one at a time; a later call replaces it).
   * Commands received before any handler are queued and run now.
   */
  onCommand(handler: CommandHandler): Unsubscribe {
    this.handler = handler;
    const queued = this.queued;
    this.queued = [];
    for (const q of queued) this.run(q);
    return () => {
      if (this.handler === handler) this.handler = undefined;
    };
  }

  /**
   * Pushes `snapshot` to every follower and keeps it for those who join later. Must be JSON
   * serializable; one that is not (or is over the line cap) is logged and not sent.
   */
  broadcast(snapshot: unknown): void {
    if (this._closed) return;
    let line: string;
    try {
      line = encodeMessage({ type: 'state', snapshot });
    } catch (e) {
      this.log(`leader: state not broadcast: ${(e as Error).message}`);
      return;
    }
    this.latest = { snapshot, line };
    for (const p of this.peers) if (p.welcomed) this.sendState(p);
  }

  /** Disconnects every follower and stops listening. Idempotent. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    this._closed = true;
    this.queued = [];
    this.closing = new Promise<void>((resolve) => {
      for (const p of [...this.peers]) p.socket.destroy();
      try {
        this.server.close(() => resolve());
      } catch {
        resolve();
      }
    });
    return this.closing;
  }

  private accept(socket: net.Socket): void {
    if (this._closed) {
      socket.destroy();
      return;
    }
    const peer: Peer = {
      socket,
      welcomed: false,
      pid: null,
      stateDirty: false,
      helloTimer: undefined,
      decoder: new LineDecoder<FollowerMessage>(
        FollowerMessageSchema,
        (msg) => this.onMessage(peer, msg),
        (reason) => this.log(`leader: dropped a line from a follower: ${reason}`),
      ),
    };
    this.peers.add(peer);
    peer.helloTimer = setTimeout(() => {
      if (!peer.welcomed) {
        this.log(`leader: a connection said no hello within ${this.helloTimeoutMs} ms; dropped`);
        socket.destroy();
      }
    }, this.helloTimeoutMs);
    peer.helloTimer.unref();
    socket.on('data', (chunk: Buffer) => peer.decoder.push(chunk));
    socket.on('drain', () => {
      if (peer.stateDirty) this.sendState(peer);
    });
    socket.on('error', (err) => this.log(`leader: follower socket error: ${err.message}`));
    socket.on('close', () => {
      clearTimeout(peer.helloTimer);
      this.peers.delete(peer);
      if (peer.welcomed && !this._closed) this.followersEmitter.fire(this.followerCount);
    });
  }

  private onMessage(peer: Peer, msg: FollowerMessage): void {
    if (msg.type === 'hello') {
      if (peer.welcomed) return;
      if (msg.version !== LEADER_PROTOCOL_VERSION) {
        this.log(
          `leader: follower pid ${msg.pid} speaks protocol ${msg.version}, this leader ${LEADER_PROTOCOL_VERSION}`,
        );
      }
      peer.welcomed = true;
      peer.pid = msg.pid;
      clearTimeout(peer.helloTimer);
      this.write(peer, {
        type: 'welcome',
        leaderPid: process.pid,
        version: LEADER_PROTOCOL_VERSION,
        ...(this.who ? { who: this.who } : {}),
      });
      if (this.latest) this.sendState(peer);
      this.followersEmitter.fire(this.followerCount);
      return;
    }
    const q: QueuedCommand = { peer, id: msg.id, name: msg.name, args: msg.args };
    if (this.handler) {
      this.run(q);
    } else if (this.queued.length < MAX_QUEUED_COMMANDS) {
      this.queued.push(q);
    } else {
      this.reply(peer, { type: 'result', id: q.id, ok: false, error: 'the leader is not ready for commands yet' });
    }
  }

  private run(q: QueuedCommand): void {
    const handler = this.handler;
    if (!handler) return;
    void (async () => {
      let value: unknown;
      try {
        value = await handler(q.name, q.args);
      } catch (e) {
        const error = e instanceof Error ? e.message : String(e);
        this.reply(q.peer, { type: 'result', id: q.id, ok: false, error: error || 'command failed' });
        return;
      }
      this.reply(q.peer, { type: 'result', id: q.id, ok: true, value });
    })();
  }

  private reply(peer: Peer, msg: LeaderMessage & { type: 'result' }): void {
    if (!this.write(peer, msg) && msg.ok) {
      // The value could not be encoded: the follower still gets an answer.
      this.write(peer, {
        type: 'result',
        id: msg.id,
        ok: false,
        error: `command result could not be sent (not JSON, or too large)`,
      });
    }
  }

  private sendState(peer: Peer): void {
    const latest = this.latest;
    if (!latest) return;
    if (peer.socket.writableNeedDrain) {
      peer.stateDirty = true;
      return;
    }
    peer.stateDirty = false;
    this.writeLine(peer, latest.line);
  }

  /** Encodes and writes; false when the message could not be encoded. */
  private write(peer: Peer, msg: LeaderMessage): boolean {
    let line: string;
    try {
      line = encodeMessage(msg);
    } catch (e) {
      this.log(`leader: ${(e as Error).message}`);
      return false;
    }
    this.writeLine(peer, line);
    return true;
  }

  private writeLine(peer: Peer, line: string): void {
    const s = peer.socket;
    if (s.destroyed || !s.writable) return;
    s.write(line);
  }
}

export type LeaderCommandErrorCode = 'timeout' | 'closed' | 'failed';

/** Why a follower's command did not succeed: timed out, the leader went away, or it failed there. */
export class LeaderCommandError extends Error {
  constructor(
    message: string,
    readonly code: LeaderCommandErrorCode,
  ) {
    super(message);
    this.name = 'LeaderCommandError';
  }
}

export interface FollowerConnectionOptions {
  log?: Log;
  /** Default timeout of `command`. Default 30 s. */
  commandTimeoutMs?: number;
}

interface PendingCommand {
  name: string;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** A follower's end of a connection to the leader. Sends `hello` at once. */
export class FollowerConnection {
  private readonly log: Log;
  private readonly commandTimeoutMs: number;
  private readonly pending = new Map<number, PendingCommand>();
  private nextId = 1;
  private _closed = false;
  private _leaderPid: number | undefined;
  private _leaderWho: string | undefined;
  private latest: { snapshot: unknown } | undefined;
  private readonly stateEmitter: Emitter<unknown>;
  private readonly closeEmitter: Emitter<void>;
  private readonly decoder: LineDecoder<LeaderMessage>;
  private welcomeResolve: ((pid: number) => void) | undefined;
  private welcomeReject: ((err: Error) => void) | undefined;
  /** Resolves with the leader's pid on `welcome`; rejects if the connection closes first. */
  readonly welcomed: Promise<number>;

  constructor(
    private readonly socket: net.Socket,
    opts: FollowerConnectionOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
    this.commandTimeoutMs = opts.commandTimeoutMs ?? 30_000;
    this.stateEmitter = new Emitter<unknown>(this.log, 'state listener');
    this.closeEmitter = new Emitter<void>(this.log, 'close listener');
    this.welcomed = new Promise<number>((resolve, reject) => {
      this.welcomeResolve = resolve;
      this.welcomeReject = reject;
    });
    this.welcomed.catch(() => {});
    this.decoder = new LineDecoder<LeaderMessage>(
      LeaderMessageSchema,
      (msg) => this.onMessage(msg),
      (reason) => this.log(`follower: dropped a line from the leader: ${reason}`),
    );
    socket.on('data', (chunk: Buffer) => this.decoder.push(chunk));
    socket.on('error', (err) => this.log(`follower: leader socket error: ${err.message}`));
    socket.on('close', () => this.onSocketClose());
    if (socket.destroyed) {
      queueMicrotask(() => this.onSocketClose());
      return;
    }
    this.send({ type: 'hello', version: LEADER_PROTOCOL_VERSION, pid: process.pid });
  }

  /** The leader's pid, once welcomed. */
  get leaderPid(): number | undefined {
    return this._leaderPid;
  }

  /** What kind of engine the leader says it is, once welcomed (older leaders do not say). */
  get leaderWho(): string | undefined {
    return this._leaderWho;
  }

  get closed(): boolean {
    return this._closed;
  }

  /** The latest state received, or undefined. */
  get state(): unknown {
    return this.latest?.snapshot;
  }

  get hasState(): boolean {
    return this.latest !== undefined;
  }

  /**
   * `cb` gets every state the leader pushes, starting (asynchronously) with the latest one
   * already received, if any.
   */
  onState(cb: (snapshot: unknown) => void): Unsubscribe {
    let active = true;
    const off = this.stateEmitter.on(cb);
    const known = this.latest;
    if (known) {
      queueMicrotask(() => {
        // Only if nothing newer was delivered meanwhile.
        if (active && this.latest === known) {
          try {
            cb(known.snapshot);
          } catch (e) {
            this.log(`state listener threw: ${(e as Error)?.message ?? String(e)}`);
          }
        }
      });
    }
    return () => {
      active = false;
      off();
    };
  }

  /** `cb` runs once when the connection to the leader is gone (at once if it already is). */
  onClose(cb: () => void): Unsubscribe {
    if (this._closed) {
      let active = true;
      queueMicrotask(() => {
        if (active) cb();
      });
      return () => {
        active = false;
      };
    }
    return this.closeEmitter.on(cb);
  }

  /**
   * Runs a command on the leader. Resolves with its value; rejects with a LeaderCommandError
   * when it fails there (`failed`), takes longer than `timeoutMs` (`timeout`) or the leader goes
   * away first (`closed`).
   */
  command(name: string, args: unknown[] = [], timeoutMs = this.commandTimeoutMs): Promise<unknown> {
    if (this._closed) {
      return Promise.reject(
        new LeaderCommandError(`cannot send command "${name}": the connection to the leader is closed`, 'closed'),
      );
    }
    const id = this.nextId++;
    let line: string;
    try {
      line = encodeMessage({ type: 'command', id, name, args });
    } catch (e) {
      return Promise.reject(new LeaderCommandError(`cannot send command "${name}": ${(e as Error).message}`, 'failed'));
    }
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new LeaderCommandError(`command "${name}" got no answer from the leader within ${timeoutMs} ms`, 'timeout'),
        );
      }, timeoutMs);
      this.pending.set(id, { name, resolve, reject, timer });
      this.socket.write(line);
    });
  }

  /** Closes the connection; pending commands reject with `closed`. */
  close(): void {
    this.socket.destroy();
    // 'close' arrives asynchronously; settle now so callers see a consistent state.
    this.onSocketClose();
  }

  private onMessage(msg: LeaderMessage): void {
    switch (msg.type) {
      case 'welcome':
        this._leaderPid = msg.leaderPid;
        this._leaderWho = msg.who;
        if (msg.version !== undefined && msg.version !== LEADER_PROTOCOL_VERSION) {
          this.log(
            `follower: leader pid ${msg.leaderPid} speaks protocol ${msg.version}, this follower ${LEADER_PROTOCOL_VERSION}`,
          );
        }
        this.welcomeResolve?.(msg.leaderPid);
        return;
      case 'state':
        this.latest = { snapshot: msg.snapshot };
        this.stateEmitter.fire(msg.snapshot);
        return;
      case 'result': {
        if (typeof msg.id !== 'number') {
          this.log(`follower: result for unknown command id ${JSON.stringify(msg.id)}`);
          return;
        }
        const p = this.pending.get(msg.id);
        if (!p) {
          this.log(`follower: result for unknown or timed-out command id ${msg.id}`);
          return;
        }
        this.pending.delete(msg.id);
        clearTimeout(p.timer);
        if (msg.ok) p.resolve(msg.value);
        else
          p.reject(
            new LeaderCommandError(
              `command "${p.name}" failed on the leader: ${msg.error ?? 'unknown error'}`,
              'failed',
            ),
          );
        return;
      }
    }
  }

  private send(msg: FollowerMessage): void {
    try {
      if (!this.socket.destroyed && this.socket.writable) this.socket.write(encodeMessage(msg));
    } catch (e) {
      this.log(`follower: ${(e as Error).message}`);
    }
  }

  private onSocketClose(): void {
    if (this._closed) return;
    this._closed = true;
    this.decoder.end();
    this.welcomeReject?.(new Error('the connection to the leader closed before its welcome'));
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new LeaderCommandError(`the leader went away before answering command "${p.name}"`, 'closed'));
    }
    this.closeEmitter.fire();
    this.closeEmitter.clear();
    this.stateEmitter.clear();
  }
}
