// What the rollout says a person did: the goal markers Codex writes for a user's
// `thread/goal/set`, and the model's own block (`update_goal`). Read from where the last look
// stopped; a person's marker newer than the arming disarms the thread (`userIntent`), a later
// `active` marker of theirs arms it again.
import type { Watch } from '../model/watch';
import { scanForMarkers, scanFromLastActivation, type ScanOptions } from '../rollout/markers';
import type { EngineCore } from './engineCore';
import { armingOffset, markerCounts, modelBlock } from './markerRules';
import { markerMove } from './policy';
import { markerMoved } from './transitions';
import { errorText } from '../util/errorText';
import { markerSeen, modelBlockSeen, rolloutRead } from './watchWrites';

export async function readMarkers(core: EngineCore, w: Watch): Promise<void> {
  if (!w.rolloutPath) return;
  const rolloutPath = w.rolloutPath;
  const onRead = core.deps.onRolloutRead;
  const opts: ScanOptions = onRead ? { onRead: (position, length) => onRead(rolloutPath, position, length) } : {};
  let result;
  // Just armed: the first look reads back from the end to the goal's last activation only, then
  // forward from it, instead of reading the whole rollout forward from 0.
  let activation: number | null = null;
  try {
    if (w.armOffset === null) {
      result = await scanFromLastActivation(rolloutPath, w.rolloutOffset, opts);
      activation = result.activation;
    } else {
      result = await scanForMarkers(rolloutPath, w.rolloutOffset, opts);
    }
  } catch (error) {
    core.emit({ type: 'warning', threadId: w.threadId, message: `could not read the rollout: ${errorText(error)}` });
    return;
  }
  let markers = result.markers;
  let armOffset = w.armOffset;
  if (result.truncated) {
    // The rollout was rewritten: offsets from before mean nothing now. Only its last marker
    // can still speak for the user.
    core.emit({
      type: 'warning',
      threadId: w.threadId,
      message: `the rollout ${w.rolloutPath} was truncated or rewritten; re-read from the start`,
    });
    armOffset = 0;
    markers = result.last ? [result.last] : [];
  }
  // Just armed: the arming is the goal's last activation (markerRules.ts), read in both directions
  // in bounded memory.
  if (armOffset === null) armOffset = armingOffset(result.goalLines, activation);
  rolloutRead(w, result.nextOffset, armOffset);
  const block = modelBlock(result.goalLines, armOffset, w.modelBlockOffset);
  if (block !== w.modelBlockOffset) modelBlockSeen(w, block);
  for (const marker of markers) {
    markerSeen(w, marker);
    if (!markerCounts(marker.offset, w.armOffset)) continue;
    markerMoved(core, w, markerMove(w.state, marker.status), marker);
  }
}
