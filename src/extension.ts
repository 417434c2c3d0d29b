// The extension's entry point: wires the window's role (engine here, or following the
// window that runs it), the views, the commands and the settings. Activation never waits for
// the daemon: the connection starts in the background.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { registerCommands, VIEW_ID } from './commands/register';
import { readSettings, SECTION } from './config/settings';
import { firstRun as makeFirstRun, WALKTHROUGH_ID } from './host/firstRun';
import { WindowRole } from './host/windowRole';
import { TelemetryHost } from './host/telemetryHost';
import { JOURNAL_FILE } from './store/globalStateStore';
import { Countdown } from './views/countdown';
import { windowNotifier } from './views/notifier';
import { keepRecentLines } from './views/recentLog';
import { RecoveryStatusBar } from './views/statusBar';
import { errorText } from './util/errorText';
import { followViewState } from './views/viewState';
import { WatchTree } from './views/watchTree';
import type { Decision } from './model/decision';
import type { EngineSnapshot } from './model/snapshot';

let role: WindowRole | undefined;
let telemetry: TelemetryHost | undefined;
/** The performance measure of activate() (its marks: `.start`, `.end`), read by the activation bench. */
const MEASURE = 'codexGoalRecovery.activate';

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
  performance.mark(`${MEASURE}.start`);
  // Only what must exist when activate() returns: the log and the commands (a command the window
  // runs now must find its handler). The rest (settings, the window's role and its engine, the
  // views) starts on the next turn of the event loop, or at once when a command or the API needs
  // it first: nothing that comes early is lost.
  const log = keepRecentLines(vscode.window.createOutputChannel('Codex Goal Recovery', { log: true }));
  let window: ReturnType<typeof startWindow> | undefined;
  const started = () => (window ??= startWindow(context, log));
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
      choseWatchMode: () => started().choseWatchMode(),
    }),
  );
  performance.mark(`${MEASURE}.end`);
  const measure = performance.measure(MEASURE, `${MEASURE}.start`, `${MEASURE}.end`);
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
function startWindow(context: vscode.ExtensionContext, log: vscode.LogOutputChannel) {
  // Machine state is never synced; no preference lives in globalState.
  context.globalState.setKeysForSync([]);
  // globalState's own writes reach the disk only some time after they resolve (and in code-server
  // in the browser): the engine's crash journal sits beside it on this machine's disk.
  const journalPath =
    context.globalStorageUri.scheme === 'file' ? path.join(context.globalStorageUri.fsPath, JOURNAL_FILE) : undefined;
  // A fresh install observes (arms nothing) until the person chooses which goals to watch: docs/first-run.md.
  const firstRun = makeFirstRun({
    memento: context.globalState,
    explicitSetting: () => vscode.workspace.getConfiguration(SECTION).inspect('autoArm')?.globalValue !== undefined,
    openWalkthrough: () =>
      void vscode.commands.executeCommand(
        'workbench.action.openWalkthrough',
        `${context.extension.id}#${WALKTHROUGH_ID}`,
        false,
      ),
    log: (line) => log.info(line),
  });
  firstRun.start();
  let settings = firstRun.apply(readSettings());

  // "Show" on a burst's notification reveals the Watched goals view (VS Code's `<view>.focus`).
  const notifier = windowNotifier(() => settings.notifications, `${VIEW_ID}.focus`);
  const decided = new vscode.EventEmitter<Decision>();
  // The opt-in OpenTelemetry export of this window's engine's decisions (docs/telemetry.md).
  const exporter = new TelemetryHost(log);
  telemetry = exporter;
  exporter.apply(settings);
  const windowRole = new WindowRole(
    context,
    settings,
    {
      log,
      decided: (d) => {
        decided.fire(d);
        exporter.decided(d);
      },
      // Only in the window the leader picked: the focused one (whichever engine leads); one per burst.
      notify: (d, snap) => notifier.decided(d, snap),
      focus: {
        focused: () => vscode.window.state.focused,
        onDidChange: (listener) => {
          const subscription = vscode.window.onDidChangeWindowState((state) => listener(state.focused));
          return () => void subscription.dispose();
        },
      },
    },
    journalPath === undefined ? {} : { journalPath },
  );
  role = windowRole;
  // The settings read again, the first run's choice with them: what the engine runs with.
  const applySettings = (): Promise<void> => {
    firstRun.settingsChanged();
    settings = firstRun.apply(readSettings());
    exporter.apply(settings);
    return windowRole.applySettings(settings);
  };
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
      void applySettings();
      log.info('settings changed: applied');
    }),
  );
  windowRole.start();
  onChange();
  return {
    role: windowRole,
    decided,
    settings: () => settings,
    choseWatchMode: applySettings,
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
  // After the engine stopped: what it said while stopping goes out with the last try.
  await telemetry?.stop();
  telemetry = undefined;
}
