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
          ? vscode.l10n.t('Codex Goal Recovery gave up on "{0}" after {1} tries.', title(d.threadId), d.attempts)
          : vscode.l10n.t('"{0}" needs attention: {1}', title(d.threadId), d.reason);
      const w = snap.watches.find((x) => x.threadId === d.threadId);
      const retry = vscode.l10n.t('Retry now');
      const open = vscode.l10n.t('Open rollout');
      const actions = d.type === 'gave-up' || (w && canRetryNow(w)) ? [retry, open] : [open];
      void vscode.window.showWarningMessage(text, ...actions).then((choice) => {
        if (choice === retry)
          void vscode.commands.executeCommand('codexGoalRecovery.retryNow', { threadId: d.threadId });
        if (choice === open)
          void vscode.commands.executeCommand('codexGoalRecovery.openRollout', { threadId: d.threadId });
      });
    } else if (d.type === 'recovered' && level === 'all') {
      void vscode.window.showInformationMessage(
        vscode.l10n.t('Codex Goal Recovery re-activated "{0}" (attempt {1}).', title(d.threadId), d.attempt),
      );
    }
  }
}
