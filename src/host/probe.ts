// What Copy Diagnostics asks of the host: whether the daemon's socket passes the safety check
// the engine makes before it connects, and who leads (this window, or the engine it follows).
import { checkSocketSafety } from '../protocol/socketSafety';
import type { RecoveryService } from './service';

/** The socket check's result in words: "ok", "ok (resolves to …)", "missing: …", "refused: …". */
export async function socketCheck(socketPath: string): Promise<string> {
  const result = await checkSocketSafety(socketPath);
  if (result.ok) return result.resolved === socketPath ? 'ok' : `ok (resolves to ${result.resolved})`;
  return `${result.missing ? 'missing' : 'refused'}: ${result.reason}`;
}

/** Who leads, as the leader's welcome said it ("runner, pid 123"), or why that is not known. */
export function leaderOf(service: RecoveryService): string {
  if (service.role === 'leader') return 'this window';
  const by = service.leaderInfo?.() ?? null;
  if (!by) return 'not known yet (no engine has welcomed this window)';
  return by.who ? `${by.who}, pid ${by.pid}` : `pid ${by.pid}`;
}
