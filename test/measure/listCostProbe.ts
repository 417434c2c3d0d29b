/**
 * What the look at the whole Codex home costs: `thread/list` through the daemon with many
 * threads that another Codex app (a private stdio app-server on the same home) owns, against
 * one `thread/goal/get` per thread. Recorded in docs/daemon-behaviour.md (k).
 *
 *   npx tsc -p . && node out/test/measure/listCostProbe.js [--threads 200] [--codex pinned|latest]
 *
 * Starts its own mock model, CODEX_HOME, daemon and private app-server, and removes them at the end.
 */
import { performance } from 'node:perf_hooks';
import { startAppServerStdio } from '../../src/demo/appServerStdio';
import { codexBuilds } from '../../src/demo/codexBinary';
import { makeCodexHome } from '../../src/demo/codexHome';
import { killAllTracked, stopProcessGroup } from '../../src/demo/codexProcesses';
import { startThreadWithGoal, waitGoalStatus } from '../../src/demo/goalThreads';
import { controlSocketPath, startDaemon } from '../../src/demo/managedDaemon';
import { startMockModel } from '../../src/demo/mockModel';
import { UserClient } from '../../src/demo/userClient';
import type { Json } from '../support/json';

const args = process.argv.slice(2);
const opt = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const count = Number(opt('--threads', '200'));
const build = codexBuilds().find((b) => b.name === opt('--codex', 'pinned')) ?? codexBuilds()[0];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function timed(work: () => Promise<unknown>, runs = 5): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await work();
    ms.push(performance.now() - t0);
  }
  return Math.round(median(ms) * 10) / 10;
}

async function main(): Promise<void> {
  const mock = await startMockModel();
  const home = await makeCodexHome(mock.url, '', { codex: build });
  await startDaemon(home.dir);
  const owner = startAppServerStdio(home.dir);
  const client = await UserClient.overStdio<Json>(owner, { name: 'other-codex-app' });
  const daemon = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: 'probe' });
  try {
    mock.setMode('goalComplete');
    const ids: string[] = [];
    const t0 = performance.now();
    for (let i = 0; i < count; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, count - i) }, (_, k) =>
          startThreadWithGoal(client, `list cost ${i + k}`, { timeoutMs: 60_000 }),
        ),
      );
      await Promise.all(batch.map((t) => waitGoalStatus(client, t.threadId, 'complete', 60_000, t.goalSetSeq)));
      ids.push(...batch.map((t) => t.threadId));
    }
    process.stdout.write(`codex ${build.version}: ${count} threads made in ${Math.round(performance.now() - t0)} ms\n`);
    const listAll = async (extra: Record<string, unknown>, limit: number) => {
      let cursor: string | null = null;
      let n = 0;
      do {
        const page: Json = await daemon.request('thread/list', {
          sortKey: 'updated_at',
          sortDirection: 'desc',
          limit,
          sourceKinds: ['cli', 'vscode', 'exec', 'appServer', 'unknown'],
          ...extra,
          ...(cursor ? { cursor } : {}),
        });
        n += (page.data as unknown[]).length;
        cursor = (page.nextCursor as string | null) ?? null;
      } while (cursor);
      return n;
    };
    const listed = await listAll({}, 100);
    const rows: [string, number][] = [
      [`thread/list, every page of 100 (${listed} threads)`, await timed(() => listAll({}, 100))],
      ['the same, useStateDbOnly', await timed(() => listAll({ useStateDbOnly: true }, 100))],
      ['thread/list, first page of 25 only', await timed(() => daemon.request('thread/list', { limit: 25 }))],
      [
        `thread/goal/get of every thread, one after another (${ids.length})`,
        await timed(async () => {
          for (const id of ids) await daemon.request('thread/goal/get', { threadId: id });
        }, 3),
      ],
    ];
    for (const [what, ms] of rows) process.stdout.write(`  ${what}: ${ms} ms (median)\n`);
  } finally {
    await daemon.close().catch(() => undefined);
    await client.close().catch(() => undefined);
    await stopProcessGroup(owner);
    await home.cleanup();
    await mock.close();
    await killAllTracked();
  }
}

void main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exitCode = 1;
});
