// The election's primitive: an exclusive listen on `<name>.sock`, made in two steps so that
// closing a server can never remove somebody else's socket (Node/libuv unlinks a server's bound
// path on close, whatever that path refers to by then):
//   1. listen on a private temporary path `<dir>/.<pid><random>.s` (a candidate),
//   2. `link(tmp, <name>.sock)`: atomic and exclusive (EEXIST plays the part of EADDRINUSE), then
//      unlink the temporary name. The listener now lives at `<name>.sock` only, and libuv's
//      unlink-on-close hits the (already gone) temporary name.
// A leader that stops removes its own path first, after checking the inode, and only then
// closes, so a live leader's socket never refuses connections; a socket that refuses is a dead
// leader's. Removing one that is not our own is done by rename aside and inode check, so a live
// socket is never deleted. The probe tells a live leader from a dead one.
import { once } from 'node:events';
import { promises as fsp } from 'node:fs';
import * as net from 'node:net';
import type { Log } from './emitter';
import { errCode, fileKey, linkNew, lstatOrNull, removeIfStill, unlinkQuiet } from './files';
import { LeaderServer } from './leaderServer';
import { tmpSocketPath } from './privateDir';

/** A listening server at a private temporary path, ready to be linked into `<name>.sock`. */
export interface Candidate {
  tmpPath: string;
  key: string;
  server: LeaderServer;
}

/** A listening server at a fresh temporary path in `dir`. */
export async function listenCandidate(dir: string, log: Log, who: string | undefined): Promise<Candidate> {
  const raw = net.createServer();
  const server = new LeaderServer(raw, { log, who });
  for (let i = 0; ; i++) {
    const tmpPath = tmpSocketPath(dir);
    try {
      const listening = once(raw, 'listening'); // rejects on an 'error' first
      raw.listen(tmpPath);
      await listening;
    } catch (e) {
      if (errCode(e) === 'EADDRINUSE' && i < 3) continue;
      await server.close();
      throw e;
    }
    // Private whatever the umask (the directory is 0700 already): only this user connects.
    await fsp.chmod(tmpPath, 0o600);
    const st = await fsp.lstat(tmpPath);
    return { tmpPath, key: fileKey(st), server };
  }
}

/** `link(tmp, <name>.sock)`: true if the candidate now holds the path. */
export async function tryLink(cand: Candidate, socketPath: string): Promise<boolean> {
  if (!(await linkNew(cand.tmpPath, socketPath))) return false;
  await unlinkQuiet(cand.tmpPath);
  return true;
}

/** Removes `<name>.sock` if it is still `key`, then closes the server. */
export async function relinquish(server: LeaderServer, key: string, socketPath: string, log: Log): Promise<void> {
  try {
    // Nobody else removes the socket of a leader within its lease (lease.ts; a leader whose lease
    // ran out does not call this), so it cannot change between check and unlink.
    // A server already closed (by its user) refuses connections: its file is left to the
    // takeover protocol, which may be removing it right now.
    const st = server.closed ? null : await lstatOrNull(socketPath);
    if (st !== null && fileKey(st) === key) await fsp.unlink(socketPath);
  } catch (e) {
    log(`leader election: could not remove ${socketPath}: ${(e as Error).message}`);
  }
  await server.close();
}

/** Removes `p` only if it is still the file `key` (removeIfStill). True if `key` is gone. */
export async function removeIfSame(p: string, key: string, log: Log): Promise<boolean> {
  const same = async (aside: string) => {
    const st = await lstatOrNull(aside);
    return st === null || fileKey(st) === key;
  };
  const putBackFailed = () => log(`leader election: could not put back a socket moved by mistake at ${p}`);
  return (await removeIfStill(p, same, putBackFailed)) !== 'kept';
}

type ProbeResult =
  | { kind: 'live'; socket: net.Socket }
  | { kind: 'stale'; code: string }
  | { kind: 'gone' }
  | { kind: 'busy'; reason: string };

/** Connects to `p`: a live listener, a dead socket (refused), nothing there, or inconclusive. */
export function probe(p: string, timeoutMs: number): Promise<ProbeResult> {
  return new Promise<ProbeResult>((resolve) => {
    const socket = net.createConnection(p);
    let done = false;
    const finish = (r: ProbeResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.removeListener('connect', onConnect);
      socket.removeListener('error', onError);
      if (r.kind !== 'live') socket.destroy();
      resolve(r);
    };
    const onConnect = () => finish({ kind: 'live', socket });
    const onError = (err: NodeJS.ErrnoException) => {
      const code = err.code ?? 'UNKNOWN';
      // ECONNREFUSED: a socket file nobody listens on (or a plain file): a dead leader's.
      if (code === 'ECONNREFUSED' || code === 'ENOTSOCK') finish({ kind: 'stale', code });
      else if (code === 'ENOENT') finish({ kind: 'gone' });
      // EAGAIN (backlog full), EACCES, ...: never treated as dead.
      else finish({ kind: 'busy', reason: `${code}: ${err.message}` });
    };
    const timer = setTimeout(
      () => finish({ kind: 'busy', reason: `connect timed out after ${timeoutMs} ms` }),
      timeoutMs,
    );
    socket.once('connect', onConnect);
    socket.on('error', onError);
  });
}
