// A follower's end of its connection to the leader (election.ts decides who is which). Keeps the
// latest state, sends commands and matches their results; every pending command rejects with a
// clear error on timeout or when the leader goes away. Malformed lines are reported through
// `log` and skipped, never thrown. With `silence`, it watches the leader's silence (lease.ts): a
// leader that beats and has said nothing for `leaseMs`, or no welcome within `leaseMs + graceMs`,
// is silent (`onSilent`, once); a shorter silence is told to `onQuiet` as it grows, and its end.
import type * as net from 'node:net';
import { Emitter, type Log, type Unsubscribe } from './emitter';
import {
  BEAT_VERSION,
  encodeMessage,
  LEADER_PROTOCOL_VERSION,
  LeaderMessageSchema,
  LineDecoder,
  type DecisionMessage,
  type FollowerMessage,
  type LeaderMessage,
} from './messages';

/** Why a follower's command did not succeed: timed out, the leader went away, or it failed there. */
export class LeaderCommandError extends Error {
  constructor(
    message: string,
    readonly code: 'timeout' | 'closed' | 'failed',
  ) {
    super(message);
    this.name = 'LeaderCommandError';
  }
}

export interface FollowerConnectionOptions {
  log?: Log;
  /** Default timeout of `command`. Default 30 s. */
  commandTimeoutMs?: number;
  /** Watch the leader's silence (lease.ts); omitted, nothing is watched. */
  silence?: SilenceOptions;
}

export interface SilenceOptions {
  /** A leader that beats and is silent this long is gone. */
  leaseMs: number;
  /** Added to `leaseMs` before a leader that has not welcomed this follower yet is gone. */
  graceMs: number;
  /** A silence this long is told to `onQuiet` (a view says the engine has not answered). */
  quietMs: number;
  /** How often the silence is looked at. */
  everyMs: number;
}

const monoNow = () => performance.now();

/** The leader is silent: how long, and who it said it was. */
export interface Quiet {
  silentMs: number;
  leaderPid: number | null;
  leaderWho: string | null;
}

interface PendingCommand {
  name: string;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

/** A follower's end of a connection to the leader. Sends `hello` at once. */
export class FollowerConnection {
  private readonly commandTimeoutMs: number;
  private readonly pending = new Map<number, PendingCommand>();
  private nextId = 1;
  private _closed = false;
  private _leaderPid: number | undefined;
  private _leaderWho: string | undefined;
  private _term: number | undefined;
  /** The leader said it beats (its welcome's version). */
  private beats = false;
  private lastHeard = monoNow();
  private silenceTimer: NodeJS.Timeout | undefined;
  private quiet = false;
  private latest: { snapshot: unknown } | undefined;
  private readonly log: Log;
  private readonly stateEmitter = new Emitter<unknown>((m) => this.log(m), 'state listener');
  private readonly decisionEmitter = new Emitter<DecisionMessage>((m) => this.log(m), 'decision listener');
  private readonly closeEmitter = new Emitter<void>((m) => this.log(m), 'close listener');
  private readonly silentEmitter = new Emitter<number>((m) => this.log(m), 'silent listener');
  private readonly quietEmitter = new Emitter<number | null>((m) => this.log(m), 'quiet listener');
  private readonly decoder = new LineDecoder<LeaderMessage>(
    LeaderMessageSchema,
    (msg) => this.onMessage(msg),
    (reason) => this.log(`follower: dropped a line from the leader: ${reason}`),
  );
  /** Set by the executor of `welcomed` (so declared before it). */
  private welcome!: { resolve: (pid: number) => void; reject: (err: Error) => void };
  /** Resolves with the leader's pid on `welcome`; rejects if the connection closes first. */
  readonly welcomed = new Promise<number>((resolve, reject) => (this.welcome = { resolve, reject }));

  constructor(
    private readonly socket: net.Socket,
    opts: FollowerConnectionOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
    this.commandTimeoutMs = opts.commandTimeoutMs ?? 30_000;
    this.welcomed.catch(() => {});
    socket.on('data', (chunk: Buffer) => {
      this.lastHeard = monoNow();
      if (this.quiet) {
        this.quiet = false;
        this.quietEmitter.fire(null);
      }
      this.decoder.push(chunk);
    });
    socket.on('error', (err) => this.log(`follower: leader socket error: ${err.message}`));
    socket.on('close', () => this.onSocketClose());
    if (socket.destroyed) {
      queueMicrotask(() => this.onSocketClose());
      return;
    }
    this.send({ type: 'hello', version: LEADER_PROTOCOL_VERSION, pid: process.pid });
    if (opts.silence) this.watchSilence(opts.silence);
  }

  /** The leader's pid, once welcomed. */
  get leaderPid(): number | undefined {
    return this._leaderPid;
  }

