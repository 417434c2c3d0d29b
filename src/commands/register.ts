// Every command of the extension, registered in one place. Commands that change recovery go
// to the service (this window's engine, or the leader's); the rest act locally.
import { spawn } from 'node:child_process';
import * as vscode from 'vscode';
import { SECTION, type Settings } from '../config/settings';
import type { RecoveryService, ServiceCommand } from '../host/service';
import { type Watch } from '../model/watch';
import { canPauseGoal, canRetryNow, isDisarmed } from '../model/queries';
import { diagnostics, EXTENSION_ID, newIssueUrl } from './diagnostics';
import { pickThread } from './pickThread';
import { errorText } from '../util/errorText';

export const VIEW_ID = 'codexGoalRecovery.watchedGoals';

export interface CommandContext {
  service: () => RecoveryService;
  settings: () => Settings;
  log: vscode.LogOutputChannel;
  /** The person chose which goals to watch (the setting is written): the window applies its settings at once. */
  choseWatchMode: () => Promise<void>;
}

const threadCommands: {
  id: string;
  /** What it does with the thread: a command of the service, or the window's own work. */
  command: ServiceCommand | ((w: Watch) => Promise<void>);
  title: () => string;
  applies: (w: Watch) => boolean;
  /** Shown as the view's progress while it runs (a retry may load the thread first). */
  progress?: true;
}[] = [
  {
    id: 'codexGoalRecovery.pauseGoal',
    command: 'pauseGoal',
    title: () => vscode.l10n.t('Pause goal'),
    applies: canPauseGoal,
  },
  {
    id: 'codexGoalRecovery.watchGoal',
    command: 'arm',
    title: () => vscode.l10n.t('Watch this goal'),
    applies: (w) => w.state.kind === 'notAdopted',
  },
  {
    id: 'codexGoalRecovery.disarmThread',
    command: 'disarm',
    title: () => vscode.l10n.t('Disarm thread'),
    applies: (w) => !isDisarmed(w.state),
  },
  {
    id: 'codexGoalRecovery.rearmThread',
    command: 'rearm',
    title: () => vscode.l10n.t('Re-arm thread'),
    applies: (w) => isDisarmed(w.state),
  },
  {
    id: 'codexGoalRecovery.retryNow',
    command: 'retryNow',
    title: () => vscode.l10n.t('Retry now'),
    applies: canRetryNow,
    progress: true,
  },
  {
    id: 'codexGoalRecovery.openRollout',
    command: async (w) => {
      if (w.rolloutPath) await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(w.rolloutPath));
    },
    title: () => vscode.l10n.t('Open rollout'),
    applies: (w) => w.rolloutPath !== null,
  },
];

/** Work that takes a while, shown as the tree view's progress bar. */
function inView<T>(title: string, work: () => Promise<T>): Thenable<T> {
  return vscode.window.withProgress({ location: { viewId: VIEW_ID }, title }, work);
}

