// The extension's entry point: wires the window's role (engine here, or following the
// window that runs it), the views, the commands and the settings. Activation never waits for
// the daemon: the connection starts in the background.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { registerCommands, VIEW_ID } from './commands/register';
import { explicitlySet } from './config/firstRun';
import { readSettings, SECTION, type Settings } from './config/settings';
import { FirstRun, WALKTHROUGH_ID } from './host/firstRun';
import { WindowRole } from './host/windowRole';
import { JOURNAL_FILE } from './store/globalStateStore';
import { Countdown } from './views/countdown';
import { Notifier } from './views/notifier';
import { keepRecentLines } from './views/recentLog';
import { RecoveryStatusBar } from './views/statusBar';
import { errorText } from './util/errorText';
import { followViewState } from './views/viewState';
import { WatchTree } from './views/watchTree';
import type { Decision } from './model/decision';
import type { EngineSnapshot } from './model/snapshot';

let role: WindowRole | undefined;

/** What the extension offers other extensions and its tests: the state it shows, and how. */
export interface CodexGoalRecoveryApi {
  snapshot(): EngineSnapshot;
  role(): 'leader' | 'follower';
  /** The tree's top-level rows as rendered now. */
  rows(): { threadId: string; label: string; description: string; contextValue: string; icon: string }[];
  onDidChange(listener: () => void): vscode.Disposable;
  /** Every decision this window's engine announces (once it is durable); none while it follows. */
  onDidDecide(listener: (decision: Decision) => void): vscode.Disposable;
  /**
   * What the Refresh command does, awaited and not swallowed: resolves once the engine (this
   * window's, or the leader's) has looked at every loaded thread again, after the work already
   * queued for each; rejects if it could not.
   */
  refresh(): Promise<void>;
}

export function activate(context: vscode.ExtensionContext): CodexGoalRecoveryApi {
  performance.mark('codexGoalRecovery.activate.start');
  // Only what must exist when activate() returns: the log and the commands (a command the window
  // runs now must find its handler). The rest (settings, the window's role and its engine, the
  // views) starts on the next turn of the event loop, or at once when a command or the API needs
  // it first: nothing that comes early is lost.
  const log = keepRecentLines(vscode.window.createOutputChannel('Codex Goal Recovery', { log: true }));
  let window: StartedWindow | undefined;
  const started = (): StartedWindow => (window ??= startWindow(context, log));
  const service = () => started().role.service();
  const later = setImmediate(() => {
    try {
      started();
    } catch (error) {
      log.error(`could not start: ${errorText(error)}`);
    }
  });
  context.subscriptions.push(
    log,
    { dispose: () => clearImmediate(later) },
    ...registerCommands({
      service,
      settings: () => started().settings(),
      log,
      choseWatchMode: (autoArm) => started().choseWatchMode(autoArm),
    }),
  );
  performance.mark('codexGoalRecovery.activate.end');
  const measure = performance.measure(
    'codexGoalRecovery.activate',
    'codexGoalRecovery.activate.start',
    'codexGoalRecovery.activate.end',
  );
  const { version } = context.extension.packageJSON as { version?: unknown };
  log.info(`activated in ${measure.duration.toFixed(1)} ms (version ${String(version)})`);
  return {
    snapshot: () => service().snapshot(),
    role: () => service().role,
    rows: () => started().rows(),
    onDidChange: (listener) => started().role.onDidChange(listener),
    onDidDecide: (listener) => started().decided.event(listener),
    refresh: () => service().run('refresh'),
  };
}

/** The window once started: its role (and through it the engine), its views and its settings. */
interface StartedWindow {
  role: WindowRole;
  decided: vscode.EventEmitter<Decision>;
  settings(): Settings;
  rows(): ReturnType<CodexGoalRecoveryApi['rows']>;
  /** The person chose which goals to watch (the setting is written): the engine follows it at once. */
  choseWatchMode(autoArm: boolean): Promise<void>;
}

