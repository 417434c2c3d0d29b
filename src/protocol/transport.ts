/**
 * Opening a connection to a Codex app-server by its target: the daemon's Unix socket or a ws://
 * URL (`sharedTransport.ts`), or a private `codex app-server` child on stdio (`stdioTransport.ts`).
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
