// Which window shows a decision as a notification: exactly one, whichever engine leads. The
// leader knows every window that follows it (each says whether it has the focus) and itself.

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
  for (const w of windows) {
    if (!best) best = w;
    else if (rank(w) > rank(best)) best = w;
  }
  return best?.viewer ?? null;
}

function rank(w: WindowFocus): number {
  // Focused beats everything; then the latest focus. Integers well below 2^52.
  return (w.focused ? Number.MAX_SAFE_INTEGER / 2 : 0) + w.focusedSeq;
}
