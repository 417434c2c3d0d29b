// Where the export goes: an OTLP/HTTP base URL the user names (`--otlp-endpoint`, the setting
// `codexGoalRecovery.telemetry.otlpEndpoint`), or the exporter Codex's own `config.toml` names
// (`--otlp-from-codex-config`, `codexGoalRecovery.telemetry.useCodexOtelConfig`). Codex's `[otel]`
// table, as its config types define it (codex-rs/config/src/types.rs, OtelConfigToml):
//
//   [otel]
//   environment = "dev"                        # default "dev"
//   exporter = "none" | "statsig" | { otlp-http = { endpoint, protocol = "binary" | "json",
//                headers = { … }, tls = { … } } } | { otlp-grpc = { endpoint, headers, tls } }
//   trace_exporter = …                         # the same kinds
//   metrics_exporter = …                       # the same kinds; default "statsig"
//
// Codex's `exporter` is its log exporter and its `endpoint` the logs URL itself (`…/v1/logs`), so
// the records go there as they are. The counters go to `metrics_exporter` when that is otlp-http,
// else beside the logs (the same URL with `/v1/metrics` for `/v1/logs`), else nowhere, said.
// Only otlp-http can be reused: otlp-grpc, statsig and none export nothing, each said why. Codex's
// `protocol = "binary"` (protobuf) is honoured as far as the address goes: the export is JSON all
// the same (OTLP/HTTP's other encoding, which the OpenTelemetry Collector takes on the same
// endpoint), and the log line says so; a receiver that takes protobuf only answers 415, said once.
// TLS settings (a private CA, a client certificate) are not reused: said when present.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isTable, parseToml, type TomlTable, type TomlValue } from './toml';

type Headers = Record<string, string>;

export interface Destination {
  logsUrl: string;
  metricsUrl: string | null;
  /** Headers of the logs' requests (Codex's exporter's `headers`). */
  headers: Headers;
  /** Headers of the metrics' requests (its `metrics_exporter`'s when that is reused, else the same). */
  metricsHeaders: Headers;
  /** Codex's `[otel] environment`, when its exporter is reused. */
  environment?: string;
  /** What the export does, for the owner's log (where to, what is not reused). */
  describe: string;
}

/** A destination, or why there is none (for the owner's log: nothing is exported then). */
export type Resolved = { ok: true; destination: Destination } | { ok: false; reason: string };
const off = (reason: string): Resolved => ({ ok: false, reason });
const on = (destination: Destination): Resolved => ({ ok: true, destination });

/** Checks an OTLP/HTTP base URL: http or https, no query or fragment. Returns the reason it cannot be used. */
export function checkEndpoint(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `"${url}" is not a URL (an OTLP/HTTP base URL, e.g. http://127.0.0.1:4318)`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return `"${url}": an OTLP/HTTP endpoint is http:// or https://`;
  if (u.search || u.hash) return `"${url}": a base URL takes no query or fragment`;
  return null;
}

/** A base URL the user named: `<base>/v1/logs` and `<base>/v1/metrics` (OTLP's signal paths). */
export function fromEndpoint(base: string): Resolved {
  const wrong = checkEndpoint(base);
  if (wrong) return off(wrong);
  const root = base.replace(/\/+$/, '');
  return on({
    logsUrl: `${root}/v1/logs`,
    metricsUrl: `${root}/v1/metrics`,
    headers: {},
    metricsHeaders: {},
    describe: `OTLP/HTTP JSON to ${root} (/v1/logs, /v1/metrics)`,
  });
}

type Exporter =
  | { kind: 'otlp-http'; endpoint: string; protocol: string; headers: Headers; tls: boolean }
  | { kind: 'other'; what: string }
  | { kind: 'invalid'; why: string };

