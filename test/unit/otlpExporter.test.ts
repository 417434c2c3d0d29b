// The export's queue and tries, with a fake transport and the timers in the test's hands (no real
// time): batches go out at the flush interval, a collector down keeps the records (bounded, the
// oldest dropped and counted) and is said once per outage, never per request; a refusal drops its
// batch; the tries come further apart while it is down; stop makes one last, bounded try.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Decision } from '../../src/model/decision';
import { OtlpExporter, type Transport } from '../../src/telemetry/exporter';
import { immediate } from '../support/wait';

interface Sent {
  url: string;
  body: { resourceLogs?: { scopeLogs: { logRecords: { attributes: { key: string; value: unknown }[] }[] }[] }[] };
}

/** Timers run by hand: `fire()` runs the one due next and says after how long. */
class Timers {
  private next = 1;
  readonly pending = new Map<number, { fn: () => void; ms: number }>();
  set = (fn: () => void, ms: number) => {
    const id = this.next++;
    this.pending.set(id, { fn, ms });
    return id;
  };
  clear = (id: unknown) => void this.pending.delete(id as number);
  /** Runs the timer set first among those pending; returns its delay. */
  fire(): number {
    const [id, t] = [...this.pending.entries()][0];
    this.pending.delete(id);
    t.fn();
    return t.ms;
  }
}

/** A collector: answers each request with `answer()` (a status, or a thrown error: no answer). */
function collector(answer: () => number) {
  const sent: Sent[] = [];
  const transport: Transport = (url, body) => {
    sent.push({ url, body: JSON.parse(body) as Sent['body'] });
    try {
      return Promise.resolve(answer());
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  };
  return { sent, transport };
}

const settle = immediate;
const armed = (n: number): Decision => ({ type: 'armed', threadId: `t${n}`, title: 'x' });
const ids = (s: Sent) =>
  s.body.resourceLogs![0].scopeLogs[0].logRecords.map(
    (r) => (r.attributes.find((a) => a.key === 'conversation.id')!.value as { stringValue: string }).stringValue,
  );

function exporter(transport: Transport, timers: Timers, lines: string[], maxQueue = 5) {
  return new OtlpExporter({
    logsUrl: 'http://c/v1/logs',
    metricsUrl: 'http://c/v1/metrics',
    resource: { version: '0' },
    transport,
    log: (level, message) => lines.push(`${level}: ${message}`),
    now: () => 0,
    setTimer: timers.set,
    clearTimer: timers.clear,
    intervalMs: 1000,
    maxQueue,
    maxBatch: 3,
  });
}

describe('the OTLP exporter', () => {
  it('sends the queued records at the interval, then the counters; nothing when nothing changed', async () => {
    const timers = new Timers();
    const c = collector(() => 200);
    const lines: string[] = [];
    const e = exporter(c.transport, timers, lines);
    e.decided(armed(1));
    e.decided(armed(2));
    assert.equal(c.sent.length, 0, 'sent before the interval');
    assert.equal(timers.fire(), 1000);
    await settle();
    assert.deepEqual(
      c.sent.map((s) => s.url),
      ['http://c/v1/logs', 'http://c/v1/metrics'],
    );
    assert.deepEqual(ids(c.sent[0]), ['t1', 't2']);
    assert.equal(e.queued, 0);
    assert.equal(timers.fire(), 1000);
    await settle();
    assert.equal(c.sent.length, 2, 'sent again with nothing new');
    assert.deepEqual(lines, []);
  });

  it('a collector down: the records kept (the oldest dropped past the bound), one line per outage, tries further apart', async () => {
    const timers = new Timers();
    let down = true;
    const c = collector(() => {
      if (down) throw new Error('connect ECONNREFUSED 127.0.0.1:4318');
      return 200;
    });
    const lines: string[] = [];
    const e = exporter(c.transport, timers, lines);
    for (let i = 1; i <= 4; i++) e.decided(armed(i));
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      delays.push(timers.fire());
      await settle();
    }
    // Each try sent one batch (the first three), got no answer, and kept it.
    assert.equal(c.sent.length, 4);
    assert.deepEqual(delays, [1000, 2000, 4000, 8000]);
    assert.equal(e.queued, 4);
    for (let i = 5; i <= 7; i++) e.decided(armed(i)); // 7 > 5: the two oldest go
    assert.equal(e.queued, 5);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(
      lines[0],
      /^warning: telemetry: the OTLP collector at http:\/\/c\/v1\/logs did not take the export \(connect ECONNREFUSED 127\.0\.0\.1:4318\); records are kept \(up to 5/,
    );
    down = false;
    timers.fire();
    await settle();
    assert.deepEqual(ids(c.sent[4]), ['t3', 't4', 't5']);
    assert.deepEqual(ids(c.sent[5]), ['t6', 't7']);
    assert.equal(c.sent[6].url, 'http://c/v1/metrics');
    assert.deepEqual(lines.slice(1), [
      'notice: telemetry: the OTLP collector answers again; 2 record(s) dropped meanwhile',
    ]);
    assert.equal(timers.fire(), 1000, 'the interval back to normal');
  });

  it('a refusal (500, not retryable in OTLP): the batch dropped, said once; 503 keeps it', async () => {
    const timers = new Timers();
    let status = 500;
    const c = collector(() => status);
    const lines: string[] = [];
    const e = exporter(c.transport, timers, lines);
    e.decided(armed(1));
    timers.fire();
    await settle();
    assert.equal(e.queued, 0);
    e.decided(armed(2));
    timers.fire();
    await settle();
    assert.equal(lines.length, 1);
    assert.match(lines[0], /did not take the export \(HTTP 500\); this batch is dropped/);
    status = 503;
    e.decided(armed(3));
    timers.fire();
    await settle();
    assert.equal(e.queued, 1, 'a 503 dropped the batch');
    assert.equal(lines.length, 1, 'said again within one outage');
  });

  it('a burst larger than the queue: the oldest dropped, said once', () => {
    const timers = new Timers();
    const lines: string[] = [];
    const e = exporter(collector(() => 200).transport, timers, lines);
    for (let i = 1; i <= 12; i++) e.decided(armed(i));
    assert.equal(e.queued, 5);
    assert.equal(lines.length, 1);
    assert.match(lines[0], /more decisions than the export queue holds \(5\)/);
  });

  it('stop: one last try of what is left, bounded; nothing after it', async () => {
    const timers = new Timers();
    const c = collector(() => 200);
    const e = exporter(c.transport, timers, []);
    e.decided(armed(1));
    await e.stop(500);
    assert.deepEqual(ids(c.sent[0]), ['t1']);
    assert.equal(timers.pending.size, 0, 'a timer left');
    e.decided(armed(2));
    assert.equal(e.queued, 0);
    // A collector that never answers: stop ends at its timeout.
    const hung = new OtlpExporter({
      logsUrl: 'http://c/v1/logs',
      metricsUrl: null,
      resource: { version: '0' },
      transport: () => new Promise<number>(() => undefined),
      log: () => undefined,
      setTimer: timers.set,
      clearTimer: timers.clear,
    });
    hung.decided(armed(3));
    const stopped = hung.stop(700);
    await settle();
    assert.equal(timers.fire(), 700);
    await stopped;
  });
});
