/**
 * Safety checks before talking to a Codex app-server endpoint.
 *
 * The daemon's control socket gives full control over the user's Codex threads, so we only
 * connect to a socket that the current user owns, inside a directory nobody else can write to
 * (otherwise another user could have planted or swapped it). Symlinks are resolved first.
 */
import { errCode } from '../util/errno';
import { promises as fsp, type Stats } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as net from 'node:net';

export type SocketSafetyResult = { ok: true; resolved: string } | { ok: false; reason: string; missing?: boolean };

export type UrlCheckResult = { ok: true } | { ok: false; reason: string };

const no = (reason: string) => ({ ok: false, reason }) as const;

/** The path a client must never connect to (it stops the daemon). */
export const DAEMON_SHUTDOWN_PATH = '/daemon/shutdown';

const START_HINT = 'start one with `codex app-server daemon start`';

/** `$CODEX_HOME`, or `~/.codex`. */
export function defaultCodexHome(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.CODEX_HOME?.trim();
  if (home) return path.resolve(home);
  const userHome = env.HOME?.trim() || os.homedir();
  return path.join(userHome, '.codex');
}

/** `<codexHome>/app-server-control/app-server-control.sock`. */
export function defaultSocketPath(codexHome: string = defaultCodexHome()): string {
  return path.join(codexHome, 'app-server-control', 'app-server-control.sock');
}

function modeString(st: Stats): string {
  return `0${(st.mode & 0o7777).toString(8).padStart(3, '0')}`;
}

/**
 * Resolves `socketPath` and checks that it is a Unix socket owned by the current user and not
 * writable by others, in a directory owned by the current user that is not group- or
 * world-writable. Never throws.
 */
export async function checkSocketSafety(socketPath: string): Promise<SocketSafetyResult> {
  const abs = path.resolve(socketPath);
  const missing = (what: string): SocketSafetyResult => ({
    ok: false,
    missing: true,
    reason: `no Codex daemon socket at ${what} (${START_HINT})`,
  });
  let resolved: string;
  try {
    resolved = await fsp.realpath(abs);
  } catch (e) {
    const code = errCode(e);
    if (code !== 'ENOENT' && code !== 'ENOTDIR')
      return no(`cannot resolve Codex daemon socket path ${abs}: ${(e as Error).message}`);
    const dangling = await fsp.lstat(abs).then(
      (st) => st.isSymbolicLink(),
      () => false, // nothing at all
    );
    return missing(dangling ? `${abs} (${abs} is a symbolic link to a path that does not exist)` : abs);
  }
  const shown = resolved === abs ? abs : `${abs} (-> ${resolved})`;

  let st: Stats;
  try {
    st = await fsp.stat(resolved);
  } catch (e) {
    if (errCode(e) === 'ENOENT') return missing(shown);
    return no(`cannot stat Codex daemon socket ${shown}: ${(e as Error).message}`);
  }
  if (!st.isSocket()) return no(`refusing ${shown}: it is not a Unix socket; remove it and ${START_HINT}`);
  const refuse = (why: string) => no(`refusing Codex daemon socket ${shown}: ${why}`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid)
    return refuse(
      `it is owned by uid ${st.uid}, not by you (uid ${uid}); use a CODEX_HOME of your own and ${START_HINT}`,
    );
  if ((st.mode & 0o002) !== 0)
    return refuse(
      `it is writable by others (mode ${modeString(st)}), so any local user could drive your Codex threads ` +
        `through it; fix it with \`chmod o-w ${resolved}\` or restart the daemon`,
    );

  const dir = path.dirname(resolved);
  let dst: Stats;
  try {
    dst = await fsp.stat(dir);
  } catch (e) {
    return no(`cannot stat the directory ${dir} of Codex daemon socket ${shown}: ${(e as Error).message}`);
  }
  if (uid !== undefined && dst.uid !== uid)
    return refuse(
      `its directory ${dir} is owned by uid ${dst.uid}, not by you (uid ${uid}); use a CODEX_HOME of your own and ${START_HINT}`,
    );
  if ((dst.mode & 0o022) !== 0)
    return refuse(
      `its directory ${dir} is writable by group or others (mode ${modeString(dst)}); fix it with \`chmod go-w ${dir}\` (0700 recommended)`,
    );
  return { ok: true, resolved };
}

/** True for 127.0.0.0/8, ::1 (and IPv4-mapped loopback), and `localhost`. */
export function isLoopbackHost(hostname: string): boolean {
  let h = hostname.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  if (h === 'localhost') return true;
  if (net.isIPv4(h)) return h.startsWith('127.');
  if (net.isIPv6(h)) {
    if (h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
    // IPv4-mapped loopback: ::ffff:127.x.y.z, or the hex form WHATWG URL normalizes it to.
    const dotted = /^(?:0{0,4}:){0,5}:?ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    if (dotted) return net.isIPv4(dotted[1]) && dotted[1].startsWith('127.');
    const hex = /^(?:0{0,4}:){0,5}:?ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}$/.exec(h);
    if (hex) return parseInt(hex[1], 16) >> 8 === 127;
  }
  return false;
}

/** Accepts only ws:// or wss:// URLs to a loopback host, and never the daemon's shutdown path. */
export function checkWsUrl(url: string): UrlCheckResult {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return no(`invalid app-server URL ${JSON.stringify(url)}: expected ws://127.0.0.1:PORT`);
  }
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:')
    return no(
      `unsupported app-server URL scheme ${JSON.stringify(u.protocol)} in ${url}: only ws:// and wss:// are supported`,
    );
  if (!u.hostname) return no(`app-server URL ${url} has no host`);
  // Compared as a server that merges slashes would route it: `//daemon//shutdown/` too.
  const p = u.pathname.replace(/\/{2,}/g, '/').replace(/\/+$/, '');
  if (p === DAEMON_SHUTDOWN_PATH)
    return no(`refusing app-server URL ${url}: ${DAEMON_SHUTDOWN_PATH} would stop the daemon`);
  if (!isLoopbackHost(u.hostname))
    return no(
      `refusing non-loopback app-server URL ${url}: host ${u.hostname} is not 127.0.0.0/8, ::1 or localhost ` +
        `(the app-server has no authentication, so only a daemon on this machine is reached; for one on ` +
        `another machine, run the runner there, or forward its port: ssh -L PORT:127.0.0.1:PORT HOST)`,
    );
  return { ok: true };
}
