// Notifications only where they earn it: a goal that gives up or needs attention (with
// Retry now / Open rollout), and, when the setting asks for it, routine recoveries.
import * as vscode from 'vscode';
import type { NotificationLevel } from '../config/settings';
import type { Decision } from '../model/decision';
import type { EngineSnapshot } from '../model/snapshot';
import { canRetryNow } from '../model/watch';

export class Notifier {
  constructor(private readonly level: () => NotificationLevel) {}

  decided(d: Decision, snap: EngineSnapshot): void {
    const level = this.level();
    if (level === 'none') return;
    const title = (threadId: string) => snap.watches.find((w) => w.threadId === threadId)?.title ?? threadId;
    if (d.type === 'gave-up' || d.type === 'attention') {
      const text =
        d.type === 'gave-up'
          ? `Codex Goal Recovery gave up on "${title(d.threadId)}" after ${d.attempts} tries.`
          : `"${title(d.threadId)}" needs attention: ${d.reason}`;
      const w = snap.watches.find((x) => x.threadId === d.threadId);
      const actions = d.type === 'gave-up' || (w && canRetryNow(w)) ? ['Retry now', 'Open rollout'] : ['Open rollout'];
      void vscode.window.showWarningMessage(text, ...actions).then((choice) => {
        if (choice === 'Retry now')
          void vscode.commands.executeCommand('codexGoalRecovery.retryNow', { threadId: d.threadId });
        if (choice === 'Open rollout')
          void vscode.commands.executeCommand('codexGoalRecovery.openRollout', { threadId: d.threadId });
      });
    } else if (d.type === 'recovered' && level === 'all') {
      void vscode.window.showInformationMessage(
        `Codex Goal Recovery re-activated "${title(d.threadId)}" (attempt ${d.attempt}).`,
      );
    }
  }
}
