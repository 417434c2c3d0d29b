// The connection to the daemon and the resync: connect (and reconnect with backoff when the
// socket is missing or closes), then a full pass over the daemon's loaded threads, again every
// `resyncMs` (what notifications missed, e.g. after a daemon restart).
import { type DaemonSession, RpcError, STATUS_PAGE } from '../protocol/daemon';
import type { TimerHandle } from './clock';
import type { EngineCore } from './engineCore';
import { daemonListener } from './events';
import type { HomeScan } from './homeScan';
import type { Reconciler } from './reconciler';
import { untestedVersionWarning } from '../model/codexVersion';
import { errorText } from '../util/errorText';
import { eachAtMost } from '../util/serial';

/** How many threads a resync looks at side by side (a few requests in flight, not 10,000). */
export const RESYNC_WIDTH = 32;
/** While a resync looks, it saves (then announces) after every so many threads, and at its end. */
const RESYNC_SAVE_EVERY = 256;

export class Connection {
  private reconnectTimer: TimerHandle | null = null;
  private resyncTimer: TimerHandle | null = null;
  private reconnectAttempt = 0;
  /** Sessions whose daemon does not filter `thread/list` by id (0.169.0): statuses are read one by one. */
  private readonly noStatusPages = new WeakSet<DaemonSession>();

  constructor(
    private readonly core: EngineCore,
    private readonly reconciler: Reconciler,
    private readonly home: HomeScan,
  ) {}

  connectNow(): void {
    const core = this.core;
    if (core.stopped || core.session) return;
    this.reconnectTimer = null;
    const generation = ++core.generation;
    core.connection = { kind: 'connecting', detail: 'connecting' };
    core.changed();
    const listener = daemonListener(core, generation, {
      seenActive: this.reconciler.seenActive,
      closed: (reason) => this.lost(reason, 'disconnected'),
    });
    const attempt = core.deps.connect(listener).then(
      async (session) => {
        if (generation !== core.generation || core.stopped) return session.close();
        core.session = session;
        const tries = this.reconnectAttempt;
        this.reconnectAttempt = 0;
        const version = session.codexVersion;
        const warning = untestedVersionWarning(version);
        const detail = version ? `${session.describe} · Codex ${version}` : session.describe;
        core.connection = { kind: 'connected', detail, codexVersion: version, versionWarning: warning };
        core.emit({ type: 'connection', state: 'connected', detail, tries });
        if (warning) core.emit({ type: 'warning', message: warning });
        core.changed();
        core.reschedule();
        await this.resyncOnce();
      },
      (error: unknown) => {
        if (generation === core.generation) this.lost(errorText(error), 'error');
      },
    );
    void core.track(attempt);
  }

  /** A full pass now; while disconnected, a connection attempt now instead of at the reconnect backoff. */
  async resync(): Promise<void> {
    const core = this.core;
    if (!core.session && !core.stopped && core.connection.kind === 'disconnected') {
      // Asked to look now (e.g. the daemon was just started): do not wait for the reconnect backoff.
      if (this.reconnectTimer) core.guard.clearTimer(this.reconnectTimer);
      this.reconnectAttempt = 0;
      this.connectNow();
      await core.idle();
      return;
    }
    await core.track(this.resyncOnce());
  }

  /** New settings: the resync timer follows the new interval. */
  updateOptions(): void {
    if (this.core.stopped || !this.core.session) return;
    this.armResync();
  }

  /** No resync and no reconnect any more (stopping). */
  stopTimers(): void {
    const guard = this.core.guard;
    for (const timer of [this.resyncTimer, this.reconnectTimer]) if (timer) guard.clearTimer(timer);
    this.resyncTimer = this.reconnectTimer = null;
  }

  /** Stops the timers and closes the session. */
  async close(): Promise<void> {
    this.stopTimers();
    const session = this.core.session;
    this.core.session = null;
    await session?.close();
  }

  private armResync(): void {
    if (this.resyncTimer) this.core.guard.clearTimer(this.resyncTimer);
    this.resyncTimer = this.core.guard.setTimer(() => void this.resync(), this.core.options.resyncMs);
  }