/** One of Codex's `OtelExporterKind` values, read. */
function exporterOf(v: TomlValue | undefined, name: string): Exporter {
  if (v === undefined) return { kind: 'other', what: `no ${name}` };
  if (typeof v === 'string') return { kind: 'other', what: `${name} = "${v}"` };
  if (!isTable(v)) return { kind: 'invalid', why: `${name} is neither a name nor a table` };
  const kinds = Object.keys(v);
  if (kinds.length !== 1) return { kind: 'invalid', why: `${name} names ${kinds.length} exporters (one expected)` };
  const [kind] = kinds;
  const body = v[kind];
  if (kind !== 'otlp-http') return { kind: 'other', what: `${name} is ${kind}` };
  if (!isTable(body) || typeof body.endpoint !== 'string' || body.endpoint.trim() === '')
    return { kind: 'invalid', why: `${name}.otlp-http has no endpoint` };
  const headers = body.headers ?? {};
  if (!isTable(headers)) return { kind: 'invalid', why: `${name}.otlp-http.headers is not a table` };
  const bad = Object.keys(headers).find((k) => typeof headers[k] !== 'string');
  if (bad !== undefined) return { kind: 'invalid', why: `${name}.otlp-http.headers.${bad} is not a string` };
  const protocol = typeof body.protocol === 'string' ? body.protocol : 'binary';
  const tls = body.tls !== undefined;
  return { kind: 'otlp-http', endpoint: body.endpoint.trim(), protocol, headers: headers as Headers, tls };
}

/** Reads `<codexHome>/config.toml` and resolves its `[otel]` exporter (see above). */
export function fromCodexConfig(codexHome: string): Resolved {
  const file = path.join(codexHome, 'config.toml');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return off(
      code === 'ENOENT'
        ? `no ${file}: Codex has no [otel] exporter to reuse; nothing is exported`
        : `${file} cannot be read (${code ?? (error as Error).message}); nothing is exported`,
    );
  }
  let doc: TomlTable;
  try {
    doc = parseToml(text);
  } catch (error) {
    return off(`${file} is not valid TOML (${(error as Error).message}): nothing is exported`);
  }
  const otel = doc.otel;
  if (otel === undefined) return off(`${file} has no [otel] table: Codex exports nothing, nor does this`);
  if (!isTable(otel)) return off(`${file}: otel is not a table`);
  const logs = exporterOf(otel.exporter, 'exporter');
  if (logs.kind === 'invalid') return off(`${file}: [otel] ${logs.why}: nothing is exported`);
  if (logs.kind === 'other') {
    const why = logs.what.includes('otlp-grpc')
      ? 'only an otlp-http exporter can be reused (this export is OTLP/HTTP JSON, not gRPC)'
      : 'Codex sends its records nowhere, so neither does this';
    return off(`${file}: [otel] ${logs.what}: ${why}; nothing is exported`);
  }
  const wrong = checkEndpoint(logs.endpoint);
  if (wrong) return off(`${file}: [otel] exporter: ${wrong}`);
  const metrics = exporterOf(otel.metrics_exporter, 'metrics_exporter');
  const beside = /\/v1\/logs\/?$/.test(logs.endpoint) ? logs.endpoint.replace(/\/v1\/logs\/?$/, '/v1/metrics') : null;
  const metricsUrl = metrics.kind === 'otlp-http' ? metrics.endpoint : beside;
  const notes: string[] = [];
  if (logs.protocol !== 'json')
    notes.push(`Codex's protocol is "${logs.protocol}": this export sends JSON to the same endpoint`);
  if (logs.tls) notes.push("its tls settings are not reused (the system's CAs, no client certificate)");
  if (metricsUrl === null) notes.push(`no metrics: ${logs.endpoint} does not end in /v1/logs`);
  return on({
    logsUrl: logs.endpoint,
    metricsUrl,
    headers: logs.headers,
    metricsHeaders: metrics.kind === 'otlp-http' ? metrics.headers : logs.headers,
    environment: typeof otel.environment === 'string' ? otel.environment : 'dev',
    describe:
      `OTLP/HTTP JSON to Codex's exporter (${file}): logs ${logs.endpoint}` +
      `${metricsUrl ? `, metrics ${metricsUrl}` : ''}` +
      `${Object.keys(logs.headers).length ? `, with its headers (${Object.keys(logs.headers).join(', ')})` : ''}` +
      `${notes.length ? `; ${notes.join('; ')}` : ''}`,
  });
}
