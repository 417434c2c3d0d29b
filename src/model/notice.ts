// Which decisions a person is told about in a notification, and how close together they must come
// to share one: a window coalesces a burst (src/views/notificationBurst.ts), and the leader keeps
// the window it picked for the whole burst (src/leader/notifyTarget.ts), never split across windows.
import type { Decision } from './decision';

/** How long the first decision of a burst is held, and how long each new one extends it (ms). */
export const NOTICE_HOLD_MS = 2_000;
/** The longest a burst stays open, from its first decision (ms). */
export const NOTICE_MAX_MS = 10_000;

/**
 * A decision that asks for a person: a goal given up on, or one that needs attention (told when
 * its goal comes to need one: `needsPerson` in queries.ts).
 */
export function asksForPerson(d: Decision): d is Extract<Decision, { type: 'gave-up' | 'attention' }> {
  return d.type === 'gave-up' || d.type === 'attention';
}
