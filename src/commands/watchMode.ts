// The walkthrough's choice of which goals to watch: every goal that becomes active, or only the
// goals the person picks ("Watch this goal" on a row). Either writes `codexGoalRecovery.autoArm`
// as the user's setting (machine-scoped: in a remote window, the remote machine's, where the
// engine reads it) and applies it at once; the first run stops observing (docs/first-run.md).
import * as vscode from 'vscode';
import { SECTION } from '../config/settings';

export const WATCH_EVERY_GOAL = 'codexGoalRecovery.watchEveryGoal';
export const WATCH_PICKED_GOALS = 'codexGoalRecovery.watchPickedGoals';

/** Writes the setting, then hands the choice to the window (`chose`), which applies it to the engine. */
export async function chooseWatchMode(
  autoArm: boolean,
  chose: (autoArm: boolean) => Promise<void>,
  log: vscode.LogOutputChannel,
): Promise<void> {
  await vscode.workspace.getConfiguration(SECTION).update('autoArm', autoArm, vscode.ConfigurationTarget.Global);
  await chose(autoArm);
  log.info(
    autoArm
      ? 'watch mode: every goal that becomes active is watched (autoArm on)'
      : 'watch mode: only the goals you pick are watched (autoArm off: "Watch this goal" on a row)',
  );
}
