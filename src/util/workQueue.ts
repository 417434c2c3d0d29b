// A work queue per key, with client-go's semantics (k8s.io/client-go/util/workqueue: add, get,
// done): work on different keys runs side by side, work on one key never overlaps and runs in the
// order it was added. Work that merges (a job of a kind that says so) is not queued twice: an add
// while a job of its kind waits for the same key joins the waiting one, which will see whatever the
// new add was about; an add while one is under way waits behind it and runs after it (nothing added
// is lost, nothing runs twice at once). A delayed add waits on a timer first (client-go's AddAfter)
// and can be taken back before it is due. Failures reach the add's caller only: the key's next job
// starts all the same. Imports nothing.

/** A job: its `kind` names it for `has`, `cancel` and merging. */
export interface Job {
  readonly kind: string;
}

export interface QueueTimers {
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

interface Entry<J> {
  readonly job: J;
  readonly done: Promise<void>;
  settle(error: Error | null): void;
}

interface KeyWork<J> {
  readonly waiting: Entry<J>[];
  current: J | null;
  /** Delayed adds by kind, their timers running. */
  readonly delayed: Map<string, { readonly job: J; readonly timer: unknown }>;
}

export interface WorkQueueOptions<J extends Job> {
  /** Processes one job of a key; never called for a key while it processes another. */
  process(key: string, job: J): Promise<void>;
  /** Whether an add of this job joins one of its kind already waiting for the key. */
  merges(job: J): boolean;
  /** A job of the key is done (client-go's Done): it no longer counts in `has`; its caller is told next. */
  done?(key: string, job: J): void;
  /** Every job queued (a delayed add once it is due), as the promise of its end: whoever waits for all work. */
  track?(done: Promise<void>): void;
  timers: QueueTimers;
}

export class WorkQueue<J extends Job> {
  private readonly keys = new Map<string, KeyWork<J>>();

  constructor(private readonly options: WorkQueueOptions<J>) {}

  /** Queues `job` for `key`; resolves or rejects as it does (a merged add: as the job it joined). */
  add(key: string, job: J): Promise<void> {
    const work = this.workOf(key);
    if (this.options.merges(job)) {
      const waiting = work.waiting.find((e) => e.job.kind === job.kind);
      if (waiting) return waiting.done;
    }
    let settle!: (error: Error | null) => void;
    const done = new Promise<void>((resolve, reject) => {
      settle = (error) => (error === null ? resolve() : reject(error));
    });
    work.waiting.push({ job, done, settle });
    this.options.track?.(done);
    if (work.current === null && work.waiting.length === 1) void this.drain(key, work);
    return done;
  }

  /**
   * Adds `job` after `ms` (a delayed add of the same kind for the key is replaced). What the job
   * does is the processor's to report: the delayed add has no caller to tell.
   */
  addAfter(key: string, job: J, ms: number): void {
    const work = this.workOf(key);
    const replaced = work.delayed.get(job.kind);
    if (replaced) this.options.timers.clearTimer(replaced.timer);
    const timer = this.options.timers.setTimer(() => {
      work.delayed.delete(job.kind);
      this.add(key, job).catch(() => undefined);
    }, ms);
    work.delayed.set(job.kind, { job, timer });
  }

  /** Takes back every delayed add of this kind not yet due, on every key: the jobs, with their keys. */
  takeBack<K extends J['kind']>(kind: K): { key: string; job: Extract<J, { kind: K }> }[] {
    const taken: { key: string; job: Extract<J, { kind: K }> }[] = [];
    for (const [key, work] of [...this.keys]) {
      const delayed = work.delayed.get(kind);
      if (!delayed) continue;
      this.options.timers.clearTimer(delayed.timer);
      work.delayed.delete(kind);
      taken.push({ key, job: delayed.job as Extract<J, { kind: K }> }); // its kind is `kind`
      this.forgetIfIdle(key, work);
    }
    return taken;
  }

  /** A job of this kind is under way, waits, or is delayed for the key. */
  has(key: string, kind: string): boolean {
    const work = this.keys.get(key);
    if (!work) return false;
    return work.current?.kind === kind || work.delayed.has(kind) || work.waiting.some((e) => e.job.kind === kind);
  }

  /** The keys with a job of `kind` under way, waiting or delayed. */
  *keysWith(kind: string): Generator<string> {
    for (const key of this.keys.keys()) if (this.has(key, kind)) yield key;
  }

  /** Some job of the key is under way, waits or is delayed. */
  busy(key: string): boolean {
    return this.keys.has(key);
  }

  /** How many keys have work under way, waiting or delayed. */
  get size(): number {
    return this.keys.size;
  }

  private workOf(key: string): KeyWork<J> {
    const work = this.keys.get(key) ?? { waiting: [], current: null, delayed: new Map() };
    this.keys.set(key, work); // a key already there keeps its place in the order
    return work;
  }

  /** The key's worker: its jobs one at a time, in order, until none waits (client-go's get and done). */
  private async drain(key: string, work: KeyWork<J>): Promise<void> {
    await Promise.resolve(); // never inside the add that started it
    for (let entry = work.waiting.shift(); entry; entry = work.waiting.shift()) {
      work.current = entry.job;
      let failure: Error | null = null;
      try {
        await this.options.process(key, entry.job);
      } catch (error) {
        failure = error instanceof Error ? error : new Error(`${entry.job.kind} failed`, { cause: error });
      }
      work.current = null;
      this.options.done?.(key, entry.job);
      entry.settle(failure);
    }
    this.forgetIfIdle(key, work);
  }

  private forgetIfIdle(key: string, work: KeyWork<J>): void {
    if (work.current === null && work.waiting.length === 0 && work.delayed.size === 0 && this.keys.get(key) === work)
      this.keys.delete(key);
  }
}
