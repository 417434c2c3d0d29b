// A fault-injecting proxy between the engine's client and the FakeDaemon, at the wire level:
// every newline-delimited JSON-RPC frame in either direction passes through it. It can
//   - drop the connection before a request reaches the daemon,
//   - drop it after the daemon handled the request but before the reply reaches the engine
//     (a lost reply), or right after the reply was delivered,
//   - drop it before or after a notification (or a server request) reaches the engine,
//   - delay a frame (and, the stream being ordered, every frame behind it in that direction),
//   - answer a request with an error, either instead of the daemon (it never saw the request)
//     or in place of the daemon's reply (it did act),
//   - refuse a connection attempt.
// It never duplicates, reorders or corrupts a frame: JSON-RPC over a stream cannot.
// Delays run on the FakeClock, so a schedule is repeatable and fast.
//
// Faults are keyed by method and occurrence: "the 3rd `thread/goal/set` seen by the proxy,
// lose its reply". `calm()` ends the faults: nothing more fires, and held frames flow at once.
import * as readline from 'node:readline';
import { PassThrough } from 'node:stream';
import type { TimerHandle } from '../../src/core/clock';
import { startSession } from '../../src/protocol/client';
import {
  ConnectionLostError,
  type Connector,
  type DaemonListener,
  type DaemonSession,
  RpcError,
} from '../../src/protocol/daemon';
import { LineMessageReader, LineMessageWriter } from '../../src/protocol/lineFraming';
import type { Transport } from '../../src/protocol/transport';
import type { FakeClock } from './fakeClock';
import { type FakeConnection, type FakeDaemon, SERVED_METHODS, type WireMessage } from './fakeDaemon';

/** Every request the engine makes, as the fake daemon serves them. */
export const REQUEST_METHODS = SERVED_METHODS;
export const NOTIFICATION_METHODS = [
  'thread/goal/updated',
  'thread/status/changed',
  'turn/started',
  'turn/completed',
  'error',
  'serverRequest/resolved',
  'item/commandExecution/requestApproval', // a server request: to the engine it is one more frame
] as const;

export type RequestFaultPhase =
  | 'dropBeforeRequest'
  | 'dropBeforeReply'
  | 'dropAfterReply'
  | 'delayRequest'
  | 'delayReply'
  | 'errorReply'
  | 'rejectRequest';

/** The error a faulty reply carries (JSON-RPC "internal error"). */
export const FAULT_ERROR = { code: -32603, message: 'internal error (fault proxy)' };
export type NotificationFaultPhase = 'dropBefore' | 'dropAfter' | 'delay';

export type Fault =
  | { on: 'request'; method: string; phase: RequestFaultPhase; occurrence: number; delayMs: number }
  | { on: 'notification'; method: string; phase: NotificationFaultPhase; occurrence: number; delayMs: number }
  | { on: 'connect'; occurrence: number };

export interface FiredFault {
  fault: Fault;
  /** The connection broke (every pending call fails, the engine must reconnect). */
  broke: boolean;
  /** Wall-clock time it fired at. */
  at: number;
  /** What the test's hook returned when it fired (e.g. how many decisions were logged by then). */
  mark: number;
}

export interface ProxyHooks {
  /** Called when a fault fires; the number it returns is kept as `FiredFault.mark`. */
  onFault?: (fault: Fault, broke: boolean) => number;
  /** The engine was told a thread's goal status (a notification it received, or a `thread/goal/get` reply). */
  onGoalTold?: (threadId: string, status: string) => void;
  /** The engine sent `thread/goal/set` (on an open connection, the `link`-th). */
  onSetSent?: (threadId: string, params: Record<string, unknown>, link: number) => void;
  /** Where the engine's log is now (e.g. how many decisions so far): kept with each delivered error. */
  mark?: () => number;
  /**
   * A frame from the daemon reached the engine's client (written to its socket, on an open
   * connection): a notification, a server request, or a reply. For a reply, `request` is what it
   * answers and `daemonError` whether the daemon's own frame was an error (null: the daemon never
   * saw the request, the proxy answered in its place).
   */
  onDelivered?: (
    link: number,
    message: WireMessage,
    request: { method: string; params: Record<string, unknown> } | null,
    daemonError: boolean | null,
  ) => void;
}

interface Frame {
  line: string;
  delayMs: number;
  dropBefore: Fault | null;
  dropAfter: Fault | null;
}

/** One direction of one connection: frames leave in the order they came in. */
class Lane {
  private readonly queue: Frame[] = [];
  private timer: TimerHandle | null = null;

  constructor(
    private readonly proxy: FaultProxy,
    private readonly link: Link,
    private readonly out: (line: string) => void,
  ) {}

  push(frame: Frame): void {
    this.queue.push(frame);
    this.pump();
  }

