// The engine's decisions and counters as OTLP/HTTP JSON (the OTLP specification's JSON encoding of
// ExportLogsServiceRequest and ExportMetricsServiceRequest: ids as strings, 64-bit integers as
// decimal strings, enums as numbers, lowerCamelCase field names). Pure: no clock, no I/O; the
// exporter (exporter.ts) batches and sends what this makes. docs/telemetry.md lists every field.
//
// What leaves the machine is only ids, states, counts, delays and error codes: never a goal's text
// (the `armed` decision's title is the thread's title, often its first prompt), never a reason in
// words (some quote an error message the daemon or the provider wrote). The runner's lines and the
// extension's log keep the whole text.
import type { Decision } from '../model/decision';
import { decisionLevel, type Level } from '../model/decisionLevel';
import type { Counts } from './counters';

/** The name every record and metric is exported under (the resource's `service.name`, the scope's name). */
export const SERVICE_NAME = 'codex-goal-recovery';

/** The resource every batch names: this product, its version, and Codex's `environment` when reused. */
export interface ResourceInfo {
  version: string;
  /** Codex's `[otel] environment`, when the exporter is Codex's own (deployment.environment.name). */
  environment?: string;
}

/** OTLP's SeverityNumber for each of the runner's levels (notice is INFO2: above info, below warn). */
export const SEVERITY: Record<Level, { severityNumber: number; severityText: string }> = {
  debug: { severityNumber: 5, severityText: 'DEBUG' },
  info: { severityNumber: 9, severityText: 'INFO' },
  notice: { severityNumber: 10, severityText: 'NOTICE' },
  warning: { severityNumber: 13, severityText: 'WARN' },
  error: { severityNumber: 17, severityText: 'ERROR' },
};

export type LogRecord = ReturnType<typeof logRecord>;

const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
const int = (key: string, value: number) => ({ key, value: { intValue: String(Math.round(value)) } });
type KeyValue = ReturnType<typeof str> | ReturnType<typeof int>;
/** One of this product's own attributes (`codex_goal_recovery.<key>`). */
const own = (key: string, value: string | number): KeyValue =>
  typeof value === 'number' ? int(`codex_goal_recovery.${key}`, value) : str(`codex_goal_recovery.${key}`, value);
const tried = (d: { attempt: number; failedTurnId: string }) => [
  own('attempt', d.attempt),
  own('failed_turn_id', d.failedTurnId),
];

/** Milliseconds since the epoch as OTLP's fixed64 nanoseconds (a decimal string: beyond 2^53). */
export function nanos(ms: number): string {
  return (BigInt(Math.round(ms)) * 1_000_000n).toString();
}

/** The record's body (the runner's line, from ids and numbers only) and the decision's own attributes. */
function describe(d: Decision): [string, KeyValue[]] {
  switch (d.type) {
    case 'backoff': {
      // The leading error code of its `error` (`serverOverloaded`, `http500`…), never the words after it.
      const code = /^[A-Za-z][A-Za-z0-9_]*/.exec(d.error)?.[0];
      return [
        `backoff: attempt ${d.attempt} in ${(d.delayMs / 1000).toFixed(1)} s (${code ?? 'failed turn'})`,
        [
          ...tried(d),
          own('delay_ms', d.delayMs),
          own('due_at', new Date(d.dueAt).toISOString()),
          ...(code ? [str('error.type', code)] : []),
        ],
      ];
    }
    case 'recovering':
      return [`recovering: attempt ${d.attempt} (failed turn ${d.failedTurnId})`, tried(d)];
    case 'recovered':
      return [`recovered: goal active again (attempt ${d.attempt})`, tried(d)];
    case 'gave-up':
      return [
        `gave up: ${d.attempts} recoveries failed again (last failed turn ${d.failedTurnId})`,
        [own('attempts', d.attempts), own('failed_turn_id', d.failedTurnId)],
      ];
    case 'probe':
      return [
        `probe: tried first for its outage; ${d.others} other goal(s) wait for its verdict`,
        [own('outage_group', d.group), own('waiting', d.others)],
      ];
    case 'released':
      return [`released: the provider answered on ${d.by}; recovered now`, [own('released_by', d.by)]];
    case 'elsewhere':
      return [`elsewhere: a goal ${d.status} in another Codex app`, [own('goal_status', d.status)]];
    case 'connection':
      return [`connection ${d.state}`, [own('connection_state', d.state)]];
    case 'attention':
      return ['needs attention', []];
    default:
      return [d.type, []];
  }
}

/** One decision as one log record, at `nowMs`; `conversation.id` is its thread (as in Codex's own records). */
export function logRecord(d: Decision, nowMs: number) {
  const at = nanos(nowMs);
  const thread = 'threadId' in d && d.threadId && d.threadId !== '*' ? [str('conversation.id', d.threadId)] : [];
  const [text, fields] = describe(d);
  return {
    timeUnixNano: at,
    observedTimeUnixNano: at,
    ...SEVERITY[decisionLevel(d)],
    body: { stringValue: text },
    attributes: [str('event.name', `codex_goal_recovery.${d.type}`), own('decision', d.type), ...thread, ...fields],
  };
}

const resource = (info: ResourceInfo) => ({
  attributes: [
    str('service.name', SERVICE_NAME),
    str('service.version', info.version),
    ...(info.environment ? [str('deployment.environment.name', info.environment)] : []),
  ],
});

const scope = (info: ResourceInfo) => ({ name: SERVICE_NAME, version: info.version });

/** An ExportLogsServiceRequest of `records` (one resource, one scope). */
export function logsRequest(records: readonly LogRecord[], info: ResourceInfo) {
  return { resourceLogs: [{ resource: resource(info), scopeLogs: [{ scope: scope(info), logRecords: records }] }] };
}

/** The counters' names, units and meanings (docs/telemetry.md): each a monotonic cumulative sum. */
const METRICS: Record<keyof Counts, [name: string, unit: string, description: string]> = {
  recoveries: ['recoveries', '{recovery}', 'Recoveries that took (the goal active again)'],
  giveUps: ['give_ups', '{goal}', 'Goals given up on after their last failed recovery'],
  wastedTurns: ['wasted_turns', '{turn}', 'Recoveries whose turn failed again'],
  backoffSeconds: ['backoff.time', 's', 'Time goals spent waiting in backoff'],
};

const CUMULATIVE = 2; // AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE

/**
 * An ExportMetricsServiceRequest of the counters as cumulative monotonic sums since `startMs` (this
 * exporter's start: a restart starts them again from zero, which a cumulative sum's new start time says).
 */
export function metricsRequest(counts: Counts, startMs: number, nowMs: number, info: ResourceInfo) {
  const point = { startTimeUnixNano: nanos(startMs), timeUnixNano: nanos(nowMs) };
  const metrics = (Object.keys(METRICS) as (keyof Counts)[]).map((key) => {
    const [name, unit, description] = METRICS[key];
    // The counts are int64 (a decimal string in OTLP's JSON), the time in backoff a double.
    const value = key === 'backoffSeconds' ? { asDouble: counts[key] } : { asInt: String(counts[key]) };
    const sum = { aggregationTemporality: CUMULATIVE, isMonotonic: true, dataPoints: [{ ...point, ...value }] };
    return { name: `codex_goal_recovery.${name}`, unit, description, sum };
  });
  return { resourceMetrics: [{ resource: resource(info), scopeMetrics: [{ scope: scope(info), metrics }] }] };
}
