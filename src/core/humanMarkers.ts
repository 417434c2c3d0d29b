// What the rollout says a person did: the goal markers Codex writes for a user's
// `thread/goal/set`, and the model's own block (`update_goal`). Read from where the last look
// stopped; a person's marker newer than the arming disarms the thread (`userIntent`), a later
// `active` marker of theirs arms it again.
import type { Watch } from '../model/watch';
import { scanForMarkers, scanFromLastActivation, type ScanOptions } from '../rollout/markers';
import type { EngineCore } from './engineCore';
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
  if (armOffset === null) {
    // Just armed: the arming is the goal's last activation (one appended since the backward
    // lookup is in the goal lines; the one it found is their first unless more than
    // `maxMarkers` goal lines followed it). With no activation line at all (nothing in the file
    // shows where the goal was set active), the arming falls back to offset 0, as before this
    // lookup existed: every marker and model block in the file counts, and the file was read
    // whole, twice (backwards, then forwards), still in bounded memory.
    const activations = result.goalLines.filter((l) => l.by === 'event' && l.status === 'active');
    armOffset = activations.at(-1)?.offset ?? activation ?? 0;
  }
  rolloutRead(w, result.nextOffset, armOffset);
  let block = w.modelBlockOffset;
  for (const line of result.goalLines) {
    if (line.offset < armOffset) continue;
    if (line.by === 'model' && line.status === 'blocked') block = line.offset;
    else if (line.by === 'event' && line.status === 'active' && (block === null || line.offset > block)) block = null;
  }
  if (block !== w.modelBlockOffset) modelBlockSeen(w, block);
  for (const marker of markers) {
    markerSeen(w, marker);
    if (marker.offset < (w.armOffset ?? 0)) continue; // older than the arming (a re-arm moves it)
    markerMoved(core, w, markerMove(w.state, marker.status), marker);
  }
}
