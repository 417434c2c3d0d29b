// What follows the state beside the tree's rows: the view's badge (goals that wait for a person),
// its message (why nothing is retried now), and the context keys that show the palette's commands
// only when they apply (package.json `menus.commandPalette`): Pause or Resume, Start Codex daemon,
// and the thread commands some row offers. Set again at every change, but sent only when they change.
import * as vscode from 'vscode';
import type { EngineSnapshot } from '../model/snapshot';
import { canPauseGoal, canRetryNow, isDisarmed } from '../model/queries';
import { attentionBadge } from './rowText';

/**
 * The first run observes until the person chooses which goals to watch (docs/first-run.md): said while
 * the engine that leads arms nothing by itself (a runner that leads arms as its flags say).
 */
function observing(snap: EngineSnapshot, waitingForChoice: boolean): boolean {
  return waitingForChoice && snap.policy?.autoArm === false;
}

/**
 * The text above the rows: why nothing is retried now (no daemon, or paused by you), or that the first
 * run waits for the person's choice; none otherwise.
 */
export function viewMessage(snap: EngineSnapshot, waitingForChoice = false): string | undefined {
  if (snap.connection.kind === 'disconnected') return vscode.l10n.t('Not connected: {0}', snap.connection.detail);
  if (snap.connection.kind === 'unresponsive') return snap.connection.detail;
  if (snap.pausedAt !== null) return vscode.l10n.t('Auto-recovery is paused: nothing is retried until you resume it.');
  if (observing(snap, waitingForChoice))
    return vscode.l10n.t('Observing: no goal is watched until you choose which goals to watch.');
  return undefined;
}

/**
 * Context key → the pause, the connection and the first run (observing: the welcome view; the choice of
 * which goals to watch made, or never asked for: the walkthrough's second step is done), for the palette
 * and the views.
 */
export function stateKeys(snap: EngineSnapshot, waitingForChoice = false): Record<string, boolean> {
  return {
    'codexGoalRecovery.paused': snap.pausedAt !== null,
    'codexGoalRecovery.connected': snap.connection.kind === 'connected',
    'codexGoalRecovery.noDaemon': snap.connection.kind === 'disconnected',
    'codexGoalRecovery.observing': observing(snap, waitingForChoice),
    'codexGoalRecovery.watchModeChosen': !waitingForChoice,
  };
}

/** Context key → whether some watched thread offers that command. */
export function threadCommandKeys(snap: EngineSnapshot): Record<string, boolean> {
  const some = (f: (w: EngineSnapshot['watches'][number]) => boolean) => snap.watches.some(f);
  return {
    'codexGoalRecovery.canRetry': some(canRetryNow),
    'codexGoalRecovery.canPauseGoal': some(canPauseGoal),
    'codexGoalRecovery.canWatch': some((w) => w.state.kind === 'notAdopted'),
    'codexGoalRecovery.canDisarm': some((w) => !isDisarmed(w.state)),
    'codexGoalRecovery.canRearm': some((w) => isDisarmed(w.state)),
    'codexGoalRecovery.hasRollout': some((w) => w.rolloutPath !== null),
  };
}

/** Keeps the view's badge, its message and the palette's context keys in step with the service's state. */
export function followViewState(
  view: vscode.TreeView<unknown>,
  service: () => { snapshot(): EngineSnapshot },
  onDidChange: (listener: () => void) => { dispose(): void },
  /** Whether the first run waits for the person's choice of which goals to watch. */
  waitingForChoice: () => boolean,
): vscode.Disposable {
  const sent = new Map<string, boolean>();
  let badge: string | undefined;
  const update = () => {
    const snap = service().snapshot();
    const next = attentionBadge(snap);
    const key = next ? `${next.value}` : undefined;
    if (key !== badge) {
      badge = key;
      view.badge = next;
    }
    const waiting = waitingForChoice();
    const message = viewMessage(snap, waiting);
    if (message !== view.message) view.message = message;
    for (const [k, v] of Object.entries({ ...stateKeys(snap, waiting), ...threadCommandKeys(snap) })) {
      if (sent.get(k) === v) continue;
      sent.set(k, v);
      void vscode.commands.executeCommand('setContext', k, v);
    }
  };
  const subscription = onDidChange(update);
  update();
  return { dispose: () => subscription.dispose() };
}
