// Saving, and announcing after it: durable before announced. Every decision and every change a
// view shows waits in the outbox until the save that holds it has resolved. Saves are serialized
// (one `Serial`); callers that come while a save waits to start share it. A save writes only the
// watches marked since the last one (every state change, event and decision marks its thread).
import type { Decision } from '../model/decision';
import type { PersistedState } from '../model/watch';
import type { StateStore } from '../store/store';
import { Serial } from '../util/serial';
import type { Clock, TimerHandle } from './clock';
import { errorText } from '../util/errorText';

export interface SaverDeps {
  store: StateStore;
  clock: Clock;
  onDecision: (decision: Decision) => void;
  onChange?: () => void;
  /** The state to save, as it is when the save starts. */
  state: () => PersistedState;
  /** Keeps a promise among the work under way (the engine's `idle()` waits for it). */
  track: <T>(promise: Promise<T>) => Promise<T>;
  /** The engine is stopping: no lazy save is started any more. */
  stopped: () => boolean;
  /** Null while this engine may save and announce; else why not (EngineDeps.fence). */
  fence: () => string | null;
}

/** How long a save that can wait (`persistSoon`) waits for others to share it. */
const LAZY_SAVE_MS = 1_000;

export class Saver {
  private readonly saving = new Serial();
  /** A save queued behind the one being written, not started yet: later callers share it. */
  private queuedSave: Promise<boolean> | null = null;
  /** The pending lazy save (`persistSoon`), if any. */
  private lazySave: TimerHandle | null = null;
  /** Decisions made but not announced yet: each goes out once the save that holds it resolved. */
  private readonly outbox: Decision[] = [];
  /** Likewise for the views. */
  private viewsStale = false;
  /** Threads whose watch may have changed since the last save (`allDirty`: every one). */
  private readonly dirty = new Set<string>();
  private allDirty = false;
  /** How long the recent saves took. */
  private readonly saveMs: number[] = [];
  /** Passes holding the saves that can wait (`hold`), and whether one was asked for meanwhile. */
  private holds = 0;
  private heldSave = false;

  constructor(private readonly deps: SaverDeps) {}

  /** The thread's watch may differ from what was saved: the next save writes it. */
  mark(threadId: string): void {
    this.dirty.add(threadId);
  }

  /** Every watch may differ (a reset, a failed save): the next save looks at them all. */
  markAll(): void {
    this.allDirty = true;
  }

  /** The slowest of the recent saves, ms (0 before the first). */
  slowestMs(): number {
    return Math.max(0, ...this.saveMs);
  }

  /** Every decision goes out through the outbox: after the save that holds it. */
  emit(decision: Decision): void {
    // The thread it speaks of is saved with it, whatever else marked it or not.
    if ('threadId' in decision && decision.threadId !== undefined && decision.threadId !== '*')
      this.dirty.add(decision.threadId);
    this.outbox.push(decision);
    this.commitSoon();
  }

  /** Something a view shows changed: the views hear of it after the save that holds it. */
  changed(): void {
    this.viewsStale = true;
    this.commitSoon();
  }

  /** Says something at once, outside the outbox (a warning about the store itself, at the end). */
  deliver(decision: Decision): void {
    try {
      this.deps.onDecision(decision);
    } catch {
      // A view's failure must not stop the engine or lose the next announcements.
    }
  }

  /**
   * A save that can wait a little (what follows a set: the write-ahead intent is on disk
   * already, and after a crash the daemon's state decides): one save for every such change
   * within `LAZY_SAVE_MS`, so a busy disk is not asked for one fsync per recovery twice.
   */
  persistSoon(): void {
    if (this.lazySave || this.deps.stopped()) return;
    this.lazySave = this.deps.clock.setTimer(() => {
      this.lazySave = null;
      void this.persist();
    }, LAZY_SAVE_MS);
  }