  holding(): boolean {
    return this.queue.length > 0;
  }

  /** Faults stopped: what is held goes now. */
  release(): void {
    if (this.timer) this.proxy.clock.clearTimer(this.timer);
    this.timer = null;
    this.pump();
  }

  clear(): void {
    if (this.timer) this.proxy.clock.clearTimer(this.timer);
    this.timer = null;
    this.queue.length = 0;
  }

  private pump(): void {
    while (this.timer === null && this.queue.length > 0 && !this.link.closed) {
      const frame = this.queue[0];
      if (frame.delayMs > 0 && !this.proxy.calmed) {
        const ms = frame.delayMs;
        frame.delayMs = 0;
        const from = this.proxy.clock.elapsed();
        this.proxy.holds.push({ from, to: from + ms });
        this.timer = this.proxy.clock.setTimer(() => {
          this.timer = null;
          this.pump();
        }, ms);
        return;
      }
      this.queue.shift();
      if (frame.dropBefore && !this.proxy.calmed) {
        this.link.breakBy(frame.dropBefore);
        return;
      }
      this.out(frame.line);
      this.proxy.moved += 1;
      if (frame.dropAfter && !this.proxy.calmed) {
        this.link.breakBy(frame.dropAfter);
        return;
      }
    }
  }
}

/** One proxied connection: the engine's client on one side, a FakeDaemon connection on the other. */
class Link {
  /** 1, 2, …: the order the connections were made in. */
  readonly id: number;
  closed = false;
  /** The engine was told it closed (after what was written before reached it). */
  private told = false;
  timedOut = false;
  /** The log's mark when the engine was told this connection closed. */
  closedMark = 0;
  private readonly fromClient = new PassThrough();
  private readonly toClient = new PassThrough();
  private readonly closeCallbacks: ((reason: string) => void)[] = [];
  private closeReason = '';
  private readonly up: Lane;
  private readonly down: Lane;
  /** Reply faults of requests in flight, by request id. */
  private readonly replyFaults = new Map<string | number, Fault[]>();
  /** Requests in flight, by id: what a reply answers. */
  private readonly requests = new Map<string | number, { method: string; params: Record<string, unknown> }>();

  constructor(
    private readonly proxy: FaultProxy,
    private readonly conn: FakeConnection,
  ) {
    this.id = proxy.linkCount;
    this.up = new Lane(proxy, this, (line) => conn.fromClient.write(`${line}\n`));
    this.down = new Lane(proxy, this, (line) => {
      this.toClient.write(`${line}\n`);
      this.delivered(line);
    });
    readline.createInterface({ input: this.fromClient }).on('line', (line) => this.fromClientLine(line));
    readline.createInterface({ input: conn.toClient }).on('line', (line) => this.fromDaemonLine(line));
    conn.onClose((reason) => this.close(reason));
  }

  transport(): Transport {
    return {
      reader: new LineMessageReader(this.toClient),
      writer: new LineMessageWriter(this.fromClient),
      describe: 'fake daemon (through the fault proxy)',
      onClose: (cb) => {
        if (this.told) cb(this.closeReason);
        else this.closeCallbacks.push(cb);
      },
      close: () => {
        this.close('closed by client');
        return Promise.resolve();
      },
    };
  }

  holding(): boolean {
    return this.up.holding() || this.down.holding();
  }

  release(): void {
    this.up.release();
    this.down.release();
  }

  breakBy(fault: Fault): void {
    this.proxy.record(fault, true);
    this.close(`connection dropped by the fault proxy (${describeFault(fault)})`);
  }

  close(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.closeReason = reason;
    this.up.clear();
    this.down.clear();
    this.conn.close(reason);
    this.toClient.end();
    // As a socket does: what was written before the drop reaches the engine before it is told
    // the connection closed (its replies first, then the close).
    const told = () => {
      this.told = true;
      for (const cb of this.closeCallbacks.splice(0)) cb(reason);
    };
    if (this.toClient.readableFlowing === true && !this.toClient.readableEnded) this.toClient.once('end', told);
    else told();
    this.proxy.moved += 1;
  }

  /** Tells the hook what reached the engine; `line` may carry a marker of the daemon's own frame. */
  private delivered(line: string): void {
    const hook = this.proxy.hooks.onDelivered;
    const m = JSON.parse(line) as WireMessage;
    if (m.method === undefined && m.id !== undefined) {
      const request = this.requests.get(m.id) ?? null;
      this.requests.delete(m.id);
      const daemonError = this.daemonErrors.has(m.id) ? this.daemonErrors.get(m.id)! : m.error !== undefined;
      this.daemonErrors.delete(m.id);
      hook?.(this.id, m, request, daemonError);
    } else hook?.(this.id, m, null, null);
  }

