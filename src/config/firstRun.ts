// The first run's rule (pure): whether the engine observes (arms no goal by itself) until the person
// has chosen which goals to watch, or follows the `autoArm` setting. docs/first-run.md says why.
//
// A Marketplace install activates at once, with the shipped `autoArm: true`: arming before a person
// chooses could recover goals they meant to leave alone. Observing does nothing Codex would not do
// without the extension, so a fresh install observes until the choice (the walkthrough's second
// step, or the setting itself). An install that already has watch state (an upgrade) keeps the
// shipped behaviour: nothing changes for it. The headless runner does not ask: its operator chooses
// by its flags.

/** What the extension records of the first run, in globalState (machine state, never synced). */
export type FirstRunRecord = 'waiting' | 'chosen';

export interface FirstRunFacts {
  /**
   * `codexGoalRecovery.autoArm` has a value the engine honours: the user's (or the remote machine's).
   * A workspace's value does not count: it cannot set the policy (src/config/settings.ts), so it
   * must not end the observing either (it would arm with the default).
   */
  explicitSetting: boolean;
  /** What was recorded: the first run is waiting for the choice, or the choice was made; none yet. */
  recorded: FirstRunRecord | undefined;
  /** The extension's watch state exists on this machine: an engine of an earlier install ran here. */
  hasState: boolean;
}

/** `observe`: `autoArm` treated as off until the choice; `setting`: as the setting says (or its default). */
export type FirstRunMode = 'observe' | 'setting';

export function firstRunMode(f: Readonly<FirstRunFacts>): FirstRunMode {
  if (f.explicitSetting) return 'setting'; // the person's value, whatever the record says
  if (f.recorded === 'chosen') return 'setting'; // chosen, then the value removed: the shipped default
  if (f.recorded === 'waiting') return 'observe'; // still waiting (the engine has saved state since)
  return f.hasState ? 'setting' : 'observe'; // an upgrade keeps the shipped default; a fresh install observes
}
