// Measures what VS Code's globalState keeps when the extension host dies by SIGKILL during a
// backoff (docs/globalstate-durability.md has the results and how to read them).
//
//   npm run pretest --silent && node out/test/vscode/measure/globalStateDurability.js \
//       [--runs 5] [--delays 0,200,1000,3000] [--mode exthost|window] [--json FILE]
//
// One real Codex daemon, the mock model, one code-server + Chromium window with this repository
// loaded as the development extension (base delay 10 s). Each run: a new goal whose turn fails
// (HTTP 500); when the extension logs `backoff` for it, wait the run's delay, then
//   --mode exthost: SIGKILL the extension host (its PID found by walking code-server's process
//                   tree from the process group this script started);
//   --mode window:  the same, and at the same moment crash the window's renderer (CDP
//                   Page.crash): the whole VS Code window is gone, as in a crash of the app.
// Then read what the workbench's storage (IndexedDB) holds for the watch, reload the window (a new
// extension host, as a person would), and read what the restarted extension loaded (its
// `state loaded` log line), what its tree shows, and from the daemon's own rollout how often the
// goal was re-activated automatically after the failed turn once the model is healthy again.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { waitGoalStatus } from '../../../src/demo/goalThreads';
import { type UserClient } from '../../../src/demo/userClient';
import { DaemonLab } from '../../support/daemonLab';
import { readRolloutGoals } from '../../support/rolloutGoals';
import { ARTIFACTS_DIR } from '../paths';
import {
  extensionLogFiles,
  killHard,
  newExtensionLogLines,
  readStoredGlobalState,
  sleep,
  storedWatch,
  type StoredWatch,
  waitForExtensionHost,
  waitForLogLine,
} from '../exthost';
import { REPO_ROOT } from '../paths';
import { Workbench } from '../ui/workbench';
import type { Json } from '../../support/json';

const EXTENSION_ID = 'codex-goal-recovery.codex-goal-recovery';
const STATUS = 'codex-goal-recovery.status';
const T = 90_000;
const verbose = process.env.CGR_VSCODE_VERBOSE === '1' || process.env.CGR_MEASURE_VERBOSE === '1';
const step = (what: string): void => {
  if (verbose) console.error(`${new Date().toISOString()} ${what}`);
};

interface Args {
  runs: number;
  delays: number[];
  mode: 'exthost' | 'window';
  json: string | null;
}

function parseArgs(argv: string[]): Args {
  const out: Args = { runs: 5, delays: [200, 1000, 3000], mode: 'exthost', json: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = argv[i + 1];
    if (a === '--runs' && v) {
      out.runs = Number(v);
      i++;
    } else if (a === '--delays' && v) {
      out.delays = v.split(',').map(Number);
      i++;
    } else if (a === '--mode' && (v === 'exthost' || v === 'window')) {
      out.mode = v;
      i++;
    } else if (a === '--json' && v) {
      out.json = v;
      i++;
    } else throw new Error(`unknown argument ${a}`);
  }
  return out;
}

type WatchView = StoredWatch;

/** The watch of `threadId` in a stored globalState value, in brief. */
const watchIn = storedWatch;

function brief(w: WatchView | null): string {
  if (!w) return 'missing';
  return w.kind === 'backoff' ? `backoff a${w.attempt} f${w.failures}` : `${w.kind} f${w.failures}`;
}

