// Every goal of the Codex home, not only the daemon's. Threads another Codex app holds (the Codex
// VS Code extension and the desktop app run their own `codex app-server`; so does the TUI with
// `-c` or `--profile`) live in the same state DB, which the daemon reads: `thread/list` lists them
// as `notLoaded`, and their goal and turns can be read. Measured (docs/daemon-behaviour.md (k)):
// no notification about them reaches a client of the daemon, and a thread's `updatedAt` moves
// with every turn and goal change. So each resync lists the threads updated since the last look,
// newest first, stopping at the last look's mark, and reads the goal only of those that moved:
// nothing is polled per thread. The first look of an engine reaches back `LOOKBACK_MS`, and to
// every goal it showed there before it stopped. The rows that decide are `elsewhere` in policy.ts.
import { newWatch, type Watch } from '../model/watch';
import { type DaemonSession, RpcError, type Thread } from '../protocol/daemon';
import type { EngineCore } from './engineCore';
import { elsewhere, type ElsewhereVerdict } from './elsewherePolicy';
import { applyThread, goalSnapshot, notMaterialized } from './reads';
import { shownElsewhere } from './transitions';
import { goalSeen } from './watchWrites';

/** Threads per `thread/list` page: the first look reads far back; later ones stop at the mark, mostly on page one. */
const FIRST_PAGE = 100;
const NEXT_PAGE = 25;
/** How far back the first look of an engine reaches: a goal stopped longer ago is not news. */
export const LOOKBACK_MS = 7 * 24 * 3600 * 1000;
/** `updatedAt` is in whole seconds: the next look lists again from a little before the mark. */
const SLACK_SECONDS = 2;
/** Wall-clock vs monotonic drift below this is NTP slewing or timer slack, not the clock set back. */
const JUMP_MS = 2_000;
/** Goals shown when first found outside the daemon; others are shown only while already watched. */
const SHOWN = new Set(['active', 'blocked', 'usageLimited']);

export class HomeScan {
  /** The newest `updatedAt` (unix seconds) listed so far; null before the first look. */
  private mark: number | null = null;
  /** Each thread's `updatedAt` at its last read: listed unchanged, it is not read again. */
  private readonly read = new Map<string, number>();
  /** Both clocks at the last look: the wall clock set back since then shows as their difference. */
  private lookedAt: { wall: number; mono: number } | null = null;

  constructor(private readonly core: EngineCore) {}

  /** Forgets the marks: the next look reads everything in reach again (a reconnect, a reset). */
  reset(): void {
    this.mark = null;
    this.read.clear();
  }

  /** One look over the home, after the pass over the daemon's loaded threads. */
  async scan(session: DaemonSession, loaded: ReadonlySet<string>): Promise<void> {
    const core = this.core;
    const wall = core.now();
    const mono = core.deps.clock.elapsed();
    // The wall clock set back since the last look: the other apps write updatedAt from it, so what
    // changed since is older than the mark by as much.
    const back = this.lookedAt ? this.lookedAt.wall + (mono - this.lookedAt.mono) - wall : 0;
    if (this.mark !== null && back > JUMP_MS) this.mark -= Math.ceil(back / 1000);
    this.lookedAt = { wall, mono };
    const first = this.mark === null;
    const floor = first ? Math.floor((core.now() - LOOKBACK_MS) / 1000) : (this.mark ?? 0) - SLACK_SECONDS;
    let newest = this.mark ?? 0;
    const moved: Thread[] = [];
    let cursor: string | null = null;
    do {
      const page = await session.listThreads(cursor, first ? FIRST_PAGE : NEXT_PAGE);
      cursor = page.nextCursor;
      for (const t of page.threads) {
        if (t.updatedAt < floor) {
          cursor = null; // newest first: the rest is older still
          break;
        }
        newest = Math.max(newest, t.updatedAt);
        if (loaded.has(t.id) || t.status.type !== 'notLoaded') continue;
        if (this.read.get(t.id) !== t.updatedAt) moved.push(t);
      }
    } while (cursor);
    if (first) {
      // Goals shown outside the daemon before this engine started, out of the list's reach now.
      const listed = new Set(moved.map((t) => t.id));
      for (const w of core.watches())
        if (w.state.kind === 'elsewhere' && !listed.has(w.threadId) && !loaded.has(w.threadId))
          try {
            moved.push(await session.readThread(w.threadId));
          } catch (error) {
            // One the daemon cannot read (gone from the home?) stays as shown: the look goes on.
            if (!(error instanceof RpcError)) throw error;
            core.emit({
              type: 'warning',
              threadId: w.threadId,
              message: `could not read a goal shown in another Codex app: ${error.message}`,
            });
          }
    }
    for (const t of moved) await core.run(t.id, () => this.look(session, t));
    // Never ahead of the clock: after it was set back, times listed from before are in its future.
    this.mark = Math.min(newest, Math.floor(wall / 1000));
  }

  /** Reads one thread outside the daemon and shows (or forgets) its goal by the table. */
  private async look(session: DaemonSession, thread: Thread): Promise<void> {
    const core = this.core;
    const threadId = thread.id;
    const known = core.state.watches[threadId];
    if (known && known.state.kind !== 'elsewhere') return; // watched in the daemon: its own rows
    // `updatedAt` has whole seconds: a change later in the second it names (a failed turn's end
    // right after the goal's block) leaves it as it is. So a thread updated that recently is read
    // again at the next look; only an older `updatedAt` vouches that nothing moved since.
    const settled = thread.updatedAt < Math.floor(core.now() / 1000) - SLACK_SECONDS;
    const goal = await session.getGoal(threadId);
    if (settled) this.read.set(threadId, thread.updatedAt);
    else this.read.delete(threadId);
    if (!goal) {
      if (known) this.core.forget(known.threadId, 'the goal was cleared in another Codex app');
      return;
    }
    if (!known && !SHOWN.has(goal.status)) return;
    const stopped = goal.status === 'blocked' || goal.status === 'usageLimited';
    const turn = stopped ? await session.latestTurn(threadId).catch(notMaterialized) : null;
    const verdict = elsewhere({
      previous: known?.state ?? null,
      goal: goal.status,
      turn,
      status: thread.status,
      knownFailure: known?.lastFailure?.turnId ?? null,
      recovered: known?.recovered ?? [],
      now: core.now(),
    });
    if (verdict.act === 'leave') return;
    if (verdict.act === 'forget') {
      if (known) this.core.forget(known.threadId, verdict.why);
      return;
    }
    const w = known ?? newWatch(threadId, core.now());
    goalSeen(w, goalSnapshot(goal), goal.objective || w.title);
    applyThread(w, thread);
    core.state.watches[threadId] = w;
    core.liveOf(threadId).loaded = false;
    this.show(w, verdict, !known);
  }

  private show(w: Watch, verdict: Extract<ElsewhereVerdict, { act: 'show' }>, isNew: boolean): void {
    const core = this.core;
    shownElsewhere(core, w, verdict);
    if (isNew || verdict.announce)
      core.emit({ type: 'elsewhere', threadId: w.threadId, status: verdict.state.goal, reason: verdict.why });
    if (verdict.announce) {
      const todo = verdict.state.retryable
        ? 'continue it there, or close it there and use Retry now to run it in the daemon'
        : 'look at it there';
      core.emit({ type: 'attention', threadId: w.threadId, reason: `${verdict.why}: ${todo}` });
    }
    core.changed();
  }
}
