// The export's batching: decisions become log records in a bounded queue; every flush interval one
// batch of them goes to `<endpoint>/v1/logs` and the counters to `/v1/metrics`, one request at a
// time. Nothing here blocks or slows the engine (a decision is an array push), and nothing it does
// throws into it: a collector that is down or refuses costs at most the oldest records, counted.
//  - A collector down (no answer, or 429, 502, 503, 504: OTLP's retryable answers) keeps the batch
//    and the next tries come further apart (the interval doubled per failure, up to a minute);
//    another refusal (400, 401, 404, 415, 500…: OTLP's not retryable) drops the batch.
//  - The queue holds `maxQueue` records; past that the oldest are dropped and counted.
//  - One log line when an outage of the collector starts, one when it ends (with what was dropped),
//    never one per request.
//  - `stop()` makes one last try, bounded by a short timeout, then gives up what is left.
// The transport, the clock and the timers are injected (the unit tests run without real time).
import type { Decision } from '../model/decision';
import { DecisionCounters } from './counters';
import { logRecord, logsRequest, metricsRequest, type LogRecord, type ResourceInfo } from './otlp';

/** One POST: resolves with the HTTP status, rejects when no answer came (refused, reset, timed out). */
export type Transport = (url: string, body: string) => Promise<number>;

export interface ExporterOptions {
  logsUrl: string;
  /** Null: no metrics (the destination has no metrics endpoint: docs/telemetry.md). */
  metricsUrl: string | null;
  resource: ResourceInfo;
  transport: Transport;
  /** A line for the owner's log (the runner's lines, the extension's output channel). */
  log(level: 'warning' | 'notice', message: string): void;
  now?: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (timer: unknown) => void;
  intervalMs?: number;
  maxQueue?: number;
  maxBatch?: number;
}

const MAX_RETRY_MS = 60_000;
const MAX_BATCHES_PER_TRY = 4;
const RETRYABLE = new Set([429, 502, 503, 504]);

const unrefTimer = (fn: () => void, ms: number): unknown => setTimeout(fn, ms).unref(); // never holds a process open

export class OtlpExporter {
  private readonly queue: LogRecord[] = [];
  private readonly counters = new DecisionCounters();
  private readonly o: Required<ExporterOptions>;
  private readonly startMs: number;
  private timer: unknown = null;
  private sending: Promise<void> | null = null;
  private stopped = false;
  /** Consecutive failed tries (0: the collector answered the last one). */
  private failures = 0;
  /** Records dropped since the outage began (or since the last line said so). */
  private dropped = 0;
  /** Whether an outage was said (its end is said once too). */
  private outageSaid = false;
  /** Whether records dropped for a full queue were said (once, until the collector next answers). */
  private overflowSaid = false;
  /** Counters changed since the last metrics the collector took. */
  private metricsDirty = true;

  constructor(private readonly opts: ExporterOptions) {
    this.o = {
      now: Date.now,
      setTimer: unrefTimer,
      clearTimer: (t) => clearTimeout(t as NodeJS.Timeout),
      intervalMs: 5_000,
      maxQueue: 2_000,
      maxBatch: 512,
      ...opts,
    };
    this.startMs = this.o.now();
    this.schedule(this.o.intervalMs);
  }

  /** A decision this engine announced: counted, and queued as a record (the oldest dropped when full). */
  decided(d: Decision): void {
    if (this.stopped) return;
    const now = this.o.now();
    this.counters.observe(d, now);
    this.metricsDirty = true;
    this.queue.push(logRecord(d, now));
    this.trim();
  }

  /** How many records wait to be sent (for tests and diagnostics). */
  get queued(): number {
    return this.queue.length;
  }

  /**
   * One try now (the timer's, or a test's): a batch of records, then the counters. Resolves when
   * done, never rejects. A try already under way is waited for instead of starting another.
   */
  flush(): Promise<void> {
    this.sending ??= this.send().finally(() => {
      this.sending = null;
    });
    return this.sending;
  }

