// What the UI suites that watch goals start from: a private temp folder, a real Codex daemon with
// the project's mock model (DaemonLab), and a code-server window with this repository's extension
// in development, pointed at that daemon (notifications off unless a test sets them).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DaemonLab } from '../../support/daemonLab';
import { makeTempDir, removeTempDir } from '../cleanup';
import { extensionLogLines, sleep } from '../exthost';
import { REPO_ROOT } from '../paths';
import { Workbench } from './workbench';

export interface LabWindow {
  temp: string;
  lab: DaemonLab;
  wb: Workbench;
  /** Closes the window (code-server and the browser), then the daemon, then the temp folder. */
  close(): Promise<void>;
}

export async function openLabWindow(
  prefix: string,
  settings: Record<string, unknown>,
  args?: string[],
  /** The window's size (default: Workbench.open's). */
  viewport?: { width: number; height: number },
): Promise<LabWindow> {
  const temp = makeTempDir(prefix);
  let lab: DaemonLab | null = null;
  try {
    const folder = path.join(temp, 'project');
    fs.mkdirSync(folder);
    lab = await DaemonLab.start();
    const started = lab;
    const wb = await Workbench.open({
      extensionDevelopmentPath: REPO_ROOT,
      folder,
      ...(args ? { args } : {}),
      ...(viewport ? { viewport } : {}),
      settings: {
        'codexGoalRecovery.codexHome': started.home.dir,
        'codexGoalRecovery.notifications': 'none',
        ...settings,
      },
    });
    return {
      temp,
      lab: started,
      wb,
      close: async () => {
        await wb.close();
        await started.close();
        removeTempDir(temp);
      },
    };
  } catch (error) {
    await lab?.close().catch(() => undefined);
    removeTempDir(temp);
    throw error;
  }
}

/** Resolves once the wall clock is past `at`. */
export async function sleepUntil(at: number): Promise<void> {
  for (let left = at - Date.now(); left > 0; left = at - Date.now()) await sleep(left);
}

/** The line the Refresh command logs once the engine's look is done (src/commands/register.ts). */
const REFRESH_DONE = /refresh: done/;

/**
 * The positive wait before a "nothing happened" check, from outside the extension hosts: the
 * wall clock is past `at` (a due time: a set never leaves before it), then "Refresh", run in
 * `wb`, has finished: the engine (that window's, or the leader's it sent the command to) looked at
 * every thread the daemon has loaded again, each after the work already queued for it, as the
 * line the command logs once it is done says. Whatever the engine was going to do by `at` is done.
 */
export async function engineLookedAfter(wb: Workbench, at: number, timeoutMs = 60_000): Promise<void> {
  await sleepUntil(at + 500);
  const done = () => extensionLogLines(wb.server.userDataDir).filter((l) => REFRESH_DONE.test(l)).length;
  const before = done();
  await wb.runCommand('Codex Goal Recovery: Refresh');
  const deadline = Date.now() + timeoutMs;
  while (done() <= before) {
    if (Date.now() > deadline)
      throw new Error(
        `Refresh did not finish within ${timeoutMs} ms (no new "refresh: done" line in the extension's log)`,
      );
    await sleep(50);
  }
}
