// The opt-in OpenTelemetry export, as the runner and the extension start it: where to (a base URL,
// or Codex's own `[otel]` exporter: destination.ts), the exporter over node:http (exporter.ts,
// httpPost.ts), and a line for the owner's log saying what is exported where, or why nothing is.
// Nothing is sent unless one of the two is chosen. The extension loads this file as a bundle of
// its own (dist/telemetry.js) only when a setting asks for it.
import type { Decision } from '../model/decision';
import { VERSION } from '../version';
import { fromCodexConfig, fromEndpoint } from './destination';
import { OtlpExporter } from './exporter';
import { httpTransport } from './httpPost';

/** What the user chose: a base URL, or Codex's exporter in `codexHome`'s config.toml. */
export type TelemetryChoice = { kind: 'endpoint'; url: string } | { kind: 'codexConfig'; codexHome: string };

export interface Telemetry {
  /** A decision this engine announced (only its own: a follower's leader exports its own). */
  decided(d: Decision): void;
  /** The last try (bounded by `timeoutMs`), then nothing more is sent. */
  stop(timeoutMs?: number): Promise<void>;
}

export type TelemetryLog = (level: 'warning' | 'notice', message: string) => void;

export interface TelemetryStart {
  telemetry: Telemetry | null;
  /** The line for the owner's log: where the export goes, or why there is none. */
  level: 'notice' | 'warning';
  message: string;
}

/** Starts the export `choice` names; `log` gets its later lines (a collector down, up again). */
export function startTelemetry(choice: TelemetryChoice, log: TelemetryLog, intervalMs?: number): TelemetryStart {
  const resolved = choice.kind === 'endpoint' ? fromEndpoint(choice.url) : fromCodexConfig(choice.codexHome);
  if (!resolved.ok) return { telemetry: null, level: 'warning', message: `telemetry: off: ${resolved.reason}` };
  const d = resolved.destination;
  const telemetry = new OtlpExporter({
    logsUrl: d.logsUrl,
    metricsUrl: d.metricsUrl,
    resource: { version: VERSION, ...(d.environment !== undefined && { environment: d.environment }) },
    transport: httpTransport((url) => (url === d.logsUrl ? d.headers : d.metricsHeaders)),
    log,
    ...(intervalMs !== undefined && { intervalMs }),
  });
  return { telemetry, level: 'notice', message: `telemetry: exporting decisions and counters: ${d.describe}` };
}