  private lost(reason: string, kind: 'error' | 'disconnected'): void {
    const core = this.core;
    core.generation += 1; // whatever the old connection still delivers is dropped
    core.session = null;
    // What the old connection told is stale: it is read again after reconnecting.
    core.live.clear();
    if (core.stopped) return;
    const { reconnectBaseMs, reconnectMaxMs } = core.options;
    const delay = Math.min(reconnectMaxMs, reconnectBaseMs * 2 ** this.reconnectAttempt);
    this.reconnectAttempt += 1;
    const retryAt = core.now() + delay;
    core.connection = { kind: 'disconnected', detail: reason, retryAt };
    core.emit({
      type: 'connection',
      state: kind,
      detail: `${reason}; reconnecting in ${Math.round(delay / 100) / 10} s`,
      tries: this.reconnectAttempt,
    });
    core.changed();
    // The reconnect timer alone tries again, at its backoff: the resync's timer would try at once
    // and start the backoff over (a person's Refresh does that, on purpose). Connected, it runs again.
    this.stopTimers();
    this.reconnectTimer = this.core.guard.setTimer(() => this.connectNow(), delay);
  }

  private async resyncOnce(): Promise<void> {
    const core = this.core;
    const session: DaemonSession | null = core.session;
    if (!session || core.stopped) return;
    this.armResync();
    let ids: string[];
    try {
      ids = await session.listLoaded();
    } catch (error) {
      core.readFailed('thread/loaded/list', error);
      return;
    }
    const loaded = new Set(ids);
    for (const w of core.watches()) {
      if (!loaded.has(w.threadId)) {
        core.liveOf(w.threadId).loaded = false;
        this.reconciler.markUnloaded(w);
      }
    }
    await this.readStatuses(session, ids);
    // What the looks decide is saved and announced every RESYNC_SAVE_EVERY threads, not at every
    // turn of the event loop (a save between two looks holds what they decided, whoever asked).
    const letGo = core.holdSaves();
    let looked = 0;
    try {
      await eachAtMost(ids, RESYNC_WIDTH, async (id) => {
        await core.work.add(id, { kind: 'refresh', session });
        if (++looked % RESYNC_SAVE_EVERY === 0) void core.track(core.persist());
      });
    } finally {
      letGo();
    }
    // Then the goals of the Codex home that live in other Codex apps.
    try {
      await this.home.scan(session, loaded);
    } catch (error) {
      core.readFailed('thread/list', error);
    }
    core.reschedule();
    await core.persist();
  }

  /**
   * The statuses of the loaded threads not subscribed yet (those the resync may arm), read in
   * pages of `STATUS_PAGE` (measured: the live status `thread/read` gives, docs/daemon-behaviour.md
   * (n)) instead of one `thread/read` each when the arming subscribes: a status that says a turn
   * runs lets it resume at once. A status an event brought meanwhile is newer, and kept. Where
   * the daemon does not filter by id (0.169.0), nothing is read here: the arming reads each thread.
   */
  private async readStatuses(session: DaemonSession, ids: readonly string[]): Promise<void> {
    const core = this.core;
    if (this.noStatusPages.has(session)) return;
    const unsubscribed = ids.filter((id) => !core.liveOf(id).subscribed);
    for (let from = 0; from < unsubscribed.length; from += STATUS_PAGE) {
      const page = unsubscribed.slice(from, from + STATUS_PAGE);
      const seqs = page.map((id) => core.liveOf(id).seq);
      let threads;
      try {
        threads = await session.readThreads(page);
      } catch (error) {
        // Said in the log; refused: this connection reads each thread, as before. Lost: the
        // reconnect and its resync take over.
        core.readFailed('thread/list', error);
        if (error instanceof RpcError) this.noStatusPages.add(session);
        return;
      }
      if (threads === null) {
        this.noStatusPages.add(session);
        return;
      }
      const byId = new Map(threads.map((t) => [t.id, t]));
      page.forEach((id, i) => {
        const live = core.liveOf(id);
        const thread = byId.get(id);
        if (thread && live.seq === seqs[i] && !live.subscribed) live.status = thread.status;
      });
    }
  }
}