export function registerCommands(ctx: CommandContext): vscode.Disposable[] {
  const run = async (label: string, work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      const message = errorText(error);
      ctx.log.error(`${label}: ${message}`);
      const showLog = vscode.l10n.t('Show log');
      void vscode.window
        .showErrorMessage(vscode.l10n.t('Codex Goal Recovery: {0} failed: {1}', label, message), showLog)
        .then((a) => a && ctx.log.show());
    }
  };
  const d: vscode.Disposable[] = [];
  const reg = (id: string, fn: (...args: unknown[]) => unknown) => d.push(vscode.commands.registerCommand(id, fn));

  reg('codexGoalRecovery.pauseAutoRecovery', () =>
    run(vscode.l10n.t('Pause auto-recovery'), () => ctx.service().run('pauseAll')),
  );
  reg('codexGoalRecovery.resumeAutoRecovery', () =>
    run(vscode.l10n.t('Resume auto-recovery'), () => ctx.service().run('resumeAll')),
  );
  reg('codexGoalRecovery.refresh', () =>
    run(vscode.l10n.t('Refresh'), async () => {
      await inView(vscode.l10n.t('Refreshing'), () => ctx.service().run('refresh'));
      ctx.log.info('refresh: done (every thread the daemon has loaded was looked at again)');
    }),
  );
  reg('codexGoalRecovery.showLog', () => ctx.log.show());
  reg('codexGoalRecovery.openSettings', () =>
    vscode.commands.executeCommand('workbench.action.openSettings', 'codexGoalRecovery'),
  );
  reg('codexGoalRecovery.copyDiagnostics', () =>
    run(vscode.l10n.t('Copy diagnostics'), async () => {
      const text = await diagnostics(ctx.service(), ctx.settings(), ctx.log);
      await vscode.env.clipboard.writeText(text);
      ctx.log.info('diagnostics copied to the clipboard');
      const issue = newIssueUrl(vscode.extensions.getExtension(EXTENSION_ID)?.packageJSON);
      const report = vscode.l10n.t('Report an Issue…');
      // Not awaited: the command is done once the report is on the clipboard.
      void vscode.window
        .showInformationMessage(
          vscode.l10n.t(
            'Codex Goal Recovery: diagnostics copied to the clipboard. Look them over before you share them.',
          ),
          ...(issue ? [report] : []),
        )
        .then((answer) =>
          answer === report && issue ? vscode.env.openExternal(vscode.Uri.parse(issue, true)) : undefined,
        );
    }),
  );
  for (const c of threadCommands) {
    reg(c.id, (arg) =>
      run(c.title(), async () => {
        const w = await pickThread(arg, ctx.service().snapshot(), c.title(), c.applies);
        if (!w) return;
        const { command } = c;
        const work = () => (typeof command === 'string' ? ctx.service().run(command, w.threadId) : command(w));
        await (c.progress ? inView(vscode.l10n.t('{0}: {1}', c.title(), w.title), work) : work());
      }),
    );
  }
  reg('codexGoalRecovery.resetState', () =>
    run(vscode.l10n.t('Reset state'), async () => {
      const reset = vscode.l10n.t('Reset');
      const answer = await vscode.window.showWarningMessage(
        vscode.l10n.t(
          'Reset Codex Goal Recovery? It forgets every watched thread, its history and your disarm and pause markers. Codex goals themselves are not changed.',
        ),
        { modal: true },
        reset,
      );
      if (answer === reset) await inView(vscode.l10n.t('Resetting'), () => ctx.service().run('reset'));
    }),
  );
  // The walkthrough's choice of which goals to watch (docs/first-run.md): `autoArm` written as the
  // user's setting (machine-scoped: in a remote window, the remote machine's, where the engine reads
  // it), then the window's settings applied at once (the settings change applies them too, in every
  // window, but a value equal to the default may not be told as a change).
  for (const [id, autoArm, title] of [
    ['codexGoalRecovery.watchEveryGoal', true, vscode.l10n.t('Watch every goal')],
    ['codexGoalRecovery.watchPickedGoals', false, vscode.l10n.t('Watch only the goals I pick')],
  ] as const)
    reg(id, () =>
      run(title, async () => {
        await vscode.workspace.getConfiguration(SECTION).update('autoArm', autoArm, vscode.ConfigurationTarget.Global);
        await ctx.choseWatchMode();
        ctx.log.info(`watch mode chosen: autoArm ${autoArm}`);
      }),
    );
  reg('codexGoalRecovery.startDaemon', () =>
    run(vscode.l10n.t('Start Codex daemon'), async () => {
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('Starting the Codex daemon…') },
        () => startDaemon(ctx),
      );
    }),
  );
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
    const add = (b: Buffer) => (out += b.toString());
    child.stdout.on('data', add);
    child.stderr.on('data', add);
    child.once('error', (e) =>
      reject(
        new Error(vscode.l10n.t('could not run "{0}": {1} (set codexGoalRecovery.codexPath)', s.codexPath, e.message)),
      ),
    );
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${out.trim().slice(0, 500)}`)),
    );
  });
  ctx.log.info(`daemon: ${output.trim()}`);
  void vscode.window.showInformationMessage(vscode.l10n.t('Codex daemon started.'));
  await ctx.service().run('refresh');
}
