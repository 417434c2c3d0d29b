// The leader's end of its socket (election.ts decides who leads). Answers each follower's `hello`
// with `welcome` and at once the latest state (if any), pushes every later state to every
// follower (latest only: a follower that cannot keep up gets the newest snapshot when its socket
// drains, never a backlog), and runs followers' commands through one handler. Malformed lines
// are reported through `log` and skipped, never thrown. Decisions go to every follower in order
// (a stream, not a latest value); what a window says of its focus is passed on to `onFocus`.
// A follower of an older protocol gets the states and decisions it can read (olderFollowers.ts).
import type * as net from 'node:net';
import { type Log, type Unsubscribe } from './emitter';
import {
  type DecisionMessage,
  encodeMessage,
  BEAT_VERSION,
  LEADER_PROTOCOL_VERSION,
  PROBE_BUDGET_VERSION,
  FollowerMessageSchema,
  LineDecoder,
  type FollowerMessage,
  type LeaderMessage,
} from './messages';
import { olderKnows, olderSnapshotOf } from './olderFollowers';
import { errorText } from '../util/errorText';

/** Runs a follower's command on the leader; its value (JSON), or its promise's, goes back as the result. */
export type CommandHandler = (name: string, args: unknown[]) => unknown;

export interface LeaderServerOptions {
  log?: Log;
  /** Sent in the welcome: what kind of engine this leader is (e.g. "runner"). */
  who?: string;
}

/** A connection that has not said hello within this time is dropped. */
const HELLO_TIMEOUT_MS = 5000;

interface Peer {
  socket: net.Socket;
  decoder: LineDecoder<FollowerMessage>;
  welcomed: boolean;
  /** The protocol version it said in its hello (it gets beats from BEAT_VERSION on). */
  version: number;
  /** A state is waiting for the socket to drain. */
  stateDirty: boolean;
  helloTimer: NodeJS.Timeout;
  /** The window's viewer id, once it said whether it has the focus (followers that never say are not windows). */
  viewer: string | null;
}

/** A window's focus, as it last said (`null`: it is gone). */
export type FocusListener = (viewer: string, focused: boolean | null) => void;

/**
 * The latest state and its line. `olderLine`: the line for followers older than
 * PROBE_BUDGET_VERSION, made once per broadcast when the first of them needs it (none connected:
 * never); `null` when it could not be encoded.
 */
interface LatestState {
  snapshot: unknown;
  line: string;
  olderLine?: string | null;
}

type QueuedCommand = Extract<FollowerMessage, { type: 'command' }> & { peer: Peer };

const MAX_QUEUED_COMMANDS = 1000;

/** The leader's end: one net.Server (already listening or about to), any number of followers. */
export class LeaderServer {
  private readonly peers = new Set<Peer>();
  private readonly log: Log;
  private readonly who: string | undefined;
  private handler: CommandHandler | undefined;
  /** Commands that arrived before a handler was set; run when one is. */
  private queued: QueuedCommand[] = [];
  private latest: LatestState | undefined;
  private _closed = false;
  private closing: Promise<void> | undefined;
  private focusListener: FocusListener | undefined;
  private term: number | undefined;

  constructor(
    private readonly server: net.Server,
    opts: LeaderServerOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
    this.who = opts.who;
    server.on('connection', (socket) => this.accept(socket));
    server.on('error', (err) => this.log(`leader server error: ${err.message}`));
  }

  /** Followers that said hello and are still connected. */
  get followerCount(): number {
    return [...this.peers].filter((p) => p.welcomed).length;
  }

  get closed(): boolean {
    return this._closed;
  }

  /** Called when a window says whether it has the focus, and with `null` when such a window goes (one listener). */
  onFocus(listener: FocusListener): Unsubscribe {
    this.focusListener = listener;
    return () => {
      if (this.focusListener === listener) this.focusListener = undefined;
    };
  }

  /** The leader's term, told in every welcome from now on (lease.ts). */
  setTerm(term: number): void {
    this.term = term;
  }

  /** Tells every follower that speaks beats that the leader is alive (at each renewal of its lease). */
  beat(): void {
    if (this._closed || this.term === undefined) return;
    const line = encodeMessage({ type: 'beat', term: this.term });
    for (const p of this.peers) if (p.welcomed && p.version >= BEAT_VERSION) this.writeLine(p, line);
  }

  /** Sends a decision to every follower, after whatever was sent before it. */
  sendDecision(msg: Omit<DecisionMessage, 'type'>): void {
    const line = this._closed ? null : this.encode({ type: 'decision', ...msg }, 'decision not sent: ');
    if (line === null) return;
    // A decision type an older follower does not know would be dropped by it as malformed.
    const older = olderKnows(msg.decision);
    for (const p of this.peers) {
      if (p.welcomed && (older || p.version >= PROBE_BUDGET_VERSION)) this.writeLine(p, line);
    }
  }

  /**
   * Sets the handler for followers' commands (one at a time; a later call replaces it).
   * Commands received before any handler are queued and run now.
   */
  onCommand(handler: CommandHandler): Unsubscribe {
    this.handler = handler;
    for (const q of this.queued.splice(0)) void this.run(handler, q);
    return () => {
      if (this.handler === handler) this.handler = undefined;
    };
  }

