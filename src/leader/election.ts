// Which VS Code window runs the recovery engine against a given Codex daemon.
//
// Every window's extension host builds a LeaderElection on the same private directory and name.
// Exactly one becomes the leader (it gets a LeaderServer and runs the engine); the others become
// followers (each gets a FollowerConnection to the leader: they mirror its state and send their
// commands to it). When the leader stops or dies, a follower takes over within a few hundred
// milliseconds, and never while another leader is still listening.
//
// Choice: a Unix socket at a path in a private directory (`<dir>/<name>.sock`, dir 0700 and ours),
// not Linux's abstract namespace: it works the same on macOS, and the directory's permissions
// keep other users out (abstract sockets have no permissions at all). Windows (named pipes) is not
// supported: the constructor throws there.
//
// The primitive is still "an exclusive listen on <name>.sock", made in two steps so that closing
// a server can never remove somebody else's socket (Node/libuv unlinks a server's bound path on
// close, whatever that path refers to by then):
//   1. listen on a private temporary path `<dir>/.<pid><random>.s`,
//   2. `link(tmp, <name>.sock)`: atomic and exclusive (EEXIST plays the part of EADDRINUSE), then
//      unlink the temporary name. The listener now lives at `<name>.sock` only, and libuv's
//      unlink-on-close hits the (already gone) temporary name.
// EEXIST → connect to `<name>.sock`: it answers → follower (that connection is the follower's
// channel). ECONNREFUSED → the socket of a dead leader; the takeover runs under a lock:
//   - the lock is `<name>.takeover`, a file created atomically with its owner's pid and a token
//     (written to a temporary file, then `link`ed: exclusive, never seen half-written). A lock
//     whose owner pid is dead, or older than 10 s, is stale: it is renamed aside (atomic; of two
//     breakers only one succeeds), and the renamed file's token is checked to be the one judged
//     stale (if not, it is put back);
//   - under the lock the candidate checks again that `<name>.sock` is the same file (device and
//     inode) it found dead and that connecting to it is still refused; only then it removes it
//     (rename aside + inode check, so a live socket is never deleted even if the lock was ever
//     broken wrongly) and links its own socket in its place.
// Only lock holders ever remove a socket that is not their own, and only one that refuses
// connections; a live leader's socket never refuses (a leader that stops removes its own path
// first, after checking the inode, and only then closes). So two candidates cannot both end up
// reachable at the path. As a backstop, the leader checks every second that `<name>.sock` is still
// its own socket (device and inode) and steps down if not. A follower whose connection closes
// runs the election again after a short random delay (50–250 ms).
import { promises as fsp, type Stats } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as crypto from 'node:crypto';
import { Emitter, FollowerConnection, LeaderServer, type Log, type Unsubscribe } from './channel';

export {
  FollowerConnection,
  LeaderServer,
  LeaderCommandError,
  type CommandHandler,
  type LeaderCommandErrorCode,
  type Log,
  type Unsubscribe,
} from './channel';

export type Role = 'leader' | 'follower' | 'stopped';

export interface LeaderElectionOptions {
  /** Private directory: created 0700 if missing; refused if not ours or group/world-writable. */
  dir: string;
  /** The socket's base name, e.g. a hash of the daemon target: [A-Za-z0-9_-], 1–64 characters. */
  name: string;
  /** Delay before trying again after an inconclusive attempt. Default 1000 ms. */
  retryMs?: number;
  /** How often a leader checks that the socket path is still its own. Default 1000 ms. */
  checkMs?: number;
  /** Timeout of the connect that tells a live leader from a dead one. Default 2000 ms. */
  connectTimeoutMs?: number;
  /** Default timeout of follower commands. Default 30 s. */
  commandTimeoutMs?: number;
  /** Diagnostics (role changes, takeovers, malformed lines). */
  log?: Log;
  /** What kind of engine this is, told to followers in the welcome (e.g. "runner"). */
  who?: string;
}

/** Longest socket path accepted (sun_path is 104 bytes on macOS, 108 on Linux, NUL included). */
export const MAX_SOCKET_PATH_BYTES = 103;
/** A takeover lock older than this is stale even if its owner pid seems alive (pid reuse). */
export const LOCK_STALE_MS = 10_000;
/** Leftover temporary files older than this are swept by a new leader. */
const LEFTOVER_MS = 60_000;

