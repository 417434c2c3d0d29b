// The OpenTelemetry export's pure parts: a decision as an OTLP/HTTP JSON log record (its exact
// shape, `conversation.id`, the severity from the runner's levels, nothing of a goal's text), the
// counters as an ExportMetricsServiceRequest of cumulative sums, and the counters' rules.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Decision } from '../../src/model/decision';
import { decisionLevel } from '../../src/model/decisionLevel';
import { DecisionCounters } from '../../src/telemetry/counters';
import { logRecord, logsRequest, metricsRequest, SEVERITY } from '../../src/telemetry/otlp';

const AT = Date.UTC(2026, 11, 3, 12, 0, 0, 123);
const AT_NS = '1796299200123000000';

describe('a decision as an OTLP log record', () => {
  it('a backoff: the exact record, the thread as conversation.id, its attempt, turn, delay and error code', () => {
    const d: Decision = {
      type: 'backoff',
      threadId: 'th-1',
      attempt: 2,
      failedTurnId: 'turn-9',
      dueAt: AT + 1500,
      delayMs: 1500,
      error: 'serverOverloaded',
    };
    assert.deepEqual(logRecord(d, AT), {
      timeUnixNano: AT_NS,
      observedTimeUnixNano: AT_NS,
      severityNumber: 10,
      severityText: 'NOTICE',
      body: { stringValue: 'backoff: attempt 2 in 1.5 s (serverOverloaded)' },
      attributes: [
        { key: 'event.name', value: { stringValue: 'codex_goal_recovery.backoff' } },
        { key: 'codex_goal_recovery.decision', value: { stringValue: 'backoff' } },
        { key: 'conversation.id', value: { stringValue: 'th-1' } },
        { key: 'codex_goal_recovery.attempt', value: { intValue: '2' } },
        { key: 'codex_goal_recovery.failed_turn_id', value: { stringValue: 'turn-9' } },
        { key: 'codex_goal_recovery.delay_ms', value: { intValue: '1500' } },
        { key: 'codex_goal_recovery.due_at', value: { stringValue: new Date(AT + 1500).toISOString() } },
        { key: 'error.type', value: { stringValue: 'serverOverloaded' } },
      ],
    });
  });

  it("the severity is the runner's level, mapped to OTLP's numbers", () => {
    const cases: [Decision, number, string][] = [
      [{ type: 'gave-up', threadId: 't', attempts: 6, failedTurnId: 'x' }, 17, 'ERROR'],
      [{ type: 'attention', threadId: 't', reason: 'r' }, 13, 'WARN'],
      [{ type: 'warning', message: 'm' }, 13, 'WARN'],
      [{ type: 'connection', state: 'disconnected', detail: 'd' }, 13, 'WARN'],
      [{ type: 'recovered', threadId: 't', attempt: 1, failedTurnId: 'x', how: 'h' }, 10, 'NOTICE'],
      [{ type: 'skipped', threadId: 't', reason: 'r' }, 9, 'INFO'],
      [{ type: 'connection', state: 'connected', detail: 'd' }, 9, 'INFO'],
    ];
    for (const [d, n, text] of cases) {
      const r = logRecord(d, AT);
      assert.deepEqual([r.severityNumber, r.severityText], [n, text], d.type);
      assert.deepEqual(SEVERITY[decisionLevel(d)], { severityNumber: n, severityText: text });
    }
  });

  it("never a goal's text nor a reason in words: only ids, kinds, counts, delays and codes", () => {
    const secret = 'SECRET-PROMPT-TEXT';
    const decisions: Decision[] = [
      { type: 'armed', threadId: 't', title: secret },
      { type: 'attention', threadId: 't', reason: `context window exceeded (${secret})` },
      { type: 'skipped', threadId: 't', reason: secret, detail: secret },
      { type: 'warning', message: secret, threadId: 't' },
      { type: 'disarmed', threadId: 't', reason: secret },
      { type: 'connection', state: 'error', detail: secret },
      {
        type: 'backoff',
        threadId: 't',
        attempt: 1,
        failedTurnId: 'x',
        dueAt: AT,
        delayMs: 1,
        error: `http500 ${secret}`,
      },
      { type: 'recovered', threadId: 't', attempt: 1, failedTurnId: 'x', how: secret },
    ];
    for (const d of decisions) assert.doesNotMatch(JSON.stringify(logRecord(d, AT)), /SECRET/, d.type);
    // A pause of every thread names no thread ('*'): no conversation.id.
    const all = logRecord({ type: 'skipped', threadId: '*', reason: 'paused' }, AT);
    assert.equal(
      all.attributes.find((a) => a.key === 'conversation.id'),
      undefined,
    );
  });

  it('an ExportLogsServiceRequest: one resource (service.name, service.version), one scope', () => {
    const r = logRecord({ type: 'armed', threadId: 't', title: 'x' }, AT);
    assert.deepEqual(logsRequest([r], { version: '1.2.3', environment: 'prod' }), {
      resourceLogs: [
        {
          resource: {
            attributes: [
              { key: 'service.name', value: { stringValue: 'codex-goal-recovery' } },
              { key: 'service.version', value: { stringValue: '1.2.3' } },
              { key: 'deployment.environment.name', value: { stringValue: 'prod' } },
            ],
          },
          scopeLogs: [{ scope: { name: 'codex-goal-recovery', version: '1.2.3' }, logRecords: [r] }],
        },
      ],
    });
  });
});