function startWindow(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): StartedWindow {
  // Machine state is never synced; no preference lives in globalState.
  context.globalState.setKeysForSync([]);
  // globalState's own writes reach the disk only some time after they resolve (and in code-server
  // in the browser): the engine's crash journal sits beside it on this machine's disk.
  const journalPath =
    context.globalStorageUri.scheme === 'file' ? path.join(context.globalStorageUri.fsPath, JOURNAL_FILE) : undefined;
  // A fresh install observes (arms nothing) until the person chooses which goals to watch: docs/first-run.md.
  const firstRun = new FirstRun({
    memento: context.globalState,
    explicitSetting: () => explicitlySet(vscode.workspace.getConfiguration(SECTION).inspect('autoArm')),
    journalExists: () => journalPath !== undefined && fs.existsSync(journalPath),
    openWalkthrough: () =>
      void vscode.commands.executeCommand(
        'workbench.action.openWalkthrough',
        `${context.extension.id}#${WALKTHROUGH_ID}`,
        false,
      ),
    setContext: (key, value) => void vscode.commands.executeCommand('setContext', key, value),
    log: (line) => log.info(line),
  });
  firstRun.start();
  let settings = firstRun.apply(readSettings());

  // "Show" on a burst's notification reveals the Watched goals view (VS Code's `<view>.focus`).
  const notifier = new Notifier(() => settings.notifications, `${VIEW_ID}.focus`);
  const decided = new vscode.EventEmitter<Decision>();
  const windowRole = new WindowRole(
    context,
    settings,
    {
      log,
      decided: (d) => decided.fire(d),
      // Only in the window the leader picked: the focused one (whichever engine leads); one per burst.
      notify: (d, snap) => notifier.decided(d, snap),
      focus: {
        focused: () => vscode.window.state.focused,
        onDidChange: (listener) => {
          const subscription = vscode.window.onDidChangeWindowState((state) => listener(state.focused));
          return () => {
            subscription.dispose();
          };
        },
      },
    },
    journalPath === undefined ? {} : { journalPath },
  );
  role = windowRole;
  const service = () => windowRole.service();

  const tree = new WatchTree(() => service().snapshot());
  const view = vscode.window.createTreeView(VIEW_ID, { treeDataProvider: tree, showCollapseAll: true });
  const status = new RecoveryStatusBar(`${VIEW_ID}.focus`);
  const countdown = new Countdown();

  const onChange = () => {
    tree.refresh();
    countdown.set(status.render(service().snapshot()));
  };

  context.subscriptions.push(
    decided,
    notifier,
    view,
    tree,
    status,
    countdown,
    countdown.onTick(onChange),
    followViewState(
      view,
      service,
      (listener) => windowRole.onDidChange(listener),
      () => firstRun.mode() === 'observe',
    ),
    windowRole.onDidChange(onChange),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration(SECTION)) return;
      firstRun.settingsChanged();
      settings = firstRun.apply(readSettings());
      log.info('settings changed: applied');
      void role?.applySettings(settings);
    }),
  );
  windowRole.start();
  onChange();
  return {
    role: windowRole,
    decided,
    settings: () => settings,
    choseWatchMode: async (autoArm) => {
      await firstRun.chose();
      // The value just chosen, whether or not this window's configuration has caught up with the write yet.
      const next = readSettings();
      settings = { ...next, options: { ...next.options, autoArm } };
      await windowRole.applySettings(settings);
    },
    rows: () =>
      tree.getChildren().map((node) => {
        const item = tree.getTreeItem(node);
        return {
          threadId: node.threadId,
          label: typeof item.label === 'string' ? item.label : (item.label?.label ?? ''),
          description: typeof item.description === 'string' ? item.description : '',
          contextValue: item.contextValue ?? '',
          icon: item.iconPath instanceof vscode.ThemeIcon ? item.iconPath.id : '',
        };
      }),
  };
}

export async function deactivate(): Promise<void> {
  await role?.dispose();
  role = undefined;
}