interface Run {
  run: number;
  delayMs: number;
  /** From the backoff line being seen to the kill. */
  killedAfterMs: number;
  /** From the backoff line being seen until IndexedDB held the backoff (before the kill), or null. */
  idbLagMs: number | null;
  /** What IndexedDB held for the watch right after the kill, and 1 s later. */
  idbAtKill: string;
  idbLater: string;
  /** Whether the stored watch is the announced backoff (same failed turn, due time and attempt). */
  idbIsAnnounced: boolean;
  /** The restarted extension's tree row for the thread, as first shown. */
  rowAfterRestart: string;
  /**
   * `backoff` lines the restarted extension logged for the same failed turn: 0 when it resumed the
   * stored backoff, 1 when it had lost it and decided it again (a new due time).
   */
  backoffAgain: number;
  /** The restarted extension's "state loaded" line, if it logs one. */
  loadedLine: string | null;
  automaticAfterFailure: number;
  goalStatus: string;
  reloadMs: number;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const lab = await DaemonLab.start();
  const user: UserClient<Json> = await lab.user();
  const wb = await Workbench.open({
    extensionDevelopmentPath: REPO_ROOT,
    settings: {
      'codexGoalRecovery.codexHome': lab.home.dir,
      'codexGoalRecovery.baseDelaySeconds': 10,
      'codexGoalRecovery.maxDelaySeconds': 10,
      'codexGoalRecovery.notifications': 'none',
      // The shipped default, explicit: a fresh profile observes until a person chooses (docs/first-run.md).
      'codexGoalRecovery.autoArm': true,
    },
  });
  const runs: Run[] = [];
  try {
    await wb.waitForStatusBarText(STATUS, (t) => /watched/.test(t), T);
    let n = 0;
    for (let r = 0; r < args.runs; r++) {
      for (const delayMs of args.delays) {
        n += 1;
        const run = await oneRun(n, delayMs, args.mode, lab, user, wb);
        runs.push(run);
        console.log(JSON.stringify(run));
      }
    }
  } finally {
    await wb.close();
    await lab.close();
  }
  console.log(`\nmode ${args.mode}: ${runs.length} runs`);
  console.log(
    'delay ms | killed after ms | IDB lag ms | IDB at kill | IDB 1 s later | announced kept | row after restart | backoff decided again | automatic | goal',
  );
  for (const r of runs) {
    console.log(
      `${r.delayMs} | ${r.killedAfterMs} | ${r.idbLagMs ?? '-'} | ${r.idbAtKill} | ${r.idbLater} | ${r.idbIsAnnounced} | ${r.rowAfterRestart} | ${r.backoffAgain} | ${r.automaticAfterFailure} | ${r.goalStatus}`,
    );
  }
  const lags = runs
    .map((r) => r.idbLagMs)
    .filter((x): x is number => x !== null)
    .sort((a, b) => a - b);
  if (lags.length > 0)
    console.log(
      `IndexedDB lag after the backoff line: min ${lags[0]} ms, median ${lags[Math.floor(lags.length / 2)]} ms, max ${lags.at(-1)} ms (n=${lags.length})`,
    );
  const kept = runs.filter((r) => r.idbIsAnnounced).length;
  console.log(
    `announced backoff in globalState after the kill: ${kept}/${runs.length}; resumed by the restarted extension (not decided again): ${runs.filter((r) => r.backoffAgain === 0).length}/${runs.length}; recovered exactly once: ${runs.filter((r) => r.automaticAfterFailure === 1).length}/${runs.length}`,
  );
  const file = args.json ?? path.join(ARTIFACTS_DIR, `globalstate-durability-${args.mode}.json`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(runs, null, 2));
  console.log(`written ${file}`);
}

