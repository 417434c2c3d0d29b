// What the UI suites that watch goals start from: a private temp folder, a real Codex daemon with
// the project's mock model (DaemonLab), and a code-server window with this repository's extension
// in development, pointed at that daemon (notifications off unless a test sets them).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DaemonLab } from '../../support/daemonLab';
import { makeTempDir, removeTempDir } from '../cleanup';
import { REPO_ROOT } from '../paths';
import { Workbench } from './workbench';

export interface LabWindow {
  temp: string;
  lab: DaemonLab;
  wb: Workbench;
  /** Closes the window (code-server and the browser), then the daemon, then the temp folder. */
  close(): Promise<void>;
}

export async function openLabWindow(prefix: string, settings: Record<string, unknown>, args?: string[]): Promise<LabWindow> {
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
      settings: { 'codexGoalRecovery.codexHome': started.home.dir, 'codexGoalRecovery.notifications': 'none', ...settings },
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