  /** What kind of engine the leader says it is, once welcomed (older leaders do not say). */
  get leaderWho(): string | undefined {
    return this._leaderWho;
  }

  /** The leader's term, once welcomed (older leaders do not say), and as its beats say. */
  get term(): number | undefined {
    return this._term;
  }

  get closed(): boolean {
    return this._closed;
  }

  /** A silence of `silentMs`, with who the leader said it was. */
  quietOf(silentMs: number): Quiet {
    return { silentMs, leaderPid: this._leaderPid ?? null, leaderWho: this._leaderWho ?? null };
  }

  /** `cb` runs once when the leader has been silent past its lease (with `silence` only). */
  onSilent(cb: (silentMs: number) => void): Unsubscribe {
    return this.silentEmitter.on(cb);
  }

  /** `cb` gets a growing silence (ms) past `quietMs` at each look, and null once the leader is heard again. */
  onQuiet(cb: (silentMs: number | null) => void): Unsubscribe {
    return this.quietEmitter.on(cb);
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
    const off = this.stateEmitter.on(cb);
    const known = this.latest;
    if (!known) return off;
    const cancel = soon(() => {
      // Only if nothing newer was delivered meanwhile.
      if (this.latest === known) this.stateEmitter.call(cb, known.snapshot);
    });
    return () => {
      cancel();
      off();
    };
  }

  /** `cb` gets every decision the leader streams from now on, in order. */
  onDecision(cb: (msg: DecisionMessage) => void): Unsubscribe {
    return this.decisionEmitter.on(cb);
  }

  /** Tells the leader whether this window has the focus (the leader picks the window that notifies). */
  reportFocus(viewer: string, focused: boolean): void {
    if (!this._closed) this.send({ type: 'focus', viewer, focused });
  }

  /** `cb` runs once when the connection to the leader is gone (at once if it already is). */
  onClose(cb: () => void): Unsubscribe {
    return this._closed ? soon(cb) : this.closeEmitter.on(cb);
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
        this._term = msg.term;
        this.beats = (msg.version ?? 0) >= BEAT_VERSION;
        if (msg.version !== undefined && msg.version !== LEADER_PROTOCOL_VERSION) {
          this.log(
            `follower: leader pid ${msg.leaderPid} speaks protocol ${msg.version}, this follower ${LEADER_PROTOCOL_VERSION}`,
          );
        }
        this.welcome.resolve(msg.leaderPid);
        return;
      case 'beat':
        this._term = msg.term;
        return;
      case 'state':
        this.latest = { snapshot: msg.snapshot };
        this.stateEmitter.fire(msg.snapshot);
        return;
      case 'decision':
        this.decisionEmitter.fire(msg);
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
        const error = `command "${p.name}" failed on the leader: ${msg.error ?? 'unknown error'}`;
        if (msg.ok) p.resolve(msg.value);
        else p.reject(new LeaderCommandError(error, 'failed'));
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

  private watchSilence(o: SilenceOptions): void {
    let lookedAt = monoNow();
    const next = () => {
      this.silenceTimer = setTimeout(look, o.everyMs);
      this.silenceTimer.unref();
    };
    const look = () => {
      if (this._closed) return;
      const now = monoNow();
      // A look that comes late means this process was stopped or blocked itself: what the leader
      // sent meanwhile is still unread (timers run before the socket is read), so judge at the next.
      const late = now - lookedAt > o.everyMs + 1_000;
      lookedAt = now;
      if (late) return next();
      // Since the leader last sent anything (or since the connection opened).
      const silent = now - this.lastHeard;
      // A leader that does not beat (an older one) is never judged by its silence once welcomed.
      const limit = this._leaderPid === undefined ? o.leaseMs + o.graceMs : this.beats ? o.leaseMs : Infinity;
      if (silent > limit) {
        this.silenceTimer = undefined;
        this.silentEmitter.fire(silent);
        return;
      }
      if (silent > o.quietMs && limit !== Infinity) {
        this.quiet = true;
        this.quietEmitter.fire(silent);
      }
      next();
    };
    next();
  }

  private onSocketClose(): void {
    if (this._closed) return;
    this._closed = true;
    clearTimeout(this.silenceTimer);
    this.decoder.end();
    this.welcome.reject(new Error('the connection to the leader closed before its welcome'));
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new LeaderCommandError(`the leader went away before answering command "${p.name}"`, 'closed'));
    }
    this.closeEmitter.fire();
    for (const e of [
      this.closeEmitter,
      this.stateEmitter,
      this.decisionEmitter,
      this.silentEmitter,
      this.quietEmitter,
    ]) {
      e.clear();
    }
  }
}

/** Runs `fn` in a microtask, unless the returned function is called first. */
function soon(fn: () => void): Unsubscribe {
  let active = true;
  queueMicrotask(() => {
    if (active) fn();
  });
  return () => void (active = false);
}
