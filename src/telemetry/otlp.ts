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

/** An OTLP AnyValue, as the JSON encoding writes it. */
export type AnyValue =
  { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean };
export interface KeyValue {
  key: string;
  value: AnyValue;
}

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

export interface LogRecord {
  timeUnixNano: string;
  observedTimeUnixNano: string;
  severityNumber: number;
  severityText: string;
  body: { stringValue: string };
  attributes: KeyValue[];
}

const str = (key: string, value: string): KeyValue => ({ key, value: { stringValue: value } });
const int = (key: string, value: number): KeyValue => ({ key, value: { intValue: String(Math.round(value)) } });

/** Milliseconds since the epoch as OTLP's fixed64 nanoseconds (a decimal string: beyond 2^53). */
export function nanos(ms: number): string {
  return (BigInt(Math.round(ms)) * 1_000_000n).toString();
}

/** The leading error code of a backoff's `error` (`serverOverloaded`, `http500`…), never the words after it. */
function errorCode(error: string): string | null {
  const code = /^[A-Za-z][A-Za-z0-9_]*/.exec(error)?.[0];
  return code ?? null;
}

/** The decision's own attributes (beside `conversation.id`): kinds, states, counts, delays, codes. */
function fields(d: Decision): KeyValue[] {
  switch (d.type) {
    case 'backoff': {
      const code = errorCode(d.error);
      return [
        int('codex_goal_recovery.attempt', d.attempt),
        str('codex_goal_recovery.failed_turn_id', d.failedTurnId),
        int('codex_goal_recovery.delay_ms', d.delayMs),
        str('codex_goal_recovery.due_at', new Date(d.dueAt).toISOString()),
        ...(code ? [str('error.type', code)] : []),
      ];
    }
    case 'recovering':
      return [int('codex_goal_recovery.attempt', d.attempt), str('codex_goal_recovery.failed_turn_id', d.failedTurnId)];
    case 'recovered':
      return [int('codex_goal_recovery.attempt', d.attempt), str('codex_goal_recovery.failed_turn_id', d.failedTurnId)];
    case 'gave-up':
      return [
        int('codex_goal_recovery.attempts', d.attempts),
        str('codex_goal_recovery.failed_turn_id', d.failedTurnId),
      ];
    case 'probe':
      return [str('codex_goal_recovery.outage_group', d.group), int('codex_goal_recovery.waiting', d.others)];
    case 'released':
      return [str('codex_goal_recovery.released_by', d.by)];
    case 'elsewhere':
      return [str('codex_goal_recovery.goal_status', d.status)];
    case 'connection':
      return [str('codex_goal_recovery.connection_state', d.state)];
    default:
      return [];
  }
}

/** The record's body: what happened, from ids and numbers only (the runner's line, without its words). */
export function telemetryText(d: Decision): string {
  switch (d.type) {
    case 'backoff': {
      const seconds = (d.delayMs / 1000).toFixed(1);
      return `backoff: attempt ${d.attempt} in ${seconds} s (${errorCode(d.error) ?? 'failed turn'})`;
    }
    case 'recovering':
      return `recovering: attempt ${d.attempt} (failed turn ${d.failedTurnId})`;
    case 'recovered':
      return `recovered: goal active again (attempt ${d.attempt})`;
    case 'gave-up':
      return `gave up: ${d.attempts} recoveries failed again (last failed turn ${d.failedTurnId})`;
    case 'probe':
      return `probe: tried first for its outage; ${d.others} other goal(s) wait for its verdict`;
    case 'released':
      return `released: the provider answered on ${d.by}; recovered now`;
    case 'elsewhere':
      return `elsewhere: a goal ${d.status} in another Codex app`;
    case 'connection':
      return `connection ${d.state}`;
    case 'attention':
      return 'needs attention';
    default:
      return d.type;
  }
}

/** One decision as one log record, at `nowMs`; `conversation.id` is its thread (as in Codex's own records). */
export function logRecord(d: Decision, nowMs: number): LogRecord {
  const at = nanos(nowMs);
  const thread = 'threadId' in d && d.threadId && d.threadId !== '*' ? [str('conversation.id', d.threadId)] : [];
  return {
    timeUnixNano: at,
    observedTimeUnixNano: at,
    ...SEVERITY[decisionLevel(d)],
    body: { stringValue: telemetryText(d) },
    attributes: [
      str('event.name', `codex_goal_recovery.${d.type}`),
      str('codex_goal_recovery.decision', d.type),
      ...thread,
      ...fields(d),
    ],
  };
}

function resource(info: ResourceInfo): { attributes: KeyValue[] } {
  return {
    attributes: [
      str('service.name', SERVICE_NAME),
      str('service.version', info.version),
      ...(info.environment ? [str('deployment.environment.name', info.environment)] : []),
    ],
  };
}

const scope = (info: ResourceInfo) => ({ name: SERVICE_NAME, version: info.version });

/** An ExportLogsServiceRequest of `records` (one resource, one scope). */
export function logsRequest(records: readonly LogRecord[], info: ResourceInfo) {
  return { resourceLogs: [{ resource: resource(info), scopeLogs: [{ scope: scope(info), logRecords: records }] }] };
}

/** The counters' names, units and meanings (docs/telemetry.md): each a monotonic cumulative sum. */
export const METRICS = {
  recoveries: {
    name: 'codex_goal_recovery.recoveries',
    unit: '{recovery}',
    description: 'Recoveries that took (the goal active again)',
  },
  giveUps: {
    name: 'codex_goal_recovery.give_ups',
    unit: '{goal}',
    description: 'Goals given up on after their last failed recovery',
  },
  wastedTurns: {
    name: 'codex_goal_recovery.wasted_turns',
    unit: '{turn}',
    description: 'Recoveries whose turn failed again',
  },
  backoffSeconds: {
    name: 'codex_goal_recovery.backoff.time',
    unit: 's',
    description: 'Time goals spent waiting in backoff',
  },
} as const;

const CUMULATIVE = 2; // AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE

/**
 * An ExportMetricsServiceRequest of the counters as cumulative monotonic sums since `startMs` (this
 * exporter's start: a restart starts them again from zero, which a cumulative sum's new start time says).
 */
export function metricsRequest(counts: Counts, startMs: number, nowMs: number, info: ResourceInfo) {
  const point = (value: AnyValue) => ({
    startTimeUnixNano: nanos(startMs),
    timeUnixNano: nanos(nowMs),
    ...('intValue' in value ? { asInt: value.intValue } : { asDouble: (value as { doubleValue: number }).doubleValue }),
  });
  const sum = (key: keyof typeof METRICS, value: AnyValue) => ({
    ...METRICS[key],
    sum: { aggregationTemporality: CUMULATIVE, isMonotonic: true, dataPoints: [point(value)] },
  });
  return {
    resourceMetrics: [
      {
        resource: resource(info),
        scopeMetrics: [
          {
            scope: scope(info),
            metrics: [
              sum('recoveries', { intValue: String(counts.recoveries) }),
              sum('giveUps', { intValue: String(counts.giveUps) }),
              sum('wastedTurns', { intValue: String(counts.wastedTurns) }),
              sum('backoffSeconds', { doubleValue: counts.backoffSeconds }),
            ],
          },
        ],
      },
    ],
  };
}