const randomBetween = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo));
const errCode = (e: unknown): string | undefined => (e as NodeJS.ErrnoException)?.code;
const fileKey = (st: Stats): string => `${st.dev}:${st.ino}`;
const token = (): string => crypto.randomBytes(4).toString('hex');

function currentUid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return errCode(e) === 'EPERM';
  }
}

async function lstatOrNull(p: string): Promise<Stats | null> {
  try {
    return await fsp.lstat(p);
  } catch (e) {
    if (errCode(e) === 'ENOENT') return null;
    throw e;
  }
}

async function unlinkQuiet(p: string): Promise<void> {
  try {
    await fsp.unlink(p);
  } catch {
    // already gone
  }
}

/**
 * Creates `dir` (0700) if missing; throws a clear Error if it is not a directory, not owned by
 * the current user, or writable by group or others (checked on its real path). Returns the
 * absolute path.
 */
export async function ensurePrivateDir(dir: string): Promise<string> {
  const abs = path.resolve(dir);
  let created: string | undefined;
  try {
    created = await fsp.mkdir(abs, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw new Error(`leader election: cannot create the directory ${abs}: ${(e as Error).message}`);
  }
  if (created !== undefined) await fsp.chmod(abs, 0o700); // exactly 0700, whatever the umask
  const real = await fsp.realpath(abs);
  const st = await fsp.stat(real);
  const shown = real === abs ? abs : `${abs} (-> ${real})`;
  if (!st.isDirectory()) throw new Error(`leader election: refusing ${shown}: it is not a directory`);
  const uid = currentUid();
  if (uid !== undefined && st.uid !== uid) {
    throw new Error(
      `leader election: refusing directory ${shown}: it is owned by uid ${st.uid}, not by you (uid ${uid})`,
    );
  }
  if ((st.mode & 0o022) !== 0) {
    const mode = `0${(st.mode & 0o7777).toString(8)}`;
    throw new Error(
      `leader election: refusing directory ${shown}: it is writable by group or others (mode ${mode}); ` +
        `use a private directory (chmod 700 ${real})`,
    );
  }
  // The path as given, not the real one: socket paths are short (macOS's /var -> /private/var).
  return abs;
}

type ProbeResult =
  | { kind: 'live'; socket: net.Socket }
  | { kind: 'stale'; code: string }
  | { kind: 'gone' }
  | { kind: 'busy'; reason: string };

/** Connects to `p`: a live listener, a dead socket (refused), nothing there, or inconclusive. */
function probe(p: string, timeoutMs: number): Promise<ProbeResult> {
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

/** The takeover lock `<name>.takeover`: a file linked into place with `pid token time`. */
class TakeoverLock {
  constructor(
    private readonly lockPath: string,
    private readonly log: Log,
  ) {}

  /** Acquires the lock, or returns null when a live candidate holds it. */
  async acquire(): Promise<{ release: () => Promise<void> } | null> {
    const mine = `${process.pid} ${token()} ${Date.now()}\n`;
    const tmp = `${this.lockPath}.${token()}.tmp`;
    await fsp.writeFile(tmp, mine, { mode: 0o600, flag: 'wx' });
    try {
      for (let i = 0; i < 2; i++) {
        try {
          await fsp.link(tmp, this.lockPath);
          return { release: () => this.release(mine) };
        } catch (e) {
          if (errCode(e) !== 'EEXIST') throw e;
        }
        if (i === 0 && !(await this.breakIfStale())) return null;
      }
      return null;
    } finally {
      await unlinkQuiet(tmp);
    }
  }

  private async release(mine: string): Promise<void> {
    try {
      if ((await fsp.readFile(this.lockPath, 'utf8')) === mine) await fsp.unlink(this.lockPath);
      else this.log('leader election: the takeover lock was no longer ours at release');
    } catch {
      // gone
    }
  }

  /** Breaks the lock if its owner is dead or it is too old; true if it is (now) gone. */
  private async breakIfStale(): Promise<boolean> {
    let seen: string;
    let st: Stats;
    try {
      st = await fsp.lstat(this.lockPath);
      seen = await fsp.readFile(this.lockPath, 'utf8');
    } catch (e) {
      if (errCode(e) === 'ENOENT') return true;
      throw e;
    }
    const [pidText, , atText] = seen.trim().split(' ');
    const pid = Number(pidText);
    const at = Number(atText);
    const age = Date.now() - (Number.isFinite(at) ? at : st.mtimeMs);
    const deadOwner = Number.isInteger(pid) && pid !== process.pid && !pidAlive(pid);
    if (!deadOwner && age <= LOCK_STALE_MS) return false;
    const aside = `${this.lockPath}.stale.${token()}`;
    try {
      await fsp.rename(this.lockPath, aside);
    } catch (e) {
      if (errCode(e) === 'ENOENT') return true; // somebody else broke (or released) it
      throw e;
    }
    let got = '';
    try {
      got = await fsp.readFile(aside, 'utf8');
    } catch {
      // vanished: treat as broken
    }
    if (got !== '' && got !== seen) {
      // We moved a newer, live lock: put it back if its place is still free.
      try {
        await fsp.link(aside, this.lockPath);
      } catch {
        this.log('leader election: could not restore a takeover lock moved by mistake');
      }
      await unlinkQuiet(aside);
      return false;
    }
    await unlinkQuiet(aside);
    this.log(
      `leader election: broke a stale takeover lock (owner pid ${pidText}, ${deadOwner ? 'dead' : `${Math.round(age)} ms old`})`,
    );
    return true;
  }
}

/** A listening server at a private temporary path, ready to be linked into `<name>.sock`. */
interface Candidate {
  tmpPath: string;
  key: string;
  server: LeaderServer;
}

type Outcome = { done: true } | { done: false; delayMs: number };
const DONE: Outcome = { done: true };
const retryIn = (delayMs: number): Outcome => ({ done: false, delayMs });

export class LeaderElection {
  private readonly dirOption: string;
  private readonly name: string;
  private readonly retryMs: number;
  private readonly checkMs: number;
  private readonly connectTimeoutMs: number;
  private readonly commandTimeoutMs: number;
  private readonly log: Log;
  private readonly who: string | undefined;

  private dir: string | undefined;
  private _socketPath: string | undefined;
  private lock: TakeoverLock | undefined;
  private _role: Role = 'stopped';
  /** Bumped by start and stop: async work of an older generation gives up. */
  private generation = 0;
  private running = false;
  private starting: Promise<void> | undefined;
  private electing: Promise<void> | undefined;
  private electingGen = 0;
  private electTimer: NodeJS.Timeout | undefined;
  private watchTimer: NodeJS.Timeout | undefined;
  /** Ends the election loop's current pause early (stop). */
  private wake: (() => void) | undefined;
  private _server: LeaderServer | undefined;
  private serverKey: string | undefined;
  private _connection: FollowerConnection | undefined;

  private readonly leaderEmitter: Emitter<LeaderServer>;
  private readonly followerEmitter: Emitter<FollowerConnection>;
  private readonly roleEmitter: Emitter<Role>;

  constructor(opts: LeaderElectionOptions) {
    if (process.platform === 'win32') {
      throw new Error('leader election: Unix sockets in a private directory are not available on Windows');
    }
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(opts.name)) {
      throw new Error(
        `leader election: invalid name ${JSON.stringify(opts.name)} (use 1–64 of [A-Za-z0-9_-], e.g. a hash)`,
      );
    }
    this.dirOption = opts.dir;
    this.name = opts.name;
    this.retryMs = opts.retryMs ?? 1000;
    this.checkMs = opts.checkMs ?? 1000;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 2000;
    this.commandTimeoutMs = opts.commandTimeoutMs ?? 30_000;
    this.log = opts.log ?? (() => {});
    this.who = opts.who;
    this.leaderEmitter = new Emitter<LeaderServer>(this.log, 'onLeader listener');
    this.followerEmitter = new Emitter<FollowerConnection>(this.log, 'onFollower listener');
    this.roleEmitter = new Emitter<Role>(this.log, 'onRoleChange listener');
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
    return this._server;
  }

  /** The connection to the leader while follower (undefined between a leader's loss and the next election). */
  get connection(): FollowerConnection | undefined {
    return this._connection;
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
    const starting = this.doStart();
    this.starting = starting;
    const clear = () => {
      if (this.starting === starting) this.starting = undefined;
    };
    starting.then(clear, clear);
    return starting;
  }

  private async doStart(): Promise<void> {
    const dir = await ensurePrivateDir(this.dirOption);
    const socketPath = path.join(dir, `${this.name}.sock`);
    const longest = Math.max(Buffer.byteLength(socketPath), Buffer.byteLength(this.tmpSocketPath(dir)));
    if (longest > MAX_SOCKET_PATH_BYTES) {
      throw new Error(
        `leader election: socket paths under ${dir} would be longer than ${MAX_SOCKET_PATH_BYTES} bytes; use a shorter directory or name`,
      );
    }
    this.dir = dir;
    this._socketPath = socketPath;
    this.lock = new TakeoverLock(path.join(dir, `${this.name}.takeover`), this.log);
    this.running = true;
    const gen = ++this.generation;
    try {
      await this.elect(gen, true);
    } catch (e) {
      await this.stop();
      throw e;
    }
  }

  /** Gives up the role: a leader removes its socket (if still its own) and disconnects followers. */
  async stop(): Promise<void> {
    this.running = false;
    this.generation++;
    clearTimeout(this.electTimer);
    this.electTimer = undefined;
    this.wake?.();
    this.stopWatch();
    // Report 'stopped' before letting go, so no observer ever sees two leaders at once.
    this.setRole('stopped');
    const server = this._server;
    const key = this.serverKey;
    this._server = undefined;
    this.serverKey = undefined;
    if (server && key !== undefined) await this.relinquish(server, key);
    const conn = this._connection;
    this._connection = undefined;
    conn?.close();
    try {
      await this.electing;
    } catch {
      // the in-flight election cleans up after itself
    }
  }

  // ---- election ------------------------------------------------------------------------------

  private scheduleElection(delayMs: number): void {
    if (!this.running) return;
    clearTimeout(this.electTimer);
    const gen = this.generation;
    this.electTimer = setTimeout(() => {
      this.electTimer = undefined;
      // Neither leading nor following (an election still finishing may have settled it).
      const go = () => {
        if (gen !== this.generation || !this.running || this._server || this._connection) return;
        this.elect(gen, false).catch((e) => this.log(`leader election: ${(e as Error).message}`));
      };
      if (this.electing) this.electing.then(go, go);
      else go();
    }, delayMs);
  }

  /** Runs attempts until one decides; single flight per generation. */
  private elect(gen: number, throwErrors: boolean): Promise<void> {
    if (this.electing) {
      if (this.electingGen === gen) return this.electing;
      // One of an older generation is winding down (it gives up at its next step).
      const next = () => this.elect(gen, throwErrors);
      return this.electing.then(next, next);
    }
    this.electingGen = gen;
    const run = (async () => {
      let quick = 0;
      while (gen === this.generation && this.running) {
        let outcome: Outcome;
        try {
          outcome = await this.attempt(gen);
        } catch (e) {
          if (throwErrors) throw e;
          this.log(`leader election: attempt failed: ${(e as Error).message}; retrying in ${this.retryMs} ms`);
          outcome = retryIn(this.retryMs);
        }
        if (outcome.done) return;
        // Quick retries (lock busy, path changed under us) are bounded, then slow down.
        let delay = outcome.delayMs;
        if (delay < this.retryMs && ++quick > 50) delay = this.retryMs;
        await this.pause(delay);
      }
    })();
    this.electing = run;
    const clear = () => {
      if (this.electing === run) this.electing = undefined;
    };
    run.then(clear, clear);
    return run;
  }

  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private async attempt(gen: number): Promise<Outcome> {
    const socketPath = this._socketPath!;
    const cand = await this.candidate();
    let keep = false;
    try {
      if (gen !== this.generation) return DONE;
      if (await this.tryLink(cand)) {
        keep = await this.becomeLeader(gen, cand);
        return DONE;
      }
      const st = await lstatOrNull(socketPath);
      if (st === null) return retryIn(randomBetween(5, 25));
      const p = await probe(socketPath, this.connectTimeoutMs);
      if (p.kind === 'live') {
        this.becomeFollower(gen, p.socket);
        return DONE;
      }
      if (p.kind === 'gone') return retryIn(randomBetween(5, 25));
      if (p.kind === 'busy') {
        this.log(`leader election: the leader socket did not answer (${p.reason}); retrying in ${this.retryMs} ms`);
        return retryIn(this.retryMs);
      }
      const r = await this.takeover(gen, cand, fileKey(st));
      if (r.leader) keep = true;
      return r.outcome;
    } finally {
      if (!keep) await this.discard(cand);
    }
  }

  /** Takes over a dead leader's socket `staleKey`, under the takeover lock. */
  private async takeover(
    gen: number,
    cand: Candidate,
    staleKey: string,
  ): Promise<{ outcome: Outcome; leader: boolean }> {
    const socketPath = this._socketPath!;
    const lock = await this.lock!.acquire();
    if (!lock) return { outcome: retryIn(randomBetween(20, 60)), leader: false };
    try {
      if (gen !== this.generation) return { outcome: DONE, leader: false };
      const st = await lstatOrNull(socketPath);
      if (st === null) {
        if (await this.tryLink(cand)) return { outcome: DONE, leader: await this.becomeLeader(gen, cand) };
        return { outcome: retryIn(0), leader: false };
      }
      if (fileKey(st) !== staleKey) return { outcome: retryIn(0), leader: false }; // replaced: look again
      const p = await probe(socketPath, this.connectTimeoutMs);
      if (p.kind === 'live') {
        this.becomeFollower(gen, p.socket);
        return { outcome: DONE, leader: false };
      }
      if (p.kind === 'gone') return { outcome: retryIn(0), leader: false };
      if (p.kind === 'busy') return { outcome: retryIn(this.retryMs), leader: false };
      if (!(await this.removeIfSame(socketPath, staleKey))) return { outcome: retryIn(0), leader: false };
      this.log(`leader election: removed the dead leader's socket ${socketPath} (${p.code})`);
      if (await this.tryLink(cand)) return { outcome: DONE, leader: await this.becomeLeader(gen, cand) };
      return { outcome: retryIn(0), leader: false };
    } finally {
      await lock.release();
    }
  }

  /**
   * Removes `p` only if it is still the file `key`: renamed aside first (atomic), checked, and put
   * back if it turns out to be another file. True if `key` is gone.
   */
  private async removeIfSame(p: string, key: string): Promise<boolean> {
    const aside = `${p}.stale.${token()}`;
    try {
      await fsp.rename(p, aside);
    } catch (e) {
      if (errCode(e) === 'ENOENT') return true;
      throw e;
    }
    const st = await lstatOrNull(aside);
    if (st === null || fileKey(st) === key) {
      await unlinkQuiet(aside);
      return true;
    }
    try {
      await fsp.link(aside, p);
    } catch {
      this.log(`leader election: could not put back a socket moved by mistake at ${p}`);
    }
    await unlinkQuiet(aside);
    return false;
  }

  /** A listening server at a fresh temporary path. */
  private async candidate(): Promise<Candidate> {
    const raw = net.createServer();
    const server = new LeaderServer(raw, { log: this.log, ...(this.who ? { who: this.who } : {}) });
    for (let i = 0; ; i++) {
      const tmpPath = this.tmpSocketPath(this.dir!);
      try {
        await new Promise<void>((resolve, reject) => {
          raw.once('error', reject);
          raw.listen(tmpPath, () => {
            raw.removeListener('error', reject);
            resolve();
          });
        });
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

  /** `<dir>/.<pid><random>.s`: short, so that it fits wherever `<name>.sock` does. */
  private tmpSocketPath(dir: string): string {
    return path.join(dir, `.${process.pid.toString(36)}${token()}.s`);
  }

  /** `link(tmp, <name>.sock)`: true if the candidate now holds the path. */
  private async tryLink(cand: Candidate): Promise<boolean> {
    try {
      await fsp.link(cand.tmpPath, this._socketPath!);
    } catch (e) {
      if (errCode(e) === 'EEXIST') return false;
      throw e;
    }
    await unlinkQuiet(cand.tmpPath);
    return true;
  }

  private async discard(cand: Candidate): Promise<void> {
    // Closing unlinks the temporary path (libuv), never <name>.sock.
    await cand.server.close();
  }

  /** The candidate holds the path: lead, unless stopped meanwhile. Returns whether it kept it. */
  private async becomeLeader(gen: number, cand: Candidate): Promise<boolean> {
    if (gen !== this.generation || !this.running) {
      await this.relinquish(cand.server, cand.key);
      return true; // relinquish closed it
    }
    this._server = cand.server;
    this.serverKey = cand.key;
    this.log(`leader election: leader (pid ${process.pid}) at ${this._socketPath}`);
    this.startWatch();
    void this.sweepLeftovers();
    this.setRole('leader');
    this.leaderEmitter.fire(cand.server);
    return true;
  }

  private becomeFollower(gen: number, socket: net.Socket): void {
    if (gen !== this.generation || !this.running) {
      socket.destroy();
      return;
    }
    const conn = new FollowerConnection(socket, { log: this.log, commandTimeoutMs: this.commandTimeoutMs });
    this._connection = conn;
    conn.onClose(() => {
      if (this._connection !== conn) return;
      this._connection = undefined;
      if (gen !== this.generation || !this.running) return;
      this.log('leader election: lost the leader; electing again');
      this.scheduleElection(randomBetween(50, 250));
    });
    this.setRole('follower');
    this.followerEmitter.fire(conn);
  }

  /** Removes `<name>.sock` if it is still `key`, then closes the server. */
  private async relinquish(server: LeaderServer, key: string): Promise<void> {
    const socketPath = this._socketPath!;
    try {
      // Nobody else removes a live leader's socket, so it cannot change between check and unlink.
      // A server already closed (by its user) refuses connections: its file is left to the
      // takeover protocol, which may be removing it right now.
      const st = server.closed ? null : await lstatOrNull(socketPath);
      if (st !== null && fileKey(st) === key) await fsp.unlink(socketPath);
    } catch (e) {
      this.log(`leader election: could not remove ${socketPath}: ${(e as Error).message}`);
    }
    await server.close();
  }

  // ---- leader's watch --------------------------------------------------------------------------

  private startWatch(): void {
    this.stopWatch();
    const gen = this.generation;
    const tick = async () => {
      if (gen !== this.generation || this._role !== 'leader') return;
      let reason: string | null = null;
      try {
        const st = await lstatOrNull(this._socketPath!);
        if (st === null) reason = 'its socket path was removed';
        else if (fileKey(st) !== this.serverKey) reason = 'its socket path now refers to another socket';
      } catch (e) {
        this.log(`leader election: cannot check ${this._socketPath}: ${(e as Error).message}`);
      }
      if (gen !== this.generation || this._role !== 'leader') return;
      if (reason === null && this._server?.closed) reason = 'its server closed';
      if (reason !== null) {
        await this.stepDown(reason);
        return;
      }
      this.watchTimer = setTimeout(() => void tick(), this.checkMs);
    };
    this.watchTimer = setTimeout(() => void tick(), this.checkMs);
  }

  private stopWatch(): void {
    clearTimeout(this.watchTimer);
    this.watchTimer = undefined;
  }

  /** The path is no longer ours: stop leading (without touching the path) and elect again. */
  private async stepDown(reason: string): Promise<void> {
    this.log(`leader election: stepping down: ${reason}`);
    this.stopWatch();
    const server = this._server;
    this._server = undefined;
    this.serverKey = undefined;
    this.setRole('follower');
    await server?.close();
    this.scheduleElection(randomBetween(0, 100));
  }

  /** Removes temporary files left by candidates that died mid-step (best effort). */
  private async sweepLeftovers(): Promise<void> {
    const dir = this.dir!;
    try {
      const prefix = `${this.name}.`;
      for (const entry of await fsp.readdir(dir)) {
        const tmpSocket = /^\.[0-9a-z]+[0-9a-f]{8}\.s$/.test(entry);
        const ours = entry.startsWith(prefix) && (entry.endsWith('.tmp') || entry.includes('.stale.'));
        if (!tmpSocket && !ours) continue;
        const p = path.join(dir, entry);
        const st = await lstatOrNull(p);
        if (st && Date.now() - st.mtimeMs > LEFTOVER_MS) await unlinkQuiet(p);
      }
    } catch {
      // best effort
    }
  }

  private setRole(role: Role): void {
    if (this._role === role) return;
    this._role = role;
    this.log(`leader election: role ${role}`);
    this.roleEmitter.fire(role);
  }
}