  /**
   * Replies the proxy made up or rewrote: whether the daemon's own answer was an error (null: it never saw the
   * request).
   */
  private readonly daemonErrors = new Map<string | number, boolean | null>();

  private fromClientLine(line: string): void {
    if (this.closed) return;
    this.proxy.moved += 1;
    const m = JSON.parse(line) as WireMessage;
    const frame: Frame = { line, delayMs: 0, dropBefore: null, dropAfter: null };
    if (m.method !== undefined && m.id !== undefined) {
      this.requests.set(m.id, { method: m.method, params: m.params ?? {} });
    }
    if (m.method === undefined && m.id !== undefined) {
      // Only a reply to a server request (an approval) goes this way: the engine must never send one.
      this.proxy.violations.push(`the engine answered a server request: ${line}`);
    } else if (m.method !== undefined && m.id !== undefined) {
      for (const fault of this.proxy.match('request', m.method)) {
        if (fault.on !== 'request') continue;
        if (fault.phase === 'dropBeforeRequest') frame.dropBefore = fault;
        else if (fault.phase === 'delayRequest') this.delay(frame, fault);
        else if (fault.phase === 'rejectRequest') {
          // The daemon never sees it: the proxy answers with an error in its place.
          this.proxy.record(fault, false);
          this.daemonErrors.set(m.id, null);
          this.down.push({
            line: JSON.stringify({ id: m.id, error: FAULT_ERROR }),
            delayMs: 0,
            dropBefore: null,
            dropAfter: null,
          });
          return;
        } else this.replyFaults.set(m.id, [...(this.replyFaults.get(m.id) ?? []), fault]);
      }
    }
    this.up.push(frame);
  }

  private fromDaemonLine(line: string): void {
    if (this.closed) return;
    this.proxy.moved += 1;
    const m = JSON.parse(line) as WireMessage;
    const frame: Frame = { line, delayMs: 0, dropBefore: null, dropAfter: null };
    if (m.method === undefined && m.id !== undefined) {
      for (const fault of this.replyFaults.get(m.id) ?? []) {
        if (fault.on !== 'request') continue;
        if (fault.phase === 'dropBeforeReply') frame.dropBefore = fault;
        else if (fault.phase === 'dropAfterReply') frame.dropAfter = fault;
        else if (fault.phase === 'delayReply') this.delay(frame, fault);
        else if (fault.phase === 'errorReply') {
          // The daemon acted, but the engine is told it failed.
          this.proxy.record(fault, false);
          if (!this.daemonErrors.has(m.id)) this.daemonErrors.set(m.id, m.error !== undefined);
          frame.line = JSON.stringify({ id: m.id, error: FAULT_ERROR });
        }
      }
      this.replyFaults.delete(m.id);
    } else if (m.method !== undefined) {
      for (const fault of this.proxy.match('notification', m.method)) {
        if (fault.on !== 'notification') continue;
        if (fault.phase === 'dropBefore') frame.dropBefore = fault;
        else if (fault.phase === 'dropAfter') frame.dropAfter = fault;
        else this.delay(frame, fault);
      }
    }
    this.down.push(frame);
  }

  private delay(frame: Frame, fault: Fault & { delayMs: number }): void {
    if (this.proxy.calmed || fault.delayMs <= 0) return;
    frame.delayMs += fault.delayMs;
    this.proxy.record(fault, false);
  }
}

export class FaultProxy {
  readonly fired: FiredFault[] = [];
  /** Rules broken on the wire that the daemon might not see (the frame may be dropped). */
  readonly violations: string[] = [];
  /** Frames and closes so far: a test waits until this stops moving. */
  moved = 0;
  calmed = false;
  private readonly counts = new Map<string, number>();
  private readonly links: Link[] = [];
  /** Connections made so far (the id of the newest). */
  linkCount = 0;
  /** When frames were held back by a delay (monotonic ms, from and to): time passes for the engine only there. */
  readonly holds: { from: number; to: number }[] = [];

  /** The client's request timeout (the product's default). */
  requestTimeoutMs = 15_000;
  /** Connections that a request timeout ended (a delay held a reply past the timeout). */
  timeouts = 0;
  /** Made-up error replies that reached the engine: the method, and the hook's mark. */
  readonly deliveredErrors: { method: string; mark: number }[] = [];

  constructor(
    private readonly daemon: FakeDaemon,
    readonly clock: FakeClock,
    private readonly faults: readonly Fault[],
    readonly hooks: ProxyHooks = {},
  ) {}

