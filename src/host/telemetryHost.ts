// The window's side of the opt-in OpenTelemetry export (docs/telemetry.md): the settings
// `codexGoalRecovery.telemetry.otlpEndpoint` and `.useCodexOtelConfig` start it, a change to them
// applies at once (the old export makes its last try and stops), and it gets the decisions of this
// window's engine only (a follower's leader exports its own). The export's code is a bundle of its
// own (dist/telemetry.js, src/telemetry/), loaded the first time a setting asks for it: a window
// that exports nothing never loads it, and the extension's bundle stays as small as it was.
import * as path from 'node:path';
import type { LogOutputChannel } from 'vscode';
import type { Settings } from '../config/settings';
import type { Decision } from '../model/decision';
import type { Telemetry, TelemetryChoice } from '../telemetry/index';
import { errorText } from '../util/errorText';

type TelemetryModule = typeof import('../telemetry/index');

/** What the settings ask for: a base URL first, else Codex's exporter, else nothing. */
function telemetryChoice(settings: Settings): TelemetryChoice | null {
  const url = settings.telemetry.otlpEndpoint.trim();
  if (url) return { kind: 'endpoint', url };
  if (settings.telemetry.useCodexOtelConfig) return { kind: 'codexConfig', codexHome: settings.codexHome };
  return null;
}

export class TelemetryHost {
  private telemetry: Telemetry | null = null;
  /** The choice the running export was started with (JSON), '' for none. */
  private current = '';

  constructor(
    private readonly log: LogOutputChannel,
    private readonly load: () => TelemetryModule = loadBundle,
  ) {}

  /** Starts, restarts or stops the export as `settings` say; nothing when they did not change it. */
  apply(settings: Settings): void {
    const choice = telemetryChoice(settings);
    const key = choice ? JSON.stringify(choice) : '';
    if (key === this.current) return;
    this.current = key;
    const old = this.telemetry;
    this.telemetry = null;
    if (old) void old.stop();
    if (!choice) {
      if (old) this.log.info('telemetry: off (the settings export nothing)');
      return;
    }
    try {
      const say = (level: string, message: string) =>
        level === 'warning' ? this.log.warn(message) : this.log.info(message);
      const started = this.load().startTelemetry(choice, say);
      say(started.level, started.message);
      this.telemetry = started.telemetry;
    } catch (error) {
      this.log.error(`telemetry: could not start: ${errorText(error)}`);
    }
  }

  decided(d: Decision): void {
    this.telemetry?.decided(d);
  }

  /** The last try (bounded), then nothing more (the window closes). */
  async stop(): Promise<void> {
    const t = this.telemetry;
    this.telemetry = null;
    this.current = '';
    await t?.stop();
  }
}

/** dist/telemetry.js, beside dist/extension.js: required by a path esbuild does not follow. */
function loadBundle(): TelemetryModule {
  const file = path.join(__dirname, 'telemetry.js');
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a bundle of its own, loaded when a setting asks
  return require(file) as TelemetryModule;
}
