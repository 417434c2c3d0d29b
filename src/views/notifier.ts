// The window's side of the notifications (what is told, and when: notificationBurst.ts): VS Code's
// messages, commands and settings. Only in the window the leader picked (src/leader/notifyTarget.ts).
import * as vscode from 'vscode';
import { SECTION, type NotificationLevel } from '../config/settings';
import { BurstNotifier } from './notificationBurst';

/** The window's notifier: `showCommand` reveals the Watched goals view. */
export function windowNotifier(level: () => NotificationLevel, showCommand: string): BurstNotifier {
  return new BurstNotifier(
    {
      level,
      t: (message, ...args) => vscode.l10n.t(message, ...args),
      warn: (text, buttons) => vscode.window.showWarningMessage(text, ...buttons),
      info: (text) => void vscode.window.showInformationMessage(text),
      run: (command, arg) => void vscode.commands.executeCommand(command, ...(arg ? [arg] : [])),
      // "none" is the one value that stops these (`attention` and `all` both show them), for
      // this user on every workspace: the user's settings, not the workspace's.
      silence: () =>
        void vscode.workspace
          .getConfiguration(SECTION)
          .update('notifications', 'none', vscode.ConfigurationTarget.Global),
    },
    showCommand,
  );
}