describe('the counters as OTLP metrics', () => {
  it('an ExportMetricsServiceRequest of cumulative monotonic sums since the start', () => {
    const req = metricsRequest({ recoveries: 3, giveUps: 1, wastedTurns: 2, backoffSeconds: 4.5 }, AT - 1000, AT, {
      version: '1.2.3',
    });
    const rm = req.resourceMetrics[0];
    assert.deepEqual(rm.resource.attributes, [
      { key: 'service.name', value: { stringValue: 'codex-goal-recovery' } },
      { key: 'service.version', value: { stringValue: '1.2.3' } },
    ]);
    const metrics = rm.scopeMetrics[0].metrics;
    const point = (asValue: Record<string, unknown>) => ({
      startTimeUnixNano: '1796299199123000000',
      timeUnixNano: AT_NS,
      ...asValue,
    });
    assert.deepEqual(
      metrics.map((m) => [m.name, m.unit, m.sum]),
      [
        [
          'codex_goal_recovery.recoveries',
          '{recovery}',
          { aggregationTemporality: 2, isMonotonic: true, dataPoints: [point({ asInt: '3' })] },
        ],
        [
          'codex_goal_recovery.give_ups',
          '{goal}',
          { aggregationTemporality: 2, isMonotonic: true, dataPoints: [point({ asInt: '1' })] },
        ],
        [
          'codex_goal_recovery.wasted_turns',
          '{turn}',
          { aggregationTemporality: 2, isMonotonic: true, dataPoints: [point({ asInt: '2' })] },
        ],
        [
          'codex_goal_recovery.backoff.time',
          's',
          { aggregationTemporality: 2, isMonotonic: true, dataPoints: [point({ asDouble: 4.5 })] },
        ],
      ],
    );
  });

  it('recoveries, give-ups, wasted turns (a recovery whose turn failed again) and time in backoff', () => {
    const c = new DecisionCounters();
    /** A backoff decided at `at` (its due time less its delay), as the engine announces it. */
    const backoff = (threadId: string, attempt: number, failedTurnId: string, at: number): Decision => ({
      type: 'backoff',
      threadId,
      attempt,
      failedTurnId,
      dueAt: at + 1_000,
      delayMs: 1_000,
      error: 'http500',
    });
    const recovered = (threadId: string, attempt: number, failedTurnId: string): Decision => ({
      type: 'recovered',
      threadId,
      attempt,
      failedTurnId,
      how: 'goal active',
    });
    // Goal a: fails (turn 1), backs off 10 s, recovered; the recovery's turn (2) fails again: one
    // wasted turn; backs off 20 s, recovered, completes.
    c.observe(backoff('a', 1, 'a1', 0), 0);
    c.observe({ type: 'recovering', threadId: 'a', attempt: 1, failedTurnId: 'a1' }, 10_000);
    c.observe(recovered('a', 1, 'a1'), 10_100);
    c.observe(backoff('a', 2, 'a2', 12_000), 12_000);
    c.observe(recovered('a', 2, 'a2'), 32_000);
    // Goal b: backs off 5 s, then the daemon refuses its set (a backoff of the same failed turn: no
    // turn ran, nothing wasted), then it gives up.
    c.observe(backoff('b', 1, 'b1', 0), 0);
    c.observe(backoff('b', 2, 'b1', 5_000), 5_000);
    c.observe({ type: 'gave-up', threadId: 'b', attempts: 2, failedTurnId: 'b1' }, 8_000);
    // Goal c: still waiting: counted up to now.
    c.observe(backoff('c', 1, 'c1', 40_000), 40_000);
    assert.deepEqual(c.counts(41_000), { recoveries: 2, giveUps: 1, wastedTurns: 1, backoffSeconds: 10 + 20 + 8 + 1 });
    assert.equal(c.waitingNow(), true);
    // A recovered goal that fails again after its recovery gave up: wasted too.
    c.observe({ type: 'recovering', threadId: 'c', attempt: 1, failedTurnId: 'c1' }, 42_000);
    c.observe(recovered('c', 1, 'c1'), 42_000);
    c.observe({ type: 'gave-up', threadId: 'c', attempts: 6, failedTurnId: 'c2' }, 43_000);
    assert.deepEqual(c.counts(50_000), { recoveries: 3, giveUps: 2, wastedTurns: 2, backoffSeconds: 10 + 20 + 8 + 2 });
    assert.equal(c.waitingNow(), false);
    // Goal d: its backoff heard 2 s after the engine decided it (a slow save before the
    // announcement): the wait is counted from the decision, not from when the export heard it.
    c.observe(backoff('d', 1, 'd1', 60_000), 62_000);
    c.observe({ type: 'recovering', threadId: 'd', attempt: 1, failedTurnId: 'd1' }, 62_500);
    assert.equal(c.counts(70_000).backoffSeconds, 10 + 20 + 8 + 2 + 2.5, 'from its decision: 2.5 s, not 0.5 s');
  });

  it('a person ends a wait: disarmed, re-armed, or the goal needs attention', () => {
    for (const end of [
      { type: 'disarmed', threadId: 'a', reason: 'r' },
      { type: 'rearmed', threadId: 'a', reason: 'r' },
      { type: 'attention', threadId: 'a', reason: 'r' },
    ] as Decision[]) {
      const c = new DecisionCounters();
      c.observe({ type: 'backoff', threadId: 'a', attempt: 1, failedTurnId: 'x', dueAt: 0, delayMs: 0, error: 'e' }, 0);
      c.observe(end, 3_000);
      assert.equal(c.counts(60_000).backoffSeconds, 3, end.type);
    }
  });
});
