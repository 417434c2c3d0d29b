/**
 * The ways to a Codex app-server that can be shared (the daemon's Unix socket, WebSocket over it;
 * a ws:// URL on loopback), each checked before it is opened. `transport.ts` adds the private child
 * on stdio; the extension, which only ever connects to a shared daemon, opens its connection here,
 * so the stdio way's code stays out of its bundle.
 */
import { checkSocketSafety, checkWsUrl } from './socketSafety';
import { TransportError, type OpenTransportOptions, type SharedTarget, type Transport } from './transportContract';
import { openWebSocket } from './webSocketTransport';

export async function openSharedTransport(target: SharedTarget, opts: OpenTransportOptions = {}): Promise<Transport> {
  if (target.kind === 'socket') {
    const safety = await checkSocketSafety(target.path);
    if (!safety.ok) throw new TransportError(safety.missing ? 'missing' : 'unsafe', safety.reason);
    // Always the root path `/`: never `/daemon/shutdown`.
    return openWebSocket(`ws+unix://${safety.resolved}:/`, `Codex daemon socket ${safety.resolved}`, opts, true);
  }
  const check = checkWsUrl(target.url);
  if (!check.ok) throw new TransportError('unsafe', check.reason);
  return openWebSocket(target.url, target.url, opts, false);
}