  connector(): Connector {
    return async (listener: DaemonListener): Promise<DaemonSession> => {
      const n = this.count('connect');
      const refused = this.calmed ? undefined : this.faults.find((f) => f.on === 'connect' && f.occurrence === n);
      if (refused) {
        this.record(refused, true);
        throw new Error(`connection refused by the fault proxy (${describeFault(refused)})`);
      }
      this.linkCount += 1;
      const link = new Link(this, this.daemon.accept());
      this.links.push(link);
      // The product's request timeout (15 s), counted on the fake clock like everything else.
      const session = await startSession(link.transport(), this.observeListener(listener, link), {
        clientVersion: 'test',
        requestTimeoutMs: this.requestTimeoutMs,
        timers: {
          set: (callback, ms) => this.clock.setTimer(callback, ms),
          clear: (handle) => this.clock.clearTimer(handle as TimerHandle),
        },
      }).catch((error: unknown) => {
        if (error instanceof ConnectionLostError && error.reason.startsWith('timed out')) this.timeouts += 1; // the handshake timed out
        // The handshake's error reached the engine as the reason its connection closed.
        if (error instanceof RpcError && error.message.includes(FAULT_ERROR.message))
          this.deliveredErrors.push({ method: error.method, mark: link.closedMark });
        throw error;
      });
      return this.observeSession(session, link);
    };
  }

  /** Faults stop: none fires any more, and every held frame flows now, in order. */
  calm(): void {
    this.calmed = true;
    for (const link of this.links) link.release();
  }

  /** Some frame is held back (by a delay) on an open connection. */
  holding(): boolean {
    return this.links.some((l) => !l.closed && l.holding());
  }

  /** Faults of this kind and method that fire on this occurrence (counted over all connections). */
  match(on: 'request' | 'notification', method: string): Fault[] {
    const n = this.count(`${on}:${method}`);
    if (this.calmed) return [];
    return this.faults.filter((f) => f.on === on && f.method === method && f.occurrence === n);
  }

  record(fault: Fault, broke: boolean): void {
    const mark = this.hooks.onFault?.(fault, broke) ?? 0;
    this.fired.push({ fault, broke, at: this.clock.now(), mark });
  }

  private delivered(method: string): void {
    this.deliveredErrors.push({ method, mark: this.hooks.mark?.() ?? 0 });
  }

  private count(key: string): number {
    const n = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, n);
    return n;
  }

  private observeListener(listener: DaemonListener, link: Link): DaemonListener {
    const told = this.hooks.onGoalTold;
    return {
      ...listener,
      goalUpdated: (threadId, goal, turnId) => {
        // On a closed connection the engine drops what still arrives: it was not told.
        if (!link.closed) told?.(threadId, goal.status);
        listener.goalUpdated(threadId, goal, turnId);
      },
      closed: (reason) => {
        link.closedMark = this.hooks.mark?.() ?? 0;
        listener.closed(reason);
      },
    };
  }

  private observeSession(session: DaemonSession, link: Link): DaemonSession {
    const hooks = this.hooks;
    /** Counts the connections a request timeout ended (once each). */
    const timing = <T>(promise: Promise<T>): Promise<T> =>
      promise.catch((error: unknown) => {
        if (error instanceof ConnectionLostError && error.reason.startsWith('timed out') && !link.timedOut) {
          link.timedOut = true;
          this.timeouts += 1;
        }
        if (error instanceof RpcError && error.message.includes(FAULT_ERROR.message)) this.delivered(error.method);
        throw error;
      });
    return {
      describe: session.describe,
      codexVersion: session.codexVersion,
      listLoaded: () => timing(session.listLoaded()),
      listThreads: (cursor, limit) => timing(session.listThreads(cursor, limit)),
      getGoal: (threadId) =>
        timing(session.getGoal(threadId)).then((goal) => {
          if (goal) hooks.onGoalTold?.(threadId, goal.status);
          return goal;
        }),
      readThread: (threadId) => timing(session.readThread(threadId)),
      readThreads: (threadIds) => timing(session.readThreads(threadIds)),
      latestTurn: (threadId) => timing(session.latestTurn(threadId)),
      resume: (threadId) => timing(session.resume(threadId)),
      setGoalActive: (threadId) => {
        if (!link.closed) hooks.onSetSent?.(threadId, { threadId, status: 'active', origin: 'automatic' }, link.id);
        return timing(session.setGoalActive(threadId));
      },
      setGoalStatusAsUser: (threadId, status) => timing(session.setGoalStatusAsUser(threadId, status)),
      readRateLimits: () => timing(session.readRateLimits()),
      request: (method, params) => timing(session.request(method, params)),
      close: () => session.close(),
    };
  }
}

export function describeFault(f: Fault): string {
  if (f.on === 'connect') return `refuse connection #${f.occurrence}`;
  const delay = f.phase.startsWith('delay') ? ` by ${f.delayMs} ms` : '';
  return `${f.phase}${delay} on ${f.method} #${f.occurrence}`;
}
