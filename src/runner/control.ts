// The runner's client of the election channel: how `status`, `pause`, `retry`, ... reach whichever
// engine leads for a daemon (a runner or a VS Code window). It connects to the leader's Unix socket
// as a follower does (src/leader/followerConnection.ts: hello, welcome, the pushed state, commands
// and their results) and never joins the election itself: it runs no engine and never takes over.
//
// The directory is checked as the election checks it (src/leader/privateDir.ts): a directory that
// is not ours or is writable by others is refused, and said so; nothing is sent through a socket
// there. A missing directory, a missing socket or one nobody listens on (a leader that died) all
// mean the same: no engine runs for this daemon.
import * as fs from 'node:fs';
import * as net from 'node:net';
import { FollowerConnection } from '../leader/followerConnection';
import { electionDir, electionFor } from '../leader/naming';
import { ensurePrivateDir, leaderFilePath, leaderSocketPath } from '../leader/privateDir';
import { LEASE_MS, readLeaderFile } from '../leader/lease';
import { parseSnapshot } from '../leader/handover';
import type { EngineSnapshot } from '../model/snapshot';
import type { SharedTarget, TransportTarget } from '../protocol/transport';

/** The exit codes of the runner's commands (documented in USAGE and docs/runner.md). */
export const EXIT = {
  ok: 0,
  /** status: a goal needs attention or gave up; a command: refused by the engine, or an error. */
  attention: 1,
  failed: 1,
  usage: 2,
  /** No engine runs for the daemon (or none can be reached: an unsafe election directory). */
  noEngine: 3,
  /** status: the daemon is not running (nothing listens at its socket or URL). */
  daemonStopped: 4,
} as const;

/** Who leads, as its welcome says: `who` is null for older leaders that do not say. */
export interface LeaderInfo {
  who: string | null;
  pid: number;
}

export type Reach =
  | { kind: 'engine'; leader: LeaderInfo; conn: FollowerConnection; socketPath: string }
  /** No engine runs (or none can be reached); `reason` says which, in words. */
  | { kind: 'none'; reason: string; unsafe: boolean };

/** Where the engine connects, in words: for messages, `status`, and the snapshot the followers show. */
export function describeTarget(target: TransportTarget): string {
  if (target.kind === 'socket') return target.path;
  return target.kind === 'url' ? target.url : [target.command, ...target.args].join(' ');
}

/** How long the connect and the leader's welcome may take. */
const REACH_TIMEOUT_MS = 5_000;

/**
 * Connects to the engine that leads for `target`'s daemon, or says why there is none. Throws only
 * for what is neither (a leader that does not answer in time, a socket error other than "nobody
 * there"): the caller reports it as an error.
 */
export async function reachLeader(target: SharedTarget, env: NodeJS.ProcessEnv = process.env): Promise<Reach> {
  const election = electionFor(target);
  // Socket and URL targets always have an election; the check keeps the types honest.
  if (!election) return { kind: 'none', reason: `${describeTarget(target)} has no election`, unsafe: false };
  const dir = electionDir(env);
  const none = (why: string): Reach => ({
    kind: 'none',
    reason: `no engine runs for ${describeTarget(target)} (${why})`,
    unsafe: false,
  });
  if (!fs.existsSync(dir)) return none(`no election directory ${dir}`);
  try {
    await ensurePrivateDir(dir);
  } catch (error) {
    const reason = `no engine can be reached for ${describeTarget(target)}: ${(error as Error).message}`;
    return { kind: 'none', reason, unsafe: true };
  }
  const socketPath = leaderSocketPath(dir, election.name);
  const socket = await connectSocket(socketPath, REACH_TIMEOUT_MS);
  if (socket === 'nobody') return none(`nobody listens on ${socketPath}`);
  const conn = new FollowerConnection(socket, { commandTimeoutMs: 30_000 });
  let timer: NodeJS.Timeout | undefined;
  try {
    const pid = await Promise.race([
      conn.welcomed,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          void silentLeaderText(dir, election.name, socketPath).then((silent) =>
            reject(new Error(silent ?? `the engine at ${socketPath} did not answer within ${REACH_TIMEOUT_MS} ms`)),
          );
        }, REACH_TIMEOUT_MS);
      }),
    ]);
    return { kind: 'engine', leader: { who: conn.leaderWho ?? null, pid }, conn, socketPath };
  } catch (error) {
    conn.close();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What the leader file says of a leader that does not answer: "the engine (runner, pid 4711) has
 * not answered for 12 s", from its last renewal (src/leader/lease.ts); null when the file is not
 * that socket's.
 */
async function silentLeaderText(dir: string, name: string, socketPath: string): Promise<string | null> {
  try {
    const [file, st] = await Promise.all([readLeaderFile(leaderFilePath(dir, name)), fs.promises.lstat(socketPath)]);
    if (!file || file.socket !== `${st.dev}:${st.ino}`) return null;
    const silentS = Math.max(0, Math.floor((Date.now() - file.renewedAt) / 1000));
    return (
      `the engine (${file.who}, pid ${file.pid}) at ${socketPath} has not answered for ${silentS} s ` +
      `(stopped or blocked: another engine takes its place once its ${LEASE_MS / 1000} s lease runs out)`
    );
  } catch {
    return null;
  }
}

/** A connected socket, or 'nobody' when no process listens there (no file, or a dead leader's). */
function connectSocket(socketPath: string, timeoutMs: number): Promise<net.Socket | 'nobody'> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connecting to ${socketPath} took longer than ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') resolve('nobody');
      else reject(new Error(`cannot connect to ${socketPath}: ${error.message}`));
    });
  });
}

/**
 * The leader's snapshot: the one it pushed after its welcome, or the next one within `timeoutMs`.
 * Resolves null when none came in time or the connection closed; a snapshot that does not parse
 * is skipped (an older or newer leader's: the next may).
 */
export function leaderSnapshot(conn: FollowerConnection, timeoutMs: number): Promise<EngineSnapshot | null> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (value: EngineSnapshot | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      offState();
      offClose();
      resolve(value);
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    const offState = conn.onState((value) => {
      const snapshot = parseSnapshot(value);
      if (snapshot) finish(snapshot);
    });
    const offClose = conn.onClose(() => finish(null));
  });
}

/** The leader in words: "runner, pid 123" (or "pid 123" when it does not say what it is). */
export function leaderText(leader: LeaderInfo): string {
  return leader.who ? `${leader.who}, pid ${leader.pid}` : `pid ${leader.pid}`;
}
