// Cold lookups that read a rollout backwards from its end: the last marker (`findLastMarker`),
// the goal's last activation (`findLastActivation`) and the failed turn's rate limits
// (`findTurnRateLimits`), on one chunked reader, `scanBackward`. Each rejects with a
// `RolloutReadError` naming the path if the file cannot be read.
import { LineParts } from './lineParts';
import { parseActivationBytes, parseMarkerBytes } from './markerLines';
import { parseTurnLimitBytes } from './rateLimitLines';
import type { RateLimitSnapshot } from '../protocol/schema';
import { limits, NL, withRollout, type ScanOptions } from './rolloutFile';
import type { Marker } from '../model/watch';

export interface LastMarkerOptions extends ScanOptions {
  /**
   * Look no further back than this offset (a line start, e.g. the arming offset): a marker
   * before it is not returned and the bytes before it are not read. Default 0.
   */
  minOffset?: number;
}

/** What every backward lookup read. */
interface BackwardScan {
  /** File size when the lookup started. */
  size: number;
  /**
   * End of the last complete line (= `size` unless the file ends in a partial line).
   * Store this, not `size`, as "scanned up to": a partial line is read again next time.
   */
  nextOffset: number;
  /** Bytes read from the file. */
  bytesRead: number;
}

export interface LastMarkerResult extends BackwardScan {
  /** The last complete user goal-status marker line in the file, or null. */
  marker: Marker | null;
}

/**
 * Cold lookup: the last user goal-status marker, reading backwards from the end of the
 * file in chunks until one is found or the start is reached.
 */
export async function findLastMarker(path: string, opts: LastMarkerOptions = {}): Promise<LastMarkerResult> {
  const { hit, ...rest } = await scanBackward(path, 'findLastMarker', opts, parseMarkerBytes);
  return { marker: hit && { status: hit.value, offset: hit.offset }, ...rest };
}

export interface LastActivationResult extends BackwardScan {
  /** Start of the last complete `thread_goal_updated` line whose goal is active, or null. */
  offset: number | null;
}

/**
 * Cold lookup of the goal's last activation: the last `thread_goal_updated` event line whose
 * goal is active (what `parseGoalLine` reads as `{ by: 'event', status: 'active' }`), reading
 * backwards from the end of the file in chunks, like `findLastMarker`. Codex writes that event
 * for every `thread/goal/set`, so a forward scan from its offset sees everything since the goal
 * was last set active, without reading what came before.
 */
export async function findLastActivation(path: string, opts: LastMarkerOptions = {}): Promise<LastActivationResult> {
  const { hit, ...rest } = await scanBackward(path, 'findLastActivation', opts, parseActivationBytes);
  return { offset: hit && hit.offset, ...rest };
}

/**
 * The rate limits Codex wrote for the rollout's last turn (docs/daemon-behaviour.md (r)): the last
 * `token_count` line with `rate_limits`, read backwards from the end, but none from before the
 * turn's `task_started` nor the goal's last activation (nor `minOffset`): another turn's limits
 * are not this one's. Null when there is no such line (not written yet, or a Codex that writes none);
 * a snapshot with every field null when the provider sent no rate-limit headers.
 */
export async function findTurnRateLimits(
  path: string,
  opts: LastMarkerOptions = {},
): Promise<RateLimitSnapshot | null> {
  const { hit } = await scanBackward(path, 'findTurnRateLimits', opts, parseTurnLimitBytes);
  return hit !== null && 'snapshot' in hit.value ? hit.value.snapshot : null;
}

interface BackwardResult<T> extends BackwardScan {
  hit: { value: T; offset: number } | null;
}

/**
 * The last complete line (from `opts.minOffset` on) that `match` accepts, reading backwards
 * from the end of the file in `chunkSize` reads. Lines longer than the cap are skipped without
 * being buffered, so memory stays at `chunkSize + maxLineBytes` whatever the file.
 */
async function scanBackward<T>(
  path: string,
  caller: string,
  opts: LastMarkerOptions,
  match: (line: Buffer) => T | null,
): Promise<BackwardResult<T>> {
  const { chunkSize, cap } = limits(path, opts);
  const minOffset = opts.minOffset ?? 0;
  if (!Number.isSafeInteger(minOffset) || minOffset < 0) {
    throw new RangeError(`${caller}(${path}): minOffset must be a non-negative integer, got ${minOffset}`);
  }
  return withRollout(path, async (size, readExactly) => {
    // No larger than what there is to read: a short rollout (most, when many threads are armed at
    // once) takes a small buffer, from Node's pool, not a 64 KiB one each.
    const buf = Buffer.allocUnsafe(Math.max(1, Math.min(chunkSize, size - minOffset)));
    let bytesRead = 0;
    // End of the last complete line + 1; null until the last "\n" is seen.
    let nextOffset: number | null = null;
    // The end part of the line being assembled (it starts before the current chunk).
    const parts = new LineParts(cap, 'backward');
    let pos = size;
    while (pos > minOffset) {
      const start = Math.max(minOffset, pos - chunkSize);
      const len = pos - start;
      opts.onRead?.(start, len);
      await readExactly(buf, len, start);
      bytesRead += len;
      const view = buf.subarray(0, len);
      let cursor = len; // view[cursor..] is processed
      while (cursor > 0) {
        const nl = view.lastIndexOf(NL, cursor - 1);
        if (nl < 0) break;
        if (nextOffset === null) {
          nextOffset = start + nl + 1; // bytes after the last "\n" are a partial line
        } else {
          const line = parts.line(view.subarray(nl + 1, cursor));
          const value = line && match(line);
          if (value !== null) return { hit: { value, offset: start + nl + 1 }, size, nextOffset, bytesRead };
        }
        parts.clear();
        cursor = nl;
      }
      // view[0..cursor) continues a line that starts in an earlier chunk.
      if (nextOffset !== null && cursor > 0) parts.add(view.subarray(0, cursor));
      pos = start;
    }
    // The file's first line (or the one at minOffset).
    if (nextOffset !== null && parts.length > 0) {
      const value = match(parts.stored());
      if (value !== null) return { hit: { value, offset: minOffset }, size, nextOffset, bytesRead };
    }
    return { hit: null, size, nextOffset: nextOffset ?? Math.min(minOffset, size), bytesRead };
  });
}