async function oneRun(
  n: number,
  delayMs: number,
  mode: Args['mode'],
  lab: DaemonLab,
  user: UserClient<Json>,
  wb: Workbench,
): Promise<Run> {
  const host = await waitForExtensionHost(wb.server.pgid, T);
  lab.mock.setMode('http500');
  const t = await lab.goal(`durability run ${n}`);
  const seen = await waitForLogLine(wb.server.userDataDir, new RegExp(`backoff ${t.threadId}:`), T, 5);
  const announced = /on turn (\S+); attempt (\d+) in .* \(at (\S+)\)$/.exec(seen.line);
  // Until the kill: how long IndexedDB takes to hold the backoff.
  let idbLagMs: number | null = null;
  const killAt = seen.seenAt + delayMs;
  while (Date.now() < killAt - 15 && idbLagMs === null) {
    const w = watchIn(await readStoredGlobalState(wb.page, EXTENSION_ID), t.threadId);
    if (w?.kind === 'backoff') idbLagMs = Date.now() - seen.seenAt;
    else await sleep(5);
  }
  await sleep(Math.max(0, killAt - Date.now()));
  const crash = mode === 'window' ? await wb.page.context().newCDPSession(wb.page) : null;
  const killedAfterMs = Date.now() - seen.seenAt;
  // Page.crash never answers (its target is gone): not awaited.
  void crash?.send('Page.crash').catch(() => undefined);
  await killHard(host);
  step(`killed ${host} ${killedAfterMs} ms after the backoff line`);
  let idbAtKill: WatchView | null;
  let idbLater: WatchView | null;
  if (mode === 'window') {
    // The renderer is gone: read the storage from a fresh page of the same origin and profile.
    const probe = await wb.page.context().newPage();
    await probe.goto(`${wb.server.origin}/healthz`);
    idbAtKill = watchIn(await readStoredGlobalState(probe, EXTENSION_ID), t.threadId);
    await sleep(1000);
    idbLater = watchIn(await readStoredGlobalState(probe, EXTENSION_ID), t.threadId);
    await probe.close();
  } else {
    idbAtKill = watchIn(await readStoredGlobalState(wb.page, EXTENSION_ID), t.threadId);
    await sleep(1000);
    idbLater = watchIn(await readStoredGlobalState(wb.page, EXTENSION_ID), t.threadId);
  }
  const idbIsAnnounced =
    !!announced &&
    idbLater?.kind === 'backoff' &&
    idbLater.failedTurnId === announced[1] &&
    idbLater.attempt === Number(announced[2]) &&
    idbLater.dueAt === Date.parse(announced[3]);
  // The model is healthy again: the recovery (if any) completes the goal.
  lab.mock.setMode('goalComplete');
  step(`stored: ${brief(idbAtKill)}, then ${brief(idbLater)}; reloading`);
  const filesBefore = extensionLogFiles(wb.server.userDataDir);
  const reloadStart = Date.now();
  if (mode === 'window') await wb.reopenCrashed(T);
  else await wb.reload(T);
  await waitForExtensionHost(wb.server.pgid, T, [host]);
  await wb.waitForStatusBarText(STATUS, (x) => /watched|retry in|recover/.test(x), T);
  const reloadMs = Date.now() - reloadStart;
  step(`reloaded in ${reloadMs} ms`);
  await wb.openViewContainer('Codex Goal Recovery');
  const rows = await wb.waitForTreeRows('Watched goals', (r) => r.some((x) => x.startsWith(`durability run ${n},`)), T);
  const rowAfterRestart = rows.find((x) => x.startsWith(`durability run ${n},`))!.slice(`durability run ${n}, `.length);
  // The restarted extension host logs to a file of its own.
  const newLines = () => newExtensionLogLines(wb.server.userDataDir, filesBefore);
  const loadedLine = newLines().find((l) => /state loaded/.test(l)) ?? null;
  let goalStatus: string;
  try {
    await waitGoalStatus(user, t.threadId, 'complete', 60_000, t.goalSetSeq);
    goalStatus = 'complete';
  } catch {
    goalStatus = String((await user.request('thread/goal/get', { threadId: t.threadId }, T)).goal?.status);
  }
  const goals = readRolloutGoals(String(t.thread.path));
  const failedTurn = announced?.[1] ?? null;
  const backoffAgain = newLines().filter(
    (l) => l.includes(`backoff ${t.threadId}:`) && failedTurn !== null && l.includes(`on turn ${failedTurn};`),
  ).length;
  const automaticAfterFailure = goals.automatic.filter(
    (a) => failedTurn !== null && goals.turns.indexOf(a.afterTurn ?? '') >= goals.turns.indexOf(failedTurn),
  ).length;
  return {
    run: n,
    delayMs,
    killedAfterMs,
    idbLagMs,
    idbAtKill: brief(idbAtKill),
    idbLater: brief(idbLater),
    idbIsAnnounced,
    rowAfterRestart,
    backoffAgain,
    loadedLine: loadedLine ? loadedLine.replace(/^.*state loaded/, 'state loaded') : null,
    automaticAfterFailure,
    goalStatus,
    reloadMs,
  };
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
