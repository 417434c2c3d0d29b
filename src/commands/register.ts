// Every command of the extension, registered in one place. Commands that change recovery go
// to the service (this window's engine, or the leader's); the rest act locally.
import { spawn } from 'node:child_process';
import * as vscode from 'vscode';
import type { Settings } from '../config/settings';
import type { RecoveryService, ServiceCommand } from '../host/service';
import { canPauseGoal, canRetryNow, isDisarmed, type WatchedThread } from '../model/watch';
import { pickThread } from './pickThread';
import { errorText } from '../util/errorText';

export const VIEW_ID = 'codexGoalRecovery.watchedGoals';

export interface CommandContext {
  service: () => RecoveryService;
  settings: () => Settings;
  log: vscode.LogOutputChannel;
}

const threadCommands: { id: string; command: ServiceCommand; title: string; applies: (w: WatchedThread) => boolean }[] =
  [
    { id: 'codexGoalRecovery.pauseGoal', command: 'pauseGoal', title: 'Pause goal', applies: canPauseGoal },
    {
      id: 'codexGoalRecovery.watchGoal',
      command: 'arm',
      title: 'Watch this goal',
      applies: (w) => w.state.kind === 'notAdopted',
    },
    {
      id: 'codexGoalRecovery.disarmThread',
      command: 'disarm',
      title: 'Disarm thread',
      applies: (w) => !isDisarmed(w.state),
    },
    {
      id: 'codexGoalRecovery.rearmThread',
      command: 'rearm',
      title: 'Re-arm thread',
      applies: (w) => isDisarmed(w.state),
    },
    { id: 'codexGoalRecovery.retryNow', command: 'retryNow', title: 'Retry now', applies: canRetryNow },
  ];

export function registerCommands(ctx: CommandContext): vscode.Disposable[] {
  const run = async (label: string, work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      const message = errorText(error);
      ctx.log.error(`${label}: ${message}`);
      void vscode.window
        .showErrorMessage(`Codex Goal Recovery: ${label} failed: ${message}`, 'Show log')
        .then((a) => a && ctx.log.show());
    }
  };
  const d: vscode.Disposable[] = [];
  const reg = (id: string, fn: (...args: unknown[]) => unknown) => d.push(vscode.commands.registerCommand(id, fn));

  reg('codexGoalRecovery.pauseAutoRecovery', () => run('Pause auto-recovery', () => ctx.service().run('pauseAll')));
  reg('codexGoalRecovery.resumeAutoRecovery', () => run('Resume auto-recovery', () => ctx.service().run('resumeAll')));
  reg('codexGoalRecovery.refresh', () =>
    run('Refresh', async () => {
      await ctx.service().run('refresh');
      ctx.log.info('refresh: done (every thread the daemon has loaded was looked at again)');
    }),
  );
  reg('codexGoalRecovery.showLog', () => ctx.log.show());
  for (const c of threadCommands) {
    reg(c.id, (arg) =>
      run(c.title, async () => {
        const w = await pickThread(arg, ctx.service().snapshot(), c.title, c.applies);
        if (w) await ctx.service().run(c.command, w.threadId);
      }),
    );
  }
  reg('codexGoalRecovery.openRollout', (arg) =>
    run('Open rollout', async () => {
      const w = await pickThread(arg, ctx.service().snapshot(), 'Open rollout', (x) => x.rolloutPath !== null);
      if (!w?.rolloutPath) return;
      await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(w.rolloutPath));
    }),
  );
  reg('codexGoalRecovery.resetState', () =>
    run('Reset state', async () => {
      const answer = await vscode.window.showWarningMessage(
        'Reset Codex Goal Recovery? It forgets every watched thread, its history and your disarm and pause markers. Codex goals themselves are not changed.',
        { modal: true },
        'Reset',
      );
      if (answer === 'Reset') await ctx.service().run('reset');
    }),
  );
  reg('codexGoalRecovery.startDaemon', () => run('Start Codex daemon', () => startDaemon(ctx)));
  return d;
}

/** `codex app-server daemon start`, with the machine-scoped executable and Codex home. */
async function startDaemon(ctx: CommandContext): Promise<void> {
  const s = ctx.settings();
  ctx.log.info(`starting the Codex daemon: ${s.codexPath} app-server daemon start (CODEX_HOME=${s.codexHome})`);
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(s.codexPath, ['app-server', 'daemon', 'start'], {
      env: { ...process.env, CODEX_HOME: s.codexHome },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.once('error', (e) =>
      reject(new Error(`could not run "${s.codexPath}": ${e.message} (set codexGoalRecovery.codexPath)`)),
    );
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${out.trim().slice(0, 500)}`)),
    );
  });
  ctx.log.info(`daemon: ${output.trim()}`);
  void vscode.window.showInformationMessage('Codex daemon started.');
  await ctx.service().run('refresh');
}
