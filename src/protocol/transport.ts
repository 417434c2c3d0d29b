/**
 * Opening a connection to a Codex app-server: the daemon's Unix socket (WebSocket over it),
 * a ws:// URL, or a private `codex app-server` child on stdio.
 *
 * `openTransport` picks the way by the target; each way is a file of its own
 * (`sharedTransport.ts` for the socket and the URL, `stdioTransport.ts`), on the contract of
 * `transportContract.ts`.
 */
import { openSharedTransport } from './sharedTransport';
import { openStdio } from './stdioTransport';
import type { OpenTransportOptions, Transport, TransportTarget } from './transportContract';

export {
  TransportError,
  type OpenTransportOptions,
  type SharedTarget,
  type Transport,
  type TransportErrorCode,
  type TransportTarget,
} from './transportContract';

export async function openTransport(target: TransportTarget, opts: OpenTransportOptions = {}): Promise<Transport> {
  return target.kind === 'stdio' ? openStdio(target, opts) : openSharedTransport(target, opts);
}
