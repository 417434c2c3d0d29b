// The daemon probe's sections (h) and (g) (test/measure/probe.ts): turn/interrupt during a
// running goal turn, and the rollout lines each kind of thread/goal/set writes.
import { sleep } from '../../src/demo/codexProcesses';
import { about, startThreadWithGoal, waitTurnCompleted } from '../../src/demo/goalThreads';
import { goalLines, lineTypes, order, out, type Probe, results, rolloutLines, section, tempCwd } from './probeKit';

/** (h) turn/interrupt during a running goal turn; returns the thread, its goal paused. */
export async function probeInterrupt(p: Probe): Promise<string> {
  const { a, mock } = p;
  section('(h) turn/interrupt during a running goal turn (mock: slow)');
  mock.setMode('slow', { delayMs: 20_000 });
  const t = await startThreadWithGoal(a, 'probe interrupt', { cwd: await tempCwd() });
  const ts = await a.waitFor(about(t.threadId, 'turn/started'), 15_000, t.goalSetSeq);
  await mock.waitForRequests(mock.requests + 0, 1000).catch(() => undefined);
  await sleep(500);
  const since = a.lastSeq;
  const reqBefore = mock.requests;
  const reply = await a.requestEntry('turn/interrupt', { threadId: t.threadId, turnId: ts.params.turn.id });
  await waitTurnCompleted(a, t.threadId, undefined, 15_000, since);
  await sleep(3000);
  const goal = (await a.request('thread/goal/get', { threadId: t.threadId })).goal;
  const thread = (await a.request('thread/read', { threadId: t.threadId })).thread;
  results.h = {
    reply: reply.result,
    order: order(a, t.threadId, since),
    goal: goal?.status,
    threadStatus: thread.status,
    newModelRequestsWithin3s: mock.requests - reqBefore,
    newTurnStarted: a.notifications.some(
      (n) => n.seq > since && n.method === 'turn/started' && n.params.threadId === t.threadId,
    ),
  };
  out(JSON.stringify(results.h, null, 1));
  return t.threadId;
}

/** (g) the rollout lines written by thread/goal/set (user paused, then automatic active). */
export async function probeGoalSetLines(p: Probe, pausedThread: string): Promise<void> {
  const { a, mock } = p;
  section('(g) rollout lines written by thread/goal/set (user paused, then automatic active)');
  const thread = (await a.request('thread/read', { threadId: pausedThread })).thread;
  const file: string = thread.path;
  const before = await rolloutLines(file);
  const since = a.lastSeq;
  const r = await a.request('thread/goal/set', { threadId: pausedThread, status: 'paused', origin: 'user' });
  await sleep(800);
  const afterPause = await rolloutLines(file);
  const pausedOrder = order(a, pausedThread, since);
  mock.setMode('goalComplete');
  const since2 = a.lastSeq;
  await a.request('thread/goal/set', { threadId: pausedThread, status: 'active', origin: 'automatic' });
  await a
    .waitFor(
      about(pausedThread, 'thread/goal/updated', (p) => p.goal?.status === 'complete'),
      30_000,
      since2,
    )
    .catch(() => undefined);
  await sleep(800);
  const afterAuto = await rolloutLines(file);
  const since3 = a.lastSeq;
  await a.request('thread/goal/set', { threadId: pausedThread, status: 'paused' });
  await sleep(800);
  const afterNoOrigin = await rolloutLines(file);
  const since4 = a.lastSeq;
  await a.request('thread/goal/set', {
    threadId: pausedThread,
    status: 'paused',
    objective: 'probe interrupt, reworded',
    origin: 'user',
  });
  await sleep(800);
  const afterUserObjective = await rolloutLines(file);
  results.g = {
    lineTypesLater: {
      noOriginPaused: lineTypes(afterNoOrigin.slice(afterAuto.length)),
      userPausedWithObjective: lineTypes(afterUserObjective.slice(afterNoOrigin.length)),
    },
    userObjectiveNewLines: afterUserObjective.slice(afterNoOrigin.length),
    userObjectiveNotifications: order(a, pausedThread, since4),
    path: file,
    reply: r.goal?.status,
    notifications: pausedOrder,
    userPausedNewLines: afterPause.slice(before.length),
    automaticActiveGoalLines: goalLines(afterAuto.slice(afterPause.length)).filter(
      (l) => !/"function_call_output"|source=\\"goal\\"/.test(l),
    ),
    lineTypes: {
      userPaused: lineTypes(afterPause.slice(before.length)),
      automaticActive: lineTypes(afterAuto.slice(afterPause.length)),
    },
    noOriginPausedNewLines: afterNoOrigin.slice(afterAuto.length),
    noOriginNotifications: order(a, pausedThread, since3),
  };
  out(`path: ${file}`);
  out('user paused → new rollout lines:');
  for (const l of results.g.userPausedNewLines) out('  ' + l);
  out('automatic active → goal-related new lines:');
  for (const l of results.g.automaticActiveGoalLines) out('  ' + l);
  out('no origin paused → new lines:');
  for (const l of results.g.noOriginPausedNewLines) out('  ' + l);
  out(`appended line types: ${JSON.stringify({ ...results.g.lineTypes, ...results.g.lineTypesLater })}`);
  out('user paused + objective (second user set) → new lines:');
  for (const l of results.g.userObjectiveNewLines) out('  ' + l);
}
