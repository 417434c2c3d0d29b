// Whether a daemon is running at an address, as `status` reports it: a connection is opened and
// closed at once, nothing is sent. A socket is checked for safety first (src/protocol/socketSafety.ts):
// nothing connects to one that is not the user's own.
import * as net from 'node:net';
import { checkSocketSafety } from './socketSafety';
import type { SharedTarget } from './transportContract';

/** `running`: something accepts connections there; `stopped`: nothing does; `unknown`: it cannot be told. */
export type DaemonPresence = { kind: 'running' | 'stopped' | 'unknown'; detail: string };

export async function probeDaemon(target: SharedTarget, timeoutMs = 2_000): Promise<DaemonPresence> {
  if (target.kind === 'socket') {
    const safety = await checkSocketSafety(target.path);
    if (!safety.ok) return { kind: safety.missing ? 'stopped' : 'unknown', detail: safety.reason };
    return connectOnce({ path: safety.resolved }, target.path, timeoutMs);
  }
  let u: URL;
  try {
    u = new URL(target.url);
  } catch {
    return { kind: 'unknown', detail: `not a URL: ${target.url}` };
  }
  const port = Number(u.port || (u.protocol === 'wss:' ? 443 : 80));
  return connectOnce({ host: u.hostname.replace(/^\[|\]$/g, ''), port }, target.url, timeoutMs);
}

function connectOnce(
  to: { path: string } | { host: string; port: number },
  shown: string,
  timeoutMs: number,
): Promise<DaemonPresence> {
  return new Promise((resolve) => {
    const socket = net.connect(to);
    const done = (presence: DaemonPresence) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(presence);
    };
    const timer = setTimeout(
      () => done({ kind: 'unknown', detail: `${shown} did not accept a connection within ${timeoutMs} ms` }),
      timeoutMs,
    );
    socket.once('connect', () => done({ kind: 'running', detail: `${shown} accepts connections` }));
    socket.once('error', (error: NodeJS.ErrnoException) => {
      const stopped = error.code === 'ECONNREFUSED' || error.code === 'ENOENT';
      done({
        kind: stopped ? 'stopped' : 'unknown',
        detail: stopped ? `nothing listens at ${shown}` : `${shown}: ${error.message}`,
      });
    });
  });
}
