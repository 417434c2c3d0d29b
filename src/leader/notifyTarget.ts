// Which window shows a decision as a notification: exactly one, whichever engine leads. The
// leader knows every window that follows it (each says whether it has the focus) and itself.
// Decisions that need a person and come close together are shown as one notification by the
// window that gets them (src/views/notificationBurst.ts): the window picked for the first keeps
// the rest of that burst (`BurstTarget`), even if the focus moves meanwhile, while it still follows.
import type { Decision } from '../model/decision';
import { asksForPerson, NOTICE_HOLD_MS, NOTICE_MAX_MS } from '../model/notice';

export interface WindowFocus {
  /** The window's viewer id (random, its own). */
  viewer: string;
  /** It has the focus now (as it last said). */
  focused: boolean;
  /** When it last gained the focus, in the leader's count of focus changes (0: never). */
  focusedSeq: number;
}

/**
 * The focused window; if none is, the one focused last; if none ever was, the first listed (the
 * leader lists itself first when it is a window). Null when there is no window at all (a runner
 * leads and only runners follow).
 */
export function notifyTarget(windows: readonly WindowFocus[]): string | null {
  let best: WindowFocus | null = null;
  for (const w of windows) if (!best || rank(w) > rank(best)) best = w;
  return best?.viewer ?? null;
}

function rank(w: WindowFocus): number {
  // Focused beats everything; then the latest focus. Integers well below 2^52.
  return (w.focused ? Number.MAX_SAFE_INTEGER / 2 : 0) + w.focusedSeq;
}

/** How close decisions must come to share a notification (model/notice.ts; a test may shorten them). */
export interface BurstTiming {
  holdMs: number;
  maxMs: number;
}

/**
 * The window that shows each decision: for one that needs a person, the window picked for its
 * burst (the same rule as the window's: within `holdMs` of the one before, at most `maxMs` after the
 * first) while that window is still there; else, and for any other decision, `notifyTarget`.
 */
export class BurstTarget {
  private pick: { viewer: string; firstAt: number; lastAt: number } | null = null;

  constructor(
    /** Monotonic ms. */
    private readonly now: () => number = () => performance.now(),
    private readonly timing: BurstTiming = { holdMs: NOTICE_HOLD_MS, maxMs: NOTICE_MAX_MS },
  ) {}

  target(windows: readonly WindowFocus[], d: Decision): string | null {
    const live = notifyTarget(windows);
    if (!asksForPerson(d)) return live;
    const now = this.now();
    const p = this.pick;
    const open = p && now - p.lastAt < this.timing.holdMs && now - p.firstAt < this.timing.maxMs;
    if (p && open && windows.some((w) => w.viewer === p.viewer)) {
      p.lastAt = now;
      return p.viewer;
    }
    this.pick = live === null ? null : { viewer: live, firstAt: now, lastAt: now };
    return live;
  }
}
