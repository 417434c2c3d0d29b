// One attempt of the election, and what it concluded: decided (leader or follower), or try again
// in so many milliseconds.
//
// A candidate links its socket into `<name>.sock` (exclusiveListen.ts). EEXIST → connect to the
// path: it answers → follower (that connection is the follower's channel). ECONNREFUSED → the
// socket of a dead leader, taken over under the lock (takeoverLock.ts): the candidate checks
// again that `<name>.sock` is the same file (device and inode) it found dead and that connecting
// to it is still refused; only then it removes it and links its own socket in its place. Only
// lock holders ever remove a socket that is not their own, and only one that refuses connections,
// so two candidates cannot both end up reachable at the path. The one exception is a leader
// found silent past its lease (lease.ts: a stopped process keeps its socket open, and its kernel
// still accepts connections): a follower that heard nothing from it for the whole lease replaces
// that very socket (`silentKey`) under the lock without asking it again; that leader's lease ran
// out before the follower's wait did, so it acts no more, and steps down when it runs again.
import type * as net from 'node:net';
import type { ElectionSettings } from './electionOptions';
import { listenCandidate, probe, removeIfSame, tryLink, type Candidate } from './exclusiveListen';
import { fileKey, lstatOrNull } from './files';
import type { TakeoverLock } from './takeoverLock';

export type Outcome = { done: true } | { done: false; delayMs: number };
export const DONE: Outcome = { done: true };
export const retryIn = (delayMs: number): Outcome => ({ done: false, delayMs });

export const randomBetween = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo));

/** What an attempt works with (among them the election's settings), and where it hands its result. */
export interface AttemptContext extends Pick<ElectionSettings, 'retryMs' | 'connectTimeoutMs' | 'log' | 'who'> {
  dir: string;
  socketPath: string;
  lock: TakeoverLock;
  /** A stop or a newer start made this attempt moot. */
  superseded(): boolean;
  /** The socket (`dev:ino`) of a leader this candidate found silent past its lease, or null. */
  silentKey: string | null;
  /** The candidate holds the path: lead, unless stopped meanwhile. Returns whether it kept it. */
  lead(cand: Candidate): Promise<boolean>;
  /** A live leader answered at the path (its socket file `key`): follow it over `socket`. */
  follow(socket: net.Socket, key: string): void;
}

export async function attempt(ctx: AttemptContext): Promise<Outcome> {
  const socketPath = ctx.socketPath;
  const cand = await listenCandidate(ctx.dir, ctx.log, ctx.who);
  let keep = false;
  const lead = async (): Promise<Outcome> => {
    keep = await ctx.lead(cand);
    return DONE;
  };
  try {
    if (ctx.superseded()) return DONE;
    if (await tryLink(cand, socketPath)) return await lead();
    const st = await lstatOrNull(socketPath);
    if (st === null) return retryIn(randomBetween(5, 25));
    if (fileKey(st) === ctx.silentKey) return await takeover(ctx, cand, fileKey(st), true, lead);
    const p = await probe(socketPath, ctx.connectTimeoutMs);
    if (p.kind === 'live') {
      ctx.follow(p.socket, fileKey(st));
      return DONE;
    }
    if (p.kind === 'gone') return retryIn(randomBetween(5, 25));
    if (p.kind === 'busy') {
      ctx.log(`leader election: the leader socket did not answer (${p.reason}); retrying in ${ctx.retryMs} ms`);
      return retryIn(ctx.retryMs);
    }
    return await takeover(ctx, cand, fileKey(st), false, lead);
  } finally {
    if (!keep) await cand.server.close(); // closing unlinks the temporary path (libuv), never <name>.sock
  }
}

/**
 * Takes over a dead (or, `silent`, a silent) leader's socket `staleKey`, under the takeover lock;
 * `lead` once the candidate holds the path.
 */
async function takeover(
  ctx: AttemptContext,
  cand: Candidate,
  staleKey: string,
  silent: boolean,
  lead: () => Promise<Outcome>,
): Promise<Outcome> {
  const socketPath = ctx.socketPath;
  const lock = await ctx.lock.acquire();
  if (!lock) return retryIn(randomBetween(20, 60));
  try {
    if (ctx.superseded()) return DONE;
    const st = await lstatOrNull(socketPath);
    if (st !== null) {
      if (fileKey(st) !== staleKey) return retryIn(0); // replaced: look again
      let why = 'silent past its lease';
      if (!silent) {
        const p = await probe(socketPath, ctx.connectTimeoutMs);
        if (p.kind === 'live') {
          ctx.follow(p.socket, staleKey);
          return DONE;
        }
        if (p.kind === 'gone') return retryIn(0);
        if (p.kind === 'busy') return retryIn(ctx.retryMs);
        why = p.code;
      }
      if (!(await removeIfSame(socketPath, staleKey, ctx.log))) return retryIn(0);
      ctx.log(`leader election: removed the ${silent ? 'silent' : 'dead'} leader's socket ${socketPath} (${why})`);
    }
    return (await tryLink(cand, socketPath)) ? await lead() : retryIn(0);
  } finally {
    await lock.release();
  }
}
