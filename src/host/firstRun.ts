// The window's side of the first run (the rule itself: src/config/firstRun.ts, pure): what this
// machine has recorded, whether the engine observes until the person chooses which goals to watch,
// the walkthrough opened once. No VS Code import: the window hands in its globalState, its settings
// and its commands.
//
// Several windows: the leader's engine options are what count. Every window reads the same things
// (the user's settings, globalState), so each computes the same mode; a choice made in any window
// writes the user's setting, which reaches every window, the leader's too, as a settings change.
import { firstRunMode, type FirstRunMode, type FirstRunRecord } from '../config/firstRun';
import type { Settings } from '../config/settings';
import { CORRUPT_PREFIX, STATE_KEY, type MementoLike } from '../store/globalStateStore';

/** Where the first run's record lives in globalState. */
export const FIRST_RUN_KEY = 'codexGoalRecovery.firstRun';
/** The walkthrough's id in the manifest (`contributes.walkthroughs`). */
export const WALKTHROUGH_ID = 'gettingStarted';

export interface FirstRunIo {
  memento: MementoLike;
  /** `codexGoalRecovery.autoArm` has the user's (or remote machine's) value (src/config/firstRun.ts). */
  explicitSetting(): boolean;
  openWalkthrough(): void;
  log(line: string): void;
}

/**
 * The window's first run: whether it observes, and what the engine runs with. A closure rather
 * than a class: the release bundle keeps a class's method names, not a closure's.
 */
export function firstRun(io: FirstRunIo) {
  const recorded = (): FirstRunRecord | undefined => {
    const value = io.memento.get<unknown>(FIRST_RUN_KEY);
    return value === 'waiting' || value === 'chosen' ? value : undefined;
  };
  const mode = () =>
    firstRunMode({
      explicitSetting: io.explicitSetting(),
      recorded: recorded(),
      hasState: io.memento.keys().some((k) => k === STATE_KEY || k.startsWith(CORRUPT_PREFIX)),
    });
  const record = (value: FirstRunRecord) => void io.memento.update(FIRST_RUN_KEY, value);
  return {
    /** At activation: a fresh install records that it waits for the choice and opens the walkthrough, once. */
    start: (): FirstRunMode => {
      const m = mode();
      if (m === 'observe' && recorded() === undefined) {
        record('waiting');
        io.openWalkthrough();
      }
      if (m === 'observe') io.log('first run: observing');
      return m;
    },
    /** Whether the engine treats `autoArm` as off until the person chooses. */
    mode,
    /**
     * The settings changed (or a choice command wrote one): a value of the user's, while the first run
     * waits, is the choice, recorded for good.
     */
    settingsChanged: () => {
      if (io.explicitSetting() && recorded() === 'waiting') record('chosen');
    },
    /** The settings the engine runs with: `autoArm` off while observing. */
    apply: (settings: Settings): Settings =>
      mode() === 'observe' ? { ...settings, options: { ...settings.options, autoArm: false } } : settings,
  };
}
