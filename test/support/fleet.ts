// Many threads on the fake daemon, and failures told the way the real daemon tells them:
// shared by the engine's unit tests and the benchmarks.
import { FakeDaemon, testGoal, testTurn } from './fakeDaemon';

/** The real daemon's order: goal blocked and systemError first, then the final error and turn/completed(failed). */
export function failByEvents(d: FakeDaemon, id: string, turnId: string, codexErrorInfo: unknown = 'internalServerError'): void {
  const t = d.thread(id);
  t.goal = testGoal(id, 'blocked');
  t.turn = testTurn(turnId, 'failed', codexErrorInfo);
  t.status = { type: 'systemError' };
  d.notify('thread/goal/updated', { threadId: id, turnId, goal: t.goal });
  d.notify('thread/status/changed', { threadId: id, status: t.status });
  d.notify('error', { threadId: id, turnId, willRetry: false, error: t.turn.error });
  d.notify('turn/completed', { threadId: id, turn: t.turn });
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
