// The window's side of the first run (the rule itself: src/config/firstRun.ts, pure): what this
// machine has recorded, whether the engine observes until the person chooses which goals to watch,
// the walkthrough opened once, and the context key its "Choose which goals to watch" step completes
// on. No VS Code import: the window hands in its globalState, its settings and its commands.
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
/** True once the person has chosen which goals to watch (the walkthrough's second step). */
export const WATCH_MODE_CHOSEN_KEY = 'codexGoalRecovery.watchModeChosen';

export interface FirstRunIo {
  memento: MementoLike;
  /** `codexGoalRecovery.autoArm` has the user's (or remote machine's) value (src/config/firstRun.ts). */
  explicitSetting(): boolean;
  /** The engine's crash journal is on disk (it ran here before, even if globalState lost its copy). */
  journalExists(): boolean;
  openWalkthrough(): void;
  setContext(key: string, value: boolean): void;
  log(line: string): void;
}

export class FirstRun {
  constructor(private readonly io: FirstRunIo) {}

  /** At activation: a fresh install records that it waits for the choice and opens the walkthrough, once. */
  start(): FirstRunMode {
    const recorded = this.recorded();
    const mode = this.mode();
    if (mode === 'observe') {
      if (recorded === undefined) {
        void this.io.memento.update(FIRST_RUN_KEY, 'waiting' satisfies FirstRunRecord);
        this.io.openWalkthrough();
      }
      this.io.log(
        'first run: observing, no goal is armed until you choose which goals to watch (the walkthrough "Get started")',
      );
    }
    this.sync();
    return mode;
  }

  /** Whether the engine treats `autoArm` as off until the person chooses. */
  mode(): FirstRunMode {
    return firstRunMode({
      explicitSetting: this.io.explicitSetting(),
      recorded: this.recorded(),
      hasState: this.hasState(),
    });
  }

  /** The settings changed: a value of the user's, while the first run waits, is the choice. */
  settingsChanged(): void {
    if (this.io.explicitSetting() && this.recorded() === 'waiting') void this.record('chosen');
    this.sync();
  }

  /** The person chose (Watch every goal, or Watch only goals I pick): recorded. */
  async chose(): Promise<void> {
    await this.record('chosen');
    this.sync();
  }

  /** The settings the engine runs with: `autoArm` off while observing. */
  apply(settings: Settings): Settings {
    if (this.mode() !== 'observe') return settings;
    return { ...settings, options: { ...settings.options, autoArm: false } };
  }

  private recorded(): FirstRunRecord | undefined {
    const value = this.io.memento.get<unknown>(FIRST_RUN_KEY);
    return value === 'waiting' || value === 'chosen' ? value : undefined;
  }

  private hasState(): boolean {
    return (
      this.io.memento.keys().some((k) => k === STATE_KEY || k.startsWith(CORRUPT_PREFIX)) || this.io.journalExists()
    );
  }

  private async record(value: FirstRunRecord): Promise<void> {
    if (this.recorded() === value) return;
    await this.io.memento.update(FIRST_RUN_KEY, value);
    this.io.log(value === 'chosen' ? 'first run: the choice of which goals to watch is made' : 'first run: waiting');
  }

  private sync(): void {
    this.io.setContext(WATCH_MODE_CHOSEN_KEY, this.io.explicitSetting() || this.recorded() === 'chosen');
  }
}
