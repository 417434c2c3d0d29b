// The rules of what a rollout's goal lines mean, beside the decision table (policy.ts, whose
// `markerMove` says what a person's marker does): where a just-armed watch's arming stands, which
// model block still holds, and which markers are older than the arming. Pure, so the mutation gate
// reaches them (stryker.config.json); humanMarkers.ts reads the rollout and carries them out
// (test/unit/markerRules.test.ts states them row by row).
import type { GoalLine } from '../rollout/markers';

/**
 * A just-armed watch's arming: the goal's last activation among the lines read (an `active` goal
 * event), else the one the backward lookup found, else the file's start (nothing shows where the
 * goal was set active: every marker and model block in the file counts).
 */
export function armingOffset(lines: readonly GoalLine[], activation: number | null): number {
  let last: number | null = null;
  for (const l of lines) if (l.by === 'event' && l.status === 'active') last = l.offset;
  return last ?? activation ?? 0;
}

/**
 * The model's own block that still holds after the lines read (its offset), or null: a model
 * `blocked` call since the arming holds until a later `active` goal event (the lines come in file
 * order, all after a block held from an earlier read; after a rewrite of the file, whose old
 * offsets mean nothing, too).
 */
export function modelBlock(lines: readonly GoalLine[], armOffset: number, current: number | null): number | null {
  let block = current;
  for (const l of lines) {
    if (l.offset < armOffset) continue;
    if (l.by === 'model' && l.status === 'blocked') block = l.offset;
    else if (l.by === 'event' && l.status === 'active') block = null;
  }
  return block;
}

/** A person's marker speaks only from the arming on (a re-arm moves the arming past older ones). */
export function markerCounts(offset: number, armOffset: number | null): boolean {
  return offset >= (armOffset ?? 0);
}
