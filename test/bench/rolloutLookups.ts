// The lookups the rollout benchmark times, the product's and the naive baseline's, shared by
// the benchmark (test/bench/rollout.ts) and its memory probe (test/bench/rolloutMemory.ts).
import * as fs from 'node:fs';
import * as readline from 'node:readline';
import type { Marker } from '../../src/model/watch';
import { findLastMarker } from '../../src/rollout/backwardLookups';
import { goalLineOf, markerStatusOf } from '../../src/rollout/markerLines';
import { scanForMarkers, scanFromLastActivation } from '../../src/rollout/markers';

/** What an intent lookup answers: where the goal was last set active, and the user's last marker since then. */
export interface Intent {
  armOffset: number;
  /** The last user goal-status marker at or after `armOffset`, or null. */
  lastMarker: Marker | null;
  bytesRead: number;
}

/** Called now and then during a lookup (the memory probe samples there). */
export type Sampler = () => void;

/**
 * The product's cold lookup: the engine's first look at a rollout after arming
 * (`Engine.readMarkers` with no arming offset yet): back to the goal's last activation, then
 * forward from it; the arming is the last activation seen.
 */
export async function productCold(path: string, sample?: Sampler): Promise<Intent> {
  const r = await scanFromLastActivation(path, 0, sample ? { onRead: sample } : {});
  if (r.truncated) throw new Error(`${path} changed during the lookup`);
  const activations = r.goalLines.filter((l) => l.by === 'event' && l.status === 'active');
  const armOffset = activations.at(-1)?.offset ?? r.activation ?? 0;
  const since = r.markers.filter((m) => m.offset >= armOffset);
  return { armOffset, lastMarker: since.at(-1) ?? null, bytesRead: r.bytesRead };
}

/** The product's backward lookup of the last marker anywhere in the file (`findLastMarker`). */
export async function productLastMarker(
  path: string,
  sample?: Sampler,
): Promise<{ marker: Marker | null; bytesRead: number }> {
  const r = await findLastMarker(path, sample ? { onRead: sample } : {});
  return { marker: r.marker, bytesRead: r.bytesRead };
}

/**
 * The product's incremental lookup: the markers in what was appended since `from` (what the engine does on every later
 * look).
 */
export async function productIncremental(
  path: string,
  from: number,
  sample?: Sampler,
): Promise<{ last: Marker | null; nextOffset: number; bytesRead: number }> {
  const r = await scanForMarkers(path, from, sample ? { onRead: sample } : {});
  if (r.truncated) throw new Error(`${path} changed during the lookup`);
  return { last: r.last, nextOffset: r.nextOffset, bytesRead: r.bytesRead };
}

export interface BaselineAnswer extends Intent {
  /** The last marker anywhere in the file (what `findLastMarker` answers). */
  lastMarkerAnywhere: Marker | null;
}

/**
 * The naive baseline: read the whole file line by line and `JSON.parse` every line, applying
 * the product's own marker and goal-line tests to each parsed line. It streams (a `readFile` and
 * `split` cannot work on 512 MB: that is beyond V8's maximum string length), so its memory is
 * bounded by its longest line, not by the file. Byte offsets assume "\n" line ends, as Codex writes.
 */
export async function baseline(path: string, sample?: Sampler): Promise<BaselineAnswer> {
  const input = fs.createReadStream(path, { highWaterMark: 64 * 1024 });
  const lines = readline.createInterface({ input, crlfDelay: Infinity });
  let offset = 0;
  let armOffset: number | null = null;
  let lastMarker: Marker | null = null;
  let lastMarkerAnywhere: Marker | null = null;
  lines.on('line', (line) => {
    let obj: unknown;
    try {
      obj = JSON.parse(line);
    } catch {
      obj = undefined;
    }
    const status = markerStatusOf(obj);
    if (status !== null) {
      lastMarkerAnywhere = { status, offset };
      lastMarker = lastMarkerAnywhere;
    } else {
      const goal = goalLineOf(obj);
      if (goal !== null && goal.by === 'event' && goal.status === 'active') {
        armOffset = offset;
        lastMarker = null;
      }
    }
    sample?.();
    offset += Buffer.byteLength(line) + 1;
  });
  await new Promise<void>((resolve, reject) => {
    input.once('error', reject);
    lines.once('close', resolve);
  });
  return { armOffset: armOffset ?? 0, lastMarker, lastMarkerAnywhere, bytesRead: input.bytesRead };
}
