// Finds the human goal-status markers in a Codex rollout (`thread.path`).
//
// A rollout is a JSON-lines file that can reach hundreds of megabytes, with single lines
// (tool outputs) of many megabytes. Nothing here reads a whole file or a whole line into
// memory: files are read with positioned reads in fixed chunks, and a line longer than
// `maxLineBytes` is skipped without being buffered (marker lines are well under 2 KiB).
// Memory is bounded by `chunkSize + maxLineBytes`, whatever the file. This file holds the
// forward, incremental lookup and the first look after arming (backward ones: backwardLookups.ts).
//
// Only complete lines (ending in "\n") count: a trailing partial line is being written
// and is read again next time (`nextOffset` stops at its start).
import { findLastActivation } from './backwardLookups';
import { LineParts } from './lineParts';
import { parseGoalBytes, parseMarkerBytes, type GoalChange } from './markerLines';
import { limits, NL, withRollout, type ScanOptions } from './rolloutFile';
import type { Marker } from '../model/watch';

export type { ScanOptions } from './rolloutFile';

export interface IncrementalScanOptions extends ScanOptions {
  /** Keep at most this many markers (the most recent); default 100. */
  maxMarkers?: number;
}

/**
 * A goal change that is not a person's: the model's own `update_goal` call (`by: "model"`), or
 * Codex's `thread_goal_updated` event, which it writes for every `thread/goal/set` (user or
 * automatic) but not for the model's call nor for a failure-induced block (measured, 0.169.0).
 */
export interface GoalLine extends GoalChange {
  offset: number;
}

export interface IncrementalScanResult {
  /** Markers found in the scanned range, in file order (at most `maxMarkers`, the last ones). */
  markers: Marker[];
  /** Model goal calls and goal events in the scanned range, in file order (at most `maxMarkers`, the last ones). */
  goalLines: GoalLine[];
  last: Marker | null;
  /** Where the next scan starts: the start of a trailing partial line, or the file size. */
  nextOffset: number;
  /** File size when the scan started. */
  size: number;
  /**
   * The file is smaller than `fromOffset`, or `fromOffset` is no longer at a line start
   * (the rollout was truncated or rewritten): the scan restarted from offset 0, so
   * `markers` covers the whole file.
   */
  truncated: boolean;
  /** Bytes read from the file. */
  bytesRead: number;
}

/**
 * Incremental lookup: the markers in the complete lines from `fromOffset` (a line start,
 * normally the previous `nextOffset`) to the end of the file. Reads only those bytes,
 * plus the one byte before `fromOffset` to check it still ends a line.
 * If the file shrank below `fromOffset` or was rewritten, rescans from 0 (`truncated`).
 * Rejects with a `RolloutReadError` naming the path if the file cannot be read.
 */
export async function scanForMarkers(
  path: string,
  fromOffset: number,
  opts: IncrementalScanOptions = {},
): Promise<IncrementalScanResult> {
  const { chunkSize, cap } = limits(path, opts);
  const maxMarkers = opts.maxMarkers ?? 100;
  if (!Number.isSafeInteger(fromOffset) || fromOffset < 0) {
    throw new RangeError(`scanForMarkers(${path}): fromOffset must be a non-negative integer, got ${fromOffset}`);
  }
  return withRollout(path, async (size, readExactly) => {
    // Sized for what is new (usually a few lines): a full chunk per look, for every thread on
    // every event, was most of the engine's garbage. Grown to a chunk if more must be read.
    let buf = Buffer.allocUnsafe(Math.max(1, Math.min(chunkSize, size - Math.max(0, fromOffset - 1))));
    let bytesRead = 0;
    let truncated = size < fromOffset;
    let begin = truncated ? 0 : fromOffset;

    restart: while (true) {
      const markers: Marker[] = [];
      const goalLines: GoalLine[] = [];
      let lineStart = begin;
      // The start of a line that ends in a later chunk.
      const parts = new LineParts(cap, 'forward');
      // Read the byte before `begin` too: it must be a "\n" if `begin` is still a line start.
      let pos = begin > 0 && begin < size ? begin - 1 : begin;
      let checkBoundary = pos < begin;
      while (pos < size) {
        const len = Math.min(chunkSize, size - pos);
        opts.onRead?.(pos, len);
        if (buf.length < len) buf = Buffer.allocUnsafe(chunkSize);
        await readExactly(buf, len, pos);
        bytesRead += len;
        const view = buf.subarray(0, len);
        let segStart = 0;
        if (checkBoundary) {
          checkBoundary = false;
          if (view[0] !== NL) {
            truncated = true; // rewritten: `fromOffset` is inside a line now
            begin = 0;
            continue restart;
          }
          segStart = 1;
        }
        for (let nl; (nl = view.indexOf(NL, segStart)) >= 0;) {
          const line = parts.line(view.subarray(segStart, nl));
          const status = line && parseMarkerBytes(line);
          const goal = line && status === null ? parseGoalBytes(line) : null;
          if (status !== null) keepLast(markers, { status, offset: lineStart }, maxMarkers);
          if (goal !== null) keepLast(goalLines, { ...goal, offset: lineStart }, maxMarkers);
          parts.clear();
          lineStart = pos + nl + 1;
          segStart = nl + 1;
        }
        // view[segStart..] starts (or continues) a line that ends in a later chunk.
        if (segStart < len) parts.add(view.subarray(segStart));
        pos += len;
      }
      return {
        markers,
        goalLines,
        last: markers.length > 0 ? markers[markers.length - 1] : null,
        nextOffset: lineStart,
        size,
        truncated,
        bytesRead,
      };
    }
  });
}

/** Appends `item`, keeping only the last `max` items. */
function keepLast<T>(list: T[], item: T, max: number): void {
  list.push(item);
  if (list.length > max) list.splice(0, list.length - max);
}

export interface ActivationScanResult extends IncrementalScanResult {
  /** The last activation found by the backward lookup, or null (none at or after `minOffset`). */
  activation: number | null;
}

/**
 * The first look at a rollout after arming: `findLastActivation`, then `scanForMarkers` from
 * that line on, so the markers and goal lines since the goal's last activation are read
 * without reading what came before it. With no activation line at or after `minOffset`, the
 * forward scan starts at `minOffset` (the whole file when 0): nothing shows where the goal
 * was set active, so everything counts, as it did before this lookup existed.
 * Memory is bounded as in both lookups; `bytesRead` is the sum of both.
 */
export async function scanFromLastActivation(
  path: string,
  minOffset = 0,
  opts: IncrementalScanOptions = {},
): Promise<ActivationScanResult> {
  const back = await findLastActivation(path, { ...opts, minOffset });
  const from = back.offset ?? minOffset;
  const fwd = await scanForMarkers(path, from, opts);
  return { ...fwd, activation: back.offset, bytesRead: back.bytesRead + fwd.bytesRead };
}
