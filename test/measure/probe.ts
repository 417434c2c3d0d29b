/**
 * Re-measures the daemon facts recorded in docs/daemon-behaviour.md against the real `codex`
 * binary from node_modules and the project's mock model.
 *
 *   npx tsc -p . && node out/test/measure/probe.js [--json out.json] [--only a,b,c]
 *
 * Prints one section per question (a–j, plus `bin`: native binary vs shim) with the exact
 * notification order seen by the user client (~2 min; `i` alone ~70 s because of the 60 s
 * stop grace period). Starts its own mock model, CODEX_HOME and daemon and removes all of them at the end.
 */
//
// Its sections: probeSections.ts (d, a, b part 1, c, e), probeTurns.ts (h, g), probeRestarts.ts
// (b part 2, f, i), probeResume.ts (j); what they share, probeKit.ts.
import { writeFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import { startMockModel } from '../../src/demo/mockModel';
import { codexBinary, timeVersion } from '../../src/demo/codexBinary';
import { makeCodexHome } from '../../src/demo/codexHome';
import { killAllTracked, trackedAlive } from '../../src/demo/codexProcesses';
import { controlSocketPath, startDaemon, stopDaemon } from '../../src/demo/managedDaemon';
import { UserClient } from '../../src/demo/userClient';
import type { Json } from '../support/json';
import { jsonOut, measureBinaries, out, type Probe, results, section, tempDirs, want } from './probeKit';
import { probeResume } from './probeResume';
import { probeRestarts, probeInFlight } from './probeRestarts';
import {
  probeAutomaticSet,
  probeFailures,
  probeRateLimits,
  probeSecondConnection,
  probeTurnsAfterFailure,
} from './probeSections';
import { probeGoalSetLines, probeInterrupt } from './probeTurns';

async function main(): Promise<void> {
  const started = Date.now();
  const mock = await startMockModel();
  const home = await makeCodexHome(mock.url);
  const clients: UserClient<Json>[] = [];
  try {
    out(`# Probe: codex ${timeVersion(codexBinary()).out}, CODEX_HOME ${home.dir}, mock ${mock.url}`);

    if (want('bin')) {
      section('binary: native vs .bin shim');
      results.binary = await measureBinaries(home);
      out(JSON.stringify(results.binary, null, 1));
    }

    const t0 = Date.now();
    const report = await startDaemon(home.dir);
    out(`daemon start: ${Date.now() - t0} ms, ${JSON.stringify(report)}`);
    const a = await UserClient.overSocket<Json>(controlSocketPath(home.dir), { name: 'probe-user-a' });
    clients.push(a);

    const p: Probe = { a, mock, home, clients };

    if (want('d')) await probeRateLimits(p);
    const cases = want('a') || want('b') || want('c') || want('f') ? await probeFailures(p) : {};
    const failedThread = cases.http500?.threadId;
    if (failedThread && want('b')) await probeTurnsAfterFailure(p, failedThread);
    const blockedThread = cases.dropStream?.threadId;
    if (blockedThread && want('c')) await probeAutomaticSet(p, blockedThread);
    if (want('e')) await probeSecondConnection(p);
    const pausedThread = want('h') || want('g') ? await probeInterrupt(p) : undefined;
    if (pausedThread && want('g')) await probeGoalSetLines(p, pausedThread);
    if (failedThread && (want('b') || want('f'))) await probeRestarts(p, failedThread);
    if (want('i')) await probeInFlight(p);

    if (want('j')) {
      section('(j) thread/resume {excludeTurns:true} from a second, fresh connection on a loaded thread');
      results.j = await probeResume(home, mock, clients);
    }

    results.totalMs = Date.now() - started;
    out('');
    out(`total ${results.totalMs} ms`);
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    await stopDaemon(home.dir).catch(() => undefined);
    await home.cleanup();
    await mock.close();
    await killAllTracked();
    for (const d of tempDirs) await fs.rm(d, { recursive: true, force: true });
    const left = trackedAlive();
    if (left.length) out(`LEFT RUNNING: ${JSON.stringify(left)}`);
    if (jsonOut) writeFileSync(jsonOut, JSON.stringify(results, null, 2));
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`probe failed: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exitCode = 1;
});
