// Many threads on the fake daemon, and failures told the way the real daemon tells them:
// shared by the engine's unit tests and the benchmarks.
import { FakeDaemon, testTurn } from './fakeDaemon';

/** The failure of turn `turnId`, told as the real daemon tells it (`FakeDaemon.failWithEvents`); the goal blocks. */
export function failByEvents(
  d: FakeDaemon,
  id: string,
  turnId: string,
  codexErrorInfo: unknown = 'internalServerError',
): void {
  d.thread(id).turn.id = turnId;
  d.failWithEvents(id, { codexErrorInfo, goal: 'blocked' });
}

/** `n` loaded threads whose goals are active and whose turns are running: a healthy fleet. */
export function healthyFleet(dir: string, n: number): { daemon: FakeDaemon; ids: string[] } {
  const daemon = new FakeDaemon(dir);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = `thread-${String(i).padStart(5, '0')}`;
    const t = daemon.addThread(id, 'active', testTurn('turn-1', 'inProgress'));
    t.status = { type: 'active', activeFlags: [] };
    ids.push(id);
  }
  return { daemon, ids };
}

/**
 * Each thread on a provider of its own: no two goals share an outage (src/core/outage.ts), so
 * their due recoveries meet only the global limiter, as goals on different providers do.
 */
export function ownProviders(d: FakeDaemon, ids: readonly string[]): void {
  for (const id of ids) d.thread(id).modelProvider = `provider-of-${id}`;
}
