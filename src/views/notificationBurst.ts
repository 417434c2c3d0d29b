// One notification per burst: goals that need a person within a few seconds of each other (one
// outage answered 401 on every running turn, a resync or the home scan finding many goals stopped,
// the batch an engine announces after one save, a leader's stream) are told in one notification,
// "12 goals need attention" (Show, Don't show again). One goal alone keeps its own text and
// buttons (Retry now, Open rollout). No vscode import: the window's side is `NotifyIo`, the clock
// and the timer are injected (test/unit/notificationBurst.test.ts).
//
// The window: the first decision is held BURST_HOLD_MS (2 s), each one that comes extends it to
// BURST_HOLD_MS after itself, and it closes at most BURST_MAX_MS (10 s) after the first, so nobody
// waits long for a goal that needs them. Decisions of one event arrive together (the engine
// announces what a save made durable in one go; a resync looks at 32 threads side by side), well
// within 2 s of each other; goals given up one by one, spread by the backoff's jitter and the
// limiter (one recovery per 5 s), are separate events, told one by one as before. A burst shown
// is closed: a decision after it starts a new burst, never changes a notification already shown.
// The leader sends a whole burst to one window (src/leader/notifyTarget.ts, `BurstTarget`).
import type { NotificationLevel } from '../config/settings';
import type { Decision } from '../model/decision';
import { asksForPerson, NOTICE_HOLD_MS, NOTICE_MAX_MS } from '../model/notice';
import type { EngineSnapshot } from '../model/snapshot';
import { canRetryNow } from '../model/queries';

/** How long the first decision of a burst is held, and how long each new one extends it (ms). */
export const BURST_HOLD_MS = NOTICE_HOLD_MS;
/** The longest a burst stays open, from its first decision (ms). */
export const BURST_MAX_MS = NOTICE_MAX_MS;

/** A monotonic clock and a timer (the window passes `performance.now` and `setTimeout`). */
export interface BurstTimers {
  /** Monotonic ms (never moved by a change of the wall clock). */
  now(): number;
  /** Calls `callback` after `ms`; the function returned cancels it. */
  set(callback: () => void, ms: number): () => void;
}

export const realTimers: BurstTimers = {
  now: () => performance.now(),
  set: (callback, ms) => {
    const handle = setTimeout(callback, ms);
    return () => clearTimeout(handle);
  },
};

/**
 * Items that come within `holdMs` of each other, from the first for at most `maxMs`, handed to
 * `close` together once the burst is over. An item after that starts the next burst.
 */
export class Burst<T> {
  private items: T[] = [];
  private firstAt = 0;
  private cancel: (() => void) | null = null;

  constructor(
    private readonly timers: BurstTimers,
    private readonly close: (items: T[]) => void,
    private readonly holdMs = BURST_HOLD_MS,
    private readonly maxMs = BURST_MAX_MS,
  ) {}

  add(item: T): void {
    const now = this.timers.now();
    if (this.items.length === 0) this.firstAt = now;
    this.items.push(item);
    this.cancel?.();
    const due = Math.min(now + this.holdMs, this.firstAt + this.maxMs);
    this.cancel = this.timers.set(() => this.end(), Math.max(0, due - now));
  }

  /** Drops what is held (the window is closing: nothing more can be shown). */
  dispose(): void {
    this.cancel?.();
    this.cancel = null;
    this.items = [];
  }

  private end(): void {
    const items = this.items;
    this.items = [];
    this.cancel = null;
    if (items.length > 0) this.close(items);
  }
}

/** What the notifications need of the window (VS Code's, in src/views/notifier.ts). */
export interface NotifyIo {
  /** The `notifications` setting now. */
  level(): NotificationLevel;
  /** A message in the user's language, `{0}`… replaced by `args` (vscode.l10n.t). */
  t(message: string, ...args: (string | number)[]): string;
  /** Shows a warning with buttons; resolves with the button clicked, if any. */
  warn(text: string, buttons: string[]): PromiseLike<string | undefined>;
  info(text: string): void;
  run(command: string, arg?: { threadId: string }): void;
  /** "Don't show again": sets `notifications` to `none` in the user's settings. */
  silence(): void;
}

/** One goal's notification, made when its decision came (today's text and buttons). */
interface GoalNotice {
  threadId: string;
  text: string;
  buttons: { title: string; command: string }[];
}

/** The decisions a person is told about, coalesced per burst; routine recoveries (`all`) at once. */
export class BurstNotifier {
  private readonly burst: Burst<GoalNotice>;

  constructor(
    private readonly io: NotifyIo,
    /** The command that reveals the Watched goals view ("Show"). */
    private readonly showCommand: string,
    timers: BurstTimers = realTimers,
  ) {
    this.burst = new Burst(timers, (notices) => this.show(notices));
  }

  decided(d: Decision, snap: EngineSnapshot): void {
    const level = this.io.level();
    if (level === 'none') return;
    const t = this.io.t.bind(this.io);
    const title = (threadId: string) => snap.watches.find((w) => w.threadId === threadId)?.title ?? threadId;
    if (asksForPerson(d)) {
      const text =
        d.type === 'gave-up'
          ? t('Codex Goal Recovery gave up on "{0}" after {1} tries.', title(d.threadId), d.attempts)
          : t('"{0}" needs attention: {1}', title(d.threadId), d.reason);
      const w = snap.watches.find((x) => x.threadId === d.threadId);
      const retry = { title: t('Retry now'), command: 'codexGoalRecovery.retryNow' };
      const open = { title: t('Open rollout'), command: 'codexGoalRecovery.openRollout' };
      const buttons = d.type === 'gave-up' || (w && canRetryNow(w)) ? [retry, open] : [open];
      this.burst.add({ threadId: d.threadId, text, buttons });
    } else if (d.type === 'recovered' && level === 'all') {
      this.io.info(t('Codex Goal Recovery re-activated "{0}" (attempt {1}).', title(d.threadId), d.attempt));
    }
  }

  dispose(): void {
    this.burst.dispose();
  }

  private show(notices: GoalNotice[]): void {
    // The setting as it is now: "none" chosen while the burst was held shows nothing.
    if (this.io.level() === 'none') return;
    // A goal told twice in one burst counts once, with what was said of it last.
    const byGoal = new Map<string, GoalNotice>();
    for (const n of notices) {
      byGoal.delete(n.threadId);
      byGoal.set(n.threadId, n);
    }
    const goals = [...byGoal.values()];
    if (goals.length === 1) {
      const [one] = goals;
      const titles = one.buttons.map((b) => b.title);
      void this.io.warn(one.text, titles).then((choice) => {
        const button = one.buttons.find((b) => b.title === choice);
        if (button) this.io.run(button.command, { threadId: one.threadId });
      });
      return;
    }
    const show = this.io.t('Show');
    const never = this.io.t("Don't show again");
    void this.io.warn(this.io.t('{0} goals need attention', goals.length), [show, never]).then((choice) => {
      if (choice === show) this.io.run(this.showCommand);
      if (choice === never) this.io.silence();
    });
  }
}