  /**
   * Saves the state, durably, then announces what was decided before the save began (decision
   * lines, the views): nothing is announced that a crash could take back. Callers that come
   * while a save is waiting to start share it: it takes the state as it is when it starts, so it
   * holds every change made before any of them called. Resolves to whether the save succeeded
   * (a failure is announced as a warning, with what it held).
   */
  persist(batch = false): Promise<boolean> {
    if (this.lazySave) {
      // This save covers what the lazy one would have.
      this.deps.clock.clearTimer(this.lazySave);
      this.lazySave = null;
    }
    if (this.queuedSave) return this.queuedSave;
    const run = this.saving.run(async () => {
      if (batch) await nextTurn();
      return this.saveNow();
    });
    this.queuedSave = run;
    return run;
  }

  private async saveNow(): Promise<boolean> {
    this.queuedSave = null;
    this.heldSave = false; // this save holds whatever a hold kept back so far
    const started = this.deps.clock.elapsed(); // a duration: the wall clock may jump meanwhile
    const announce = this.outbox.splice(0);
    const views = this.viewsStale || announce.length > 0;
    this.viewsStale = false;
    // What may differ from the last save: the marked threads. Not every thread with work under
    // way: while thousands are armed at once, that re-serialized them all at every save.
    const changed = this.allDirty ? undefined : new Set(this.dirty);
    this.dirty.clear();
    this.allDirty = false;
    let failure: Decision | null = null;
    // A leader whose lease ran out saves nothing and announces nothing: another engine may be
    // leading with the same store by now (src/leader/lease.ts). It is stepping down.
    if (this.deps.fence() !== null) return false;
    try {
      await this.deps.store.save(this.deps.state(), changed);
      this.saveMs.push(this.deps.clock.elapsed() - started);
      if (this.saveMs.length > 16) this.saveMs.shift();
    } catch (error) {
      // Everything may differ from what is on disk now: the next save writes it all.
      this.allDirty = true;
      failure = {
        type: 'warning',
        message: `could not save state to ${this.deps.store.location}: ${errorText(error)}`,
      };
    }
    // Announced even when the save failed (with the warning saying so): never silently lost;
    // but never by a leader that lost its lease while it saved.
    if (this.deps.fence() !== null) return false;
    for (const d of announce) this.deliver(d);
    if (failure) this.deliver(failure);
    if (views) this.deps.onChange?.();
    return failure === null;
  }

  /**
   * Announces soon: after the save that holds what was decided so far. That save starts once the
   * event loop has run what is ready now (the replies already received, and what they lead to):
   * when thousands of threads are armed at once, one save holds what all of them decided in that
   * turn, instead of one save for each (with 10,000, about two saves per thread on a fast disk).
   */
  private commitSoon(): void {
    if (this.holds > 0) {
      // Saved by the pass's next save, and within LAZY_SAVE_MS whatever the pass does (a look
      // may wait up to a request's timeout).
      this.heldSave = true;
      this.persistSoon();
      return;
    }
    void this.deps.track(this.persist(true));
  }

  /**
   * Holds the saves that can wait (`commitSoon`: announcements, views) while a pass looks at
   * many threads: what they decide is saved, then announced, by the pass's own saves (it calls
   * `persist` every so many threads, and at its end) or by any other save, instead of one save
   * per turn of the event loop (arming 10,000 threads 32 at a time: 1,300 saves, each with its
   * fdatasync, against 40), or by a lazy save (`persistSoon`) at most LAZY_SAVE_MS later. Nothing
   * is announced before it is saved. The returned function lets go (once); the last to let go
   * saves what was held.
   */
  hold(): () => void {
    this.holds += 1;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.holds -= 1;
      if (this.holds === 0 && this.heldSave) {
        this.heldSave = false;
        this.commitSoon();
      }
    };
  }

  /** A clean stop leaves one snapshot (a journal, if the store keeps one, folded into it). */
  async compact(): Promise<void> {
    if (this.deps.fence() !== null) {
      // Nothing folded or written; but the files the store holds open are let go of: a stale
      // leader's engine is dropped, and Node would close its journal's descriptor on garbage
      // collection with a warning on the runner's stderr (test/faults/stalls.test.ts).
      await this.deps.store.close?.().catch(() => undefined);
      return;
    }
    await this.deps.store.compact?.().catch((error: unknown) => {
      this.deliver({
        type: 'warning',
        message: `could not compact the state in ${this.deps.store.location}: ${errorText(error)}`,
      });
    });
  }
}

/** Resolves once the event loop has run what is ready now (I/O callbacks included). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
