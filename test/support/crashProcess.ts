// The process model of the crash world (test/support/crashWorld.ts): what an engine's life runs
// on and what a crash or a stall does to it: its timers (a ScopedClock on the world's clock),
// its disk (a DurableStore that models fsync) and its sockets (a Gate that a stall freezes).
import type { Clock, TimerHandle } from '../../src/core/clock';
import { emptyState, type PersistedState } from '../../src/model/watch';
import { LineMessageReader, LineMessageWriter } from '../../src/protocol/lineFraming';
import type { Transport } from '../../src/protocol/transport';
import type { LoadResult, StateStore } from '../../src/store/store';
import { PassThrough } from 'node:stream';
import type { FakeClock } from './fakeClock';
import type { FakeConnection } from './fakeDaemon';

/** A timer that fell due while its life was frozen: it fires when the life wakes. */
interface Overdue {
  handle: TimerHandle;
  callback: () => void;
  quiet: boolean;
}

/**
 * A clock for one life: its timers die with it. Frozen (a stalled process: SIGSTOP, a blocked
 * event loop), its timers that fall due fire nothing; they fire, in the order they fell due, when
 * the life wakes. A `quiet` timer (the lease's renewal) sets nothing in motion for the world to
 * wait for: `busy.fired` counts only the others, so the driver need not let the engine react to
 * every renewal.
 */
export class ScopedClock implements Clock {
  private readonly handles = new Set<TimerHandle>();
  private dead = false;
  private frozen = false;
  private overdue: Overdue[] = [];

  constructor(
    private readonly base: FakeClock,
    private readonly busy: { fired: number } = { fired: 0 },
  ) {}

  now(): number {
    return this.base.now();
  }
  elapsed(): number {
    return this.base.elapsed();
  }

  setTimer(callback: () => void, delayMs: number, quiet = false): TimerHandle {
    if (this.dead) return { id: -1 };
    const handle = this.base.setTimer(() => {
      this.handles.delete(handle);
      if (this.dead) return;
      if (this.frozen) {
        this.overdue.push({ handle, callback, quiet });
        return;
      }
      if (!quiet) this.busy.fired += 1;
      callback();
    }, delayMs);
    this.handles.add(handle);
    return handle;
  }

  clearTimer(handle: TimerHandle): void {
    this.handles.delete(handle);
    this.base.clearTimer(handle);
    this.overdue = this.overdue.filter((o) => o.handle.id !== handle.id);
  }

  kill(): void {
    this.dead = true;
    for (const h of this.handles) this.base.clearTimer(h);
    this.handles.clear();
    this.overdue = [];
  }

  /** The process stops: no timer of it fires until `wake`. */
  freeze(): void {
    this.frozen = true;
  }

  /** The timers that fell due while frozen, in order: how many come before the first quiet one. */
  overdueBeforeQuiet(): { total: number; beforeQuiet: number } {
    const q = this.overdue.findIndex((o) => o.quiet);
    return { total: this.overdue.length, beforeQuiet: q === -1 ? this.overdue.length : q };
  }

  /**
   * The process runs again: the timers that fell due meanwhile fire first, one at a time in the
   * order they fell due (a timer cleared by an earlier one does not fire), with `between` (the
   * microtasks) after each, as Node runs its timers phase before it reads any socket.
   */
  async wake(between: () => Promise<void>): Promise<void> {
    this.frozen = false;
    for (let next = this.overdue.shift(); next; next = this.overdue.shift()) {
      if (this.dead) return;
      if (!next.quiet) this.busy.fired += 1;
      next.callback();
      await between();
    }
  }
}

/** A store that models fsync: `durable` is what a crash leaves. */
export class DurableStore implements StateStore {
  readonly location = 'durable memory store';
  durable: PersistedState;
  /** Called at every save, before anything is written (the world judges who saves when). */
  onSave: (() => void) | null = null;
  private writing: PersistedState | null = null;
  private dead = false;
  /** Frozen: saves reach the disk, but their completions wait for `release` (the process is stopped). */
  private held: (() => void)[] | null = null;

  constructor(durable: PersistedState = emptyState()) {
    this.durable = structuredClone(durable);
  }

  load(): Promise<LoadResult> {
    return Promise.resolve({ state: structuredClone(this.durable), problem: null });
  }

  /** Taken at the call (like a serializer), durable one macrotask later (like an fsync). */
  save(state: PersistedState): Promise<void> {
    this.onSave?.();
    const copy = structuredClone(state);
    if (this.dead) return new Promise<void>(() => undefined); // the process is gone: never answers
    this.writing = copy;
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        if (this.dead) return;
        this.durable = copy;
        if (this.writing === copy) this.writing = null;
        if (this.held) this.held.push(resolve);
        else resolve();
      }),
    );
  }

  /** The crash: a save under way reached the disk or not (`reached`); nothing more is written. */
  crash(reached: boolean): PersistedState {
    if (this.writing && reached) this.durable = this.writing;
    this.writing = null;
    this.dead = true;
    return structuredClone(this.durable);
  }

  /** The process stops: what it is writing reaches the disk, but it hears of it only after `release`. */
  freeze(): void {
    this.held ??= [];
  }

  /** The process runs again: the saves that completed meanwhile resolve, in order. */
  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const resolve of held) resolve();
  }
}

/**
 * What a connection delivers to its engine, gated: while its process is frozen the daemon's lines
 * (and the end of the connection) queue up unread, as in a stopped process's socket buffer; `open`
 * delivers them in order. What the engine writes goes through `tap` first.
 */
export class Gate {
  readonly inbox = new PassThrough();
  private ended = false;
  private held: Array<{ chunk: Buffer | string } | { end: true } | { close: string }> | null = null;
  private readonly closeCallbacks: ((reason: string) => void)[] = [];

  constructor(readonly c: FakeConnection) {
    c.toClient.on('data', (chunk: Buffer | string) => {
      if (this.held) this.held.push({ chunk });
      else this.inbox.write(chunk);
    });
    c.toClient.on('end', () => {
      if (this.held) this.held.push({ end: true });
      else this.end();
    });
    c.onClose((reason) => {
      if (this.held) this.held.push({ close: reason });
      else for (const cb of this.closeCallbacks.splice(0)) cb(reason);
    });
  }

  transport(tap: (line: string) => boolean): Transport {
    class TappedWriter extends LineMessageWriter {
      protected override send(text: string, done: (err?: Error | null) => void): void {
        if (tap(text)) super.send(text, done);
        else done(); // dropped: the judge refused it (the run fails)
      }
    }
    return {
      reader: new LineMessageReader(this.inbox),
      writer: new TappedWriter(this.c.fromClient),
      describe: 'fake daemon (gated)',
      onClose: (cb) => {
        if (this.c.closedReason !== null && !this.held) cb(this.c.closedReason);
        else this.closeCallbacks.push(cb);
      },
      close: () => {
        this.c.close('closed by client');
        return Promise.resolve();
      },
    };
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.inbox.end();
  }

  freeze(): void {
    this.held ??= [];
  }

  /** Lines queued while frozen. */
  get queued(): number {
    return this.held?.filter((h) => 'chunk' in h).length ?? 0;
  }

  open(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const h of held) {
      if ('chunk' in h) {
        if (!this.ended) this.inbox.write(h.chunk);
      } else if ('end' in h) this.end();
      else for (const cb of this.closeCallbacks.splice(0)) cb(h.close);
    }
  }
}

/** Lets the microtasks queued so far run (and those they queue), as between two timers. */
export async function microtasks(): Promise<void> {
  for (let i = 0; i < 64; i++) await Promise.resolve();
}
