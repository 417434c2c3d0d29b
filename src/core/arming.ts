// A person's arming (Watch this goal, `arm THREAD`), as pure functions beside the decision table
// (policy.ts): what `arm` does to a thread by what the engine knows of it, and which failure the
// arming finds (kept in `beforeArming`; the table's rows then never recover it).
import type { Watch } from '../model/watch';
import type { LiveThread } from './live';
import { usageKey } from './policy';

/** What a person's `arm` (Watch this goal) does to a thread, by what the engine knows of it. */
export type ArmVerdict =
  /** Armed from now on (a disarm record of the user's, if any, is cleared: the person chose again). */
  | { act: 'arm' }
  /** Nothing to do: already watched. */
  | { act: 'noop'; why: string }
  /** Not something the engine can watch: said as an error. */
  | { act: 'refuse'; why: string };

export function personArms(w: Watch | undefined, disarmedAt: number | undefined): ArmVerdict {
  if (!w) return { act: 'refuse', why: 'the engine knows no goal in this thread' };
  if (disarmedAt !== undefined || w.state.kind === 'disarmed' || w.state.kind === 'notAdopted') return { act: 'arm' };
  if (w.state.kind === 'elsewhere')
    return {
      act: 'refuse',
      why: 'its goal is in another Codex app, not in the daemon: open the thread in a client of the daemon first',
    };
  if (w.state.kind === 'userIntent')
    return {
      act: 'noop',
      why: `already watched: a person set its goal ${w.state.requested}, and it is armed again when they set it active`,
    };
  return { act: 'noop', why: 'already watched' };
}

/**
 * The failure a person's arming finds, never recovered (it is older than the arming): the turn that
 * stopped a blocked goal (ended or not), the key of a usage limit, or a failed newest turn.
 */
export function failureAtArming(w: Watch, live: Readonly<LiveThread>): string | null {
  const goal = w.goal;
  if (goal?.status === 'usageLimited') return usageKey(goal, live);
  if (goal?.status === 'blocked') return live.turn?.id ?? null;
  return live.turn?.status === 'failed' ? live.turn.id : null;
}
