// The daemon as the engine sees it: a session of typed calls, and the events it
// delivers. The JSON-RPC client implements it; the engine depends only on this.
import type { GoalStatus } from '../model/watch';
import type { RateLimitSnapshot, Thread, ThreadGoal, ThreadStatus, Turn, TurnError } from './schema';

export type { RateLimitSnapshot, Thread, ThreadGoal, ThreadStatus, Turn, TurnError };
export type RequestId = string | number;

/** Events, delivered in wire order, synchronously; a reply is handled after every earlier event. */
export interface DaemonListener {
  goalUpdated(threadId: string, goal: ThreadGoal, turnId: string | null): void;
  goalCleared(threadId: string): void;
  threadStatus(threadId: string, status: ThreadStatus): void;
  threadStarted(thread: Thread): void;
  threadClosed(threadId: string): void;
  turnStarted(threadId: string, turn: Turn): void;
  turnCompleted(threadId: string, turn: Turn): void;
  error(threadId: string, turnId: string | null, error: TurnError, willRetry: boolean): void;
  /**
   * `thread/tokenUsage/updated`: a model response on the thread came back whole, so its provider
   * answers (docs/daemon-behaviour.md (p)). To subscribed connections only.
   */
  responseCompleted(threadId: string): void;
  /** A server-to-client request (an approval, user input). Never answered by this client. */
  serverRequest(threadId: string | null, requestId: RequestId, method: string): void;
  serverRequestResolved(threadId: string, requestId: RequestId): void;
  /**
   * `account/rateLimits/updated`: the account's rate limits changed (no thread named). Sent just
   * before a goal turns `usageLimited`, to the connections subscribed to its thread.
   */
  rateLimitsUpdated(snapshot: RateLimitSnapshot): void;
  /** A frame or message that could not be read; the connection keeps serving. */
  protocolProblem(message: string): void;
  /** The connection ended; every call still waiting rejects with `ConnectionLostError`. */
  closed(reason: string): void;
}

/** One page of `thread/list`: every thread of the Codex home, loaded in the daemon or not. */
export interface ThreadPage {
  threads: Thread[];
  nextCursor: string | null;
}

/** What `thread/resume` tells: the thread and, when the daemon gave it, its newest turn (null: none). */
export interface Resumed {
  thread: Thread;
  turn: Turn | null | undefined;
}

export interface DaemonSession {
  readonly describe: string;
  /** The daemon's Codex version, from `initialize`'s userAgent (null: not readable). */
  readonly codexVersion: string | null;
  listLoaded(): Promise<string[]>;
  /** `thread/list`, newest update first, every source an interactive app or a script records. */
  listThreads(cursor: string | null, limit: number): Promise<ThreadPage>;
  getGoal(threadId: string): Promise<ThreadGoal | null>;
  readThread(threadId: string): Promise<Thread>;
  /**
   * These threads (at most `STATUS_PAGE`) in one `thread/list {includedThreadIds}`, each with its
   * live status (measured: the status `thread/read` gives, docs/daemon-behaviour.md (n)). Null
   * when the daemon does not filter by id (0.169.0 ignores the parameter and lists everything):
   * read each thread instead. A thread the page leaves out (another source, archived) is not in it.
   */
  readThreads(threadIds: readonly string[]): Promise<Thread[] | null>;
  /** The newest turn of the thread, or null when it has none. */
  latestTurn(threadId: string): Promise<Turn | null>;
  /**
   * Subscribes this connection to the thread's turn events (only for loaded threads), and gives
   * its newest turn in the same reply (`initialTurnsPage`, measured with 0.169.0 and 0.171.0:
   * the same turn `thread/turns/list` gives). `turn` undefined: the daemon gave no page.
   */
  resume(threadId: string): Promise<Resumed>;
  /** Exactly `thread/goal/set {threadId, status: "active", origin: "automatic"}`. */
  setGoalActive(threadId: string): Promise<ThreadGoal | null>;
  /** `origin: "user"`: only when a person pressed a button that says so. */
  setGoalStatusAsUser(threadId: string, status: GoalStatus): Promise<ThreadGoal | null>;
  /** `account/rateLimits/read`: every snapshot it gives (the single view, then each limit id's). */
  readRateLimits(): Promise<RateLimitSnapshot[]>;
  /** Any other call, unvalidated: for actions a person asked for explicitly (and for tests). */
  request(method: string, params: object): Promise<unknown>;
  close(): Promise<void>;
}

export type Connector = (listener: DaemonListener) => Promise<DaemonSession>;

/** The most thread ids one `thread/list {includedThreadIds}` may name (the daemon's limit). */
export const STATUS_PAGE = 100;

/** The daemon answered with an error. It may still have acted: decide from its state. */
export class RpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    message: string,
  ) {
    super(`${method} failed (${code}): ${message}`);
    this.name = 'RpcError';
  }
}

/** No reply came: the connection closed or the call timed out. Never means "it did not happen". */
export class ConnectionLostError extends Error {
  constructor(
    readonly method: string,
    readonly reason: string,
  ) {
    super(`${method}: no reply (${reason})`);
    this.name = 'ConnectionLostError';
  }
}

/** A reply or notification that does not have the shape the engine relies on. */
export class ProtocolError extends Error {
  constructor(
    readonly method: string,
    detail: string,
  ) {
    super(`${method}: unexpected reply: ${detail}`);
    this.name = 'ProtocolError';
  }
}