  /** Stops the timer and makes a last try within `timeoutMs`; what is left then is given up. */
  async stop(timeoutMs = 2_000): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer !== null) this.o.clearTimer(this.timer);
    this.timer = null;
    // This timer is not unref'd: the last try holds the process open until it ends or times out.
    const set = this.opts.setTimer ?? setTimeout;
    let expire: unknown = null;
    const timedOut = new Promise<void>((resolve) => {
      expire = set(resolve, timeoutMs);
    });
    await Promise.race([(this.sending ?? Promise.resolve()).then(() => this.send()), timedOut]);
    this.o.clearTimer(expire);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.o.setTimer(() => {
      this.timer = null;
      void this.flush().then(() => this.schedule(this.nextDelay()));
    }, ms);
  }

  private nextDelay(): number {
    if (this.failures === 0) return this.o.intervalMs;
    return Math.min(MAX_RETRY_MS, this.o.intervalMs * 2 ** Math.min(this.failures, 16));
  }

  private async send(): Promise<void> {
    // A few batches a try at most: a burst (thousands of goals armed at once) drains over some tries.
    for (let n = 0; n < MAX_BATCHES_PER_TRY && this.queue.length > 0; n++) {
      const batch = this.queue.splice(0, this.o.maxBatch);
      const kept = await this.post(this.o.logsUrl, JSON.stringify(logsRequest(batch, this.o.resource)));
      if (kept === 'ok') continue;
      if (kept === 'retry') this.queue.unshift(...batch);
      else this.dropped += batch.length;
      this.trim(); // the queue grew back by the batch kept, while new decisions came
      return;
    }
    if (this.o.metricsUrl !== null && this.metricsDirty) {
      const now = this.o.now();
      const body = JSON.stringify(metricsRequest(this.counters.counts(now), this.startMs, now, this.o.resource));
      // A cumulative sum is sent again whole next time: nothing to keep on a failure.
      if ((await this.post(this.o.metricsUrl, body)) === 'ok') this.metricsDirty = this.counters.waitingNow();
    }
  }

  /** One request: 'ok' (2xx), 'retry' (no answer, or a retryable status), 'refused' (another status). */
  private async post(url: string, body: string): Promise<'ok' | 'retry' | 'refused'> {
    let outcome: 'ok' | 'retry' | 'refused';
    let why: string;
    try {
      const status = await this.o.transport(url, body);
      outcome = status >= 200 && status < 300 ? 'ok' : RETRYABLE.has(status) ? 'retry' : 'refused';
      why = `HTTP ${status}${status === 415 ? ' (it takes no JSON: OTLP/HTTP protobuf only)' : ''}`;
    } catch (error) {
      outcome = 'retry';
      why = error instanceof Error ? error.message : String(error);
    }
    if (outcome === 'ok') {
      const lost = this.dropped > 0 ? `; ${this.dropped} record(s) dropped meanwhile` : '';
      if (this.outageSaid) this.o.log('notice', `telemetry: the OTLP collector answers again${lost}`);
      this.failures = this.dropped = 0;
      this.outageSaid = this.overflowSaid = false;
    } else {
      this.failures += 1;
      if (this.outageSaid) return outcome;
      this.outageSaid = true;
      const then =
        outcome === 'retry'
          ? `records are kept (up to ${this.o.maxQueue}, the oldest dropped past that) and sent when it answers`
          : 'this batch is dropped';
      this.o.log(
        'warning',
        `telemetry: the OTLP collector at ${url} did not take the export (${why}); ${then}; ` +
          'recovery goes on as before; said once until it answers again',
      );
    }
    return outcome;
  }

  private trim(): void {
    const over = this.queue.length - this.o.maxQueue;
    if (over <= 0) return;
    this.queue.splice(0, over);
    this.dropped += over;
    // A drop while the collector answers (a burst larger than the queue): said once, like an outage.
    if (this.outageSaid || this.overflowSaid) return;
    this.overflowSaid = true;
    this.o.log(
      'warning',
      `telemetry: more decisions than the export queue holds (${this.o.maxQueue}) came between two tries: ` +
        'the oldest records are dropped (said once until the collector next answers)',
    );
  }
}
