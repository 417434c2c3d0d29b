// What follows the state beside the tree's rows: the view's badge (goals that wait for a person)
// and the context keys that show the palette's thread commands only when some row offers them
// (package.json `menus.commandPalette`). Set again at every change, but sent only when they change.
import * as vscode from 'vscode';
import type { EngineSnapshot } from '../model/snapshot';
import { canPauseGoal, canRetryNow, isDisarmed } from '../model/watch';
import { attentionBadge } from './rowText';

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

/** Keeps the view's badge and the palette's context keys in step with the service's state. */
export function followViewState(
  view: vscode.TreeView<unknown>,
  service: () => { snapshot(): EngineSnapshot },
  onDidChange: (listener: () => void) => { dispose(): void },
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
    for (const [k, v] of Object.entries(threadCommandKeys(snap))) {
      if (sent.get(k) === v) continue;
      sent.set(k, v);
      void vscode.commands.executeCommand('setContext', k, v);
    }
  };
  const subscription = onDidChange(update);
  update();
  return { dispose: () => subscription.dispose() };
}