  /**
   * Pushes `snapshot` to every follower and keeps it for those who join later. Must be JSON
   * serializable; one that is not (or is over the line cap) is logged and not sent.
   */
  broadcast(snapshot: unknown): void {
    const line = this._closed ? null : this.encode({ type: 'state', snapshot }, 'state not broadcast: ');
    if (line === null) return;
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
      version: 0,
      stateDirty: false,
      helloTimer: setTimeout(() => {
        if (!peer.welcomed) {
          this.log(`leader: a connection said no hello within ${HELLO_TIMEOUT_MS} ms; dropped`);
          socket.destroy();
        }
      }, HELLO_TIMEOUT_MS).unref(),
      viewer: null,
      decoder: new LineDecoder<FollowerMessage>(
        FollowerMessageSchema,
        (msg) => this.onMessage(peer, msg),
        (reason) => this.log(`leader: dropped a line from a follower: ${reason}`),
      ),
    };
    this.peers.add(peer);
    socket.on('data', (chunk: Buffer) => peer.decoder.push(chunk));
    socket.on('drain', () => {
      if (peer.stateDirty) this.sendState(peer);
    });
    socket.on('error', (err) => this.log(`leader: follower socket error: ${err.message}`));
    socket.on('close', () => {
      clearTimeout(peer.helloTimer);
      this.peers.delete(peer);
      if (peer.viewer !== null && !this._closed) this.tellFocus(peer.viewer, null);
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
      peer.version = msg.version;
      clearTimeout(peer.helloTimer);
      this.write(peer, {
        type: 'welcome',
        leaderPid: process.pid,
        version: LEADER_PROTOCOL_VERSION,
        ...(this.who ? { who: this.who } : {}),
        ...(this.term !== undefined ? { term: this.term } : {}),
      });
      if (this.latest) this.sendState(peer);
      return;
    }
    if (msg.type === 'focus') {
      if (!peer.welcomed) return;
      if (peer.viewer !== null && peer.viewer !== msg.viewer) this.tellFocus(peer.viewer, null);
      peer.viewer = msg.viewer;
      this.tellFocus(msg.viewer, msg.focused);
      return;
    }
    const q = { ...msg, peer };
    if (this.handler) {
      void this.run(this.handler, q);
    } else if (this.queued.length < MAX_QUEUED_COMMANDS) {
      this.queued.push(q);
    } else {
      this.reply(peer, { type: 'result', id: q.id, ok: false, error: 'the leader is not ready for commands yet' });
    }
  }

  private tellFocus(viewer: string, focused: boolean | null): void {
    try {
      this.focusListener?.(viewer, focused);
    } catch (e) {
      this.log(`leader: focus listener threw: ${errorText(e)}`);
    }
  }

  private async run(handler: CommandHandler, q: QueuedCommand): Promise<void> {
    let value: unknown;
    try {
      value = await handler(q.name, q.args);
    } catch (e) {
      this.reply(q.peer, { type: 'result', id: q.id, ok: false, error: errorText(e) || 'command failed' });
      return;
    }
    this.reply(q.peer, { type: 'result', id: q.id, ok: true, value });
  }

  private reply(peer: Peer, msg: LeaderMessage & { type: 'result' }): void {
    // A value that could not be encoded: the follower still gets an answer.
    const error = 'command result could not be sent (not JSON, or too large)';
    if (!this.write(peer, msg) && msg.ok) this.write(peer, { type: 'result', id: msg.id, ok: false, error });
  }

  private sendState(peer: Peer): void {
    const latest = this.latest;
    if (!latest) return;
    if (peer.socket.writableNeedDrain) {
      peer.stateDirty = true;
      return;
    }
    peer.stateDirty = false;
    const line = peer.version >= PROBE_BUDGET_VERSION ? latest.line : this.olderLine(latest);
    if (line !== null) this.writeLine(peer, line);
  }

  /** The latest state's line for older followers, made at its first use. */
  private olderLine(latest: LatestState): string | null {
    if (latest.olderLine !== undefined) return latest.olderLine;
    const older = olderSnapshotOf(latest.snapshot);
    latest.olderLine =
      older === latest.snapshot
        ? latest.line
        : this.encode({ type: 'state', snapshot: older }, 'state not sent to older followers: ');
    return latest.olderLine;
  }

  /** The message's line; null (logged, after `what`) when it cannot be encoded. */
  private encode(msg: LeaderMessage, what = ''): string | null {
    try {
      return encodeMessage(msg);
    } catch (e) {
      this.log(`leader: ${what}${(e as Error).message}`);
      return null;
    }
  }

  /** Encodes and writes; false when the message could not be encoded. */
  private write(peer: Peer, msg: LeaderMessage): boolean {
    const line = this.encode(msg);
    if (line !== null) this.writeLine(peer, line);
    return line !== null;
  }

  private writeLine(peer: Peer, line: string): void {
    if (!peer.socket.destroyed && peer.socket.writable) peer.socket.write(line);
  }
}
