/**
 * Opening a connection to a Codex app-server: the daemon's Unix socket (WebSocket over it),
 * a ws:// URL, or a private `codex app-server` child on stdio.
 *
 * `openTransport` picks the way by the target; each way is a file of its own
 * (`webSocketTransport.ts`, `stdioTransport.ts`), on the contract of `transportContract.ts`.
 */
import { checkSocketSafety, checkWsUrl } from './socketSafety';
import { openStdio } from './stdioTransport';
import { TransportError, type OpenTransportOptions, type Transport, type TransportTarget } from './transportContract';
import { openWebSocket } from './webSocketTransport';

export {
  TransportError,
  type OpenTransportOptions,
  type Transport,
  type TransportErrorCode,
  type TransportTarget,
} from './transportContract';

export async function openTransport(target: TransportTarget, opts: OpenTransportOptions = {}): Promise<Transport> {
  switch (target.kind) {
    case 'socket': {
      const safety = await checkSocketSafety(target.path);
      if (!safety.ok) throw new TransportError(safety.missing ? 'missing' : 'unsafe', safety.reason);
      // Always the root path `/`: never `/daemon/shutdown`.
      const address = `ws+unix://${safety.resolved}:/`;
      return openWebSocket(address, `Codex daemon socket ${safety.resolved}`, opts, true);
    }
    case 'url': {
      const check = checkWsUrl(target.url, target.allowRemote ?? false);
      if (!check.ok) throw new TransportError('unsafe', check.reason);
      return openWebSocket(target.url, target.url, opts, false);
    }
    case 'stdio':
      return openStdio(target, opts);
    default: {
      const never: never = target;
      throw new TransportError('refused', `unknown transport target ${JSON.stringify(never)}`);
    }
  }
}
