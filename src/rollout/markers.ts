// Finds the human goal-status markers in a Codex rollout (`thread.path`).
//
// A rollout is a JSON-lines file that can reach hundreds of megabytes, with single lines
// (tool outputs) of many megabytes. Nothing here reads a whole file or a whole line into
// memory: files are read with positioned FileHandle reads in fixed chunks, and a line
// longer than `maxLineBytes` is skipped without being buffered (marker lines are well
// under 2 KiB). Memory is bounded by `chunkSize + maxLineBytes`, whatever the file.
//
// Backward lookups (`findLastMarker`, `findLastActivation`) share one chunked reader,
// `scanBackward`; the forward, incremental one is `scanForMarkers`.
//
// Only complete lines (ending in "\n") count: a trailing partial line is being written
// and is read again next time (`nextOffset` stops at its start).
import { promises as fsp } from 'node:fs';
import { GOAL_STATUSES, type GoalStatus, type Marker } from '../model/watch';

export const DEFAULT_CHUNK_BYTES = 64 * 1024;
export const DEFAULT_MAX_LINE_BYTES = 256 * 1024;
/** `scanForMarkers` keeps at most this many markers (the last ones) by default. */
export const DEFAULT_MAX_MARKERS = 100;

export interface ScanOptions {
  /** Bytes per read; default 64 KiB. */
  chunkSize?: number;
  /** Lines longer than this (bytes, without the "\n") cannot be markers and are skipped; default 256 KiB. */
  maxLineBytes?: number;
  /** Called before each read, with its file position and length (tests, diagnostics). */
  onRead?: (position: number, length: number) => void;
}

export interface LastMarkerOptions extends ScanOptions {
  /**
   * Look no further back than this offset (a line start, e.g. the arming offset): a marker
   * before it is not returned and the bytes before it are not read. Default 0.
   */
  minOffset?: number;
}

export interface IncrementalScanOptions extends ScanOptions {
  /** Keep at most this many markers (the most recent); default 100. */
  maxMarkers?: number;
}

export interface LastMarkerResult {
  /** The last complete user goal-status marker line in the file, or null. */
  marker: Marker | null;
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

/**
 * A goal change that is not a person's: the model's own `update_goal` call (`by: "model"`), or
 * Codex's `thread_goal_updated` event, which it writes for every `thread/goal/set` (user or
 * automatic) but not for the model's call nor for a failure-induced block (measured, 0.169.0).
 */
export interface GoalLine {
  by: 'model' | 'event';
  status: GoalStatus;
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

/** A rollout could not be read. `code` is the fs error code (ENOENT, EACCES, ...) when there is one. */
export class RolloutReadError extends Error {
  override readonly name = 'RolloutReadError';
  constructor(
    readonly path: string,
    readonly code: string | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const NL = 0x0a;
const PREFILTER = 'user.goal';
const MARKER_KINDS = new Set(['user.goal', 'user.goal.omitted']);
/** Codex writes `User set goal status: "<status>".` on a line of its own, after any objective line. */
const STATUS_SENTENCE = /^User set goal status: "([A-Za-z]+)"\.[ \t\r]*$/gm;
const VALID_STATUSES: ReadonlySet<string> = new Set(GOAL_STATUSES);

/**
 * The status a person requested, if `line` is a user goal-status marker; null otherwise
 * (any other line, an objective-only marker, "User cleared the goal.", invalid JSON, an
 * unknown status). Cheap for non-markers: a substring test comes before JSON.parse.
 */
export function parseMarkerLine(line: string): GoalStatus | null {
  if (!line.includes(PREFILTER)) return null;
  let obj: unknown;
  try {
    obj = JSON.parse(line);
  } catch {
    return null;
  }
  return markerStatusOf(obj);
}

/** `parseMarkerLine` on a line already parsed (`JSON.parse` of the whole line). */
export function markerStatusOf(obj: unknown): GoalStatus | null {
  if (!isRecord(obj) || obj.type !== 'response_item') return null;
  const payload = obj.payload;
  if (!isRecord(payload) || payload.type !== 'message' || payload.role !== 'user') return null;
  const meta = payload.internal_chat_message_metadata_passthrough;
  if (!isRecord(meta) || !Array.isArray(meta.content_item_kinds)) return null;
  const kinds: unknown[] = meta.content_item_kinds;
  if (!kinds.some((k) => typeof k === 'string' && MARKER_KINDS.has(k))) return null;
  if (!Array.isArray(payload.content)) return null;
  const content: unknown[] = payload.content;
  // When kinds parallel the content items, read only the goal items.
  const parallel = kinds.length === content.length;
  let status: GoalStatus | null = null;
  content.forEach((item, i) => {
    if (parallel && !(typeof kinds[i] === 'string' && MARKER_KINDS.has(kinds[i] as string))) return;
    if (!isRecord(item) || item.type !== 'input_text' || typeof item.text !== 'string') return;
    const found = statusIn(item.text);
    if (found !== null) status = found;
  });
  return status;
}

/** The status in the last `User set goal status: "X".` line of a marker's text, if X is valid. */
function statusIn(text: string): GoalStatus | null {
  let last: string | null = null;
  for (const m of text.matchAll(STATUS_SENTENCE)) last = m[1] ?? null;
  return last !== null && VALID_STATUSES.has(last) ? (last as GoalStatus) : null;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const GOAL_EVENT_PREFILTER = 'thread_goal_updated';
const GOAL_LINE_PREFILTERS = ['update_goal', GOAL_EVENT_PREFILTER];

/** A model `update_goal` call or a `thread_goal_updated` event with its status; null otherwise. */
export function parseGoalLine(line: string): { by: 'model' | 'event'; status: GoalStatus } | null {
  if (!GOAL_LINE_PREFILTERS.some((p) => line.includes(p))) return null;
  let obj: unknown;
  try {
    obj = JSON.parse(line);
  } catch {
    return null;
  }
  return goalLineOf(obj);
}

/** `parseGoalLine` on a line already parsed (`JSON.parse` of the whole line). */
export function goalLineOf(obj: unknown): { by: 'model' | 'event'; status: GoalStatus } | null {
  if (!isRecord(obj) || !isRecord(obj.payload)) return null;
  const payload = obj.payload;
  if (
    obj.type === 'response_item' &&
    payload.type === 'function_call' &&
    payload.name === 'update_goal' &&
    typeof payload.arguments === 'string'
  ) {
    let args: unknown;
    try {
      args = JSON.parse(payload.arguments);
    } catch {
      return null;
    }
    const status = isRecord(args) ? args.status : undefined;
    return typeof status === 'string' && VALID_STATUSES.has(status)
      ? { by: 'model', status: status as GoalStatus }
      : null;
  }
  if (obj.type === 'event_msg' && payload.type === 'thread_goal_updated' && isRecord(payload.goal)) {
    const status = payload.goal.status;
    return typeof status === 'string' && VALID_STATUSES.has(status)
      ? { by: 'event', status: status as GoalStatus }
      : null;
  }
  return null;
}

function parseGoalBytes(line: Buffer): { by: 'model' | 'event'; status: GoalStatus } | null {
  if (!GOAL_LINE_PREFILTERS.some((p) => line.indexOf(p) >= 0)) return null;
  return parseGoalLine(line.toString('utf8'));
}

function parseMarkerBytes(line: Buffer): GoalStatus | null {
  if (line.indexOf(PREFILTER) < 0) return null;
  return parseMarkerLine(line.toString('utf8'));
}

/**
 * Cold lookup: the last user goal-status marker, reading backwards from the end of the
 * file in chunks until one is found or the start is reached.
 * Rejects with a `RolloutReadError` naming the path if the file cannot be read.
 */
export async function findLastMarker(path: string, opts: LastMarkerOptions = {}): Promise<LastMarkerResult> {
  const { hit, ...rest } = await scanBackward(path, 'findLastMarker', opts, parseMarkerBytes);
  return { marker: hit && { status: hit.value, offset: hit.offset }, ...rest };
}

export interface LastActivationResult {
  /** Start of the last complete `thread_goal_updated` line whose goal is active, or null. */
  offset: number | null;
  /** File size when the lookup started. */
  size: number;
  /** End of the last complete line (= `size` unless the file ends in a partial line). */
  nextOffset: number;
  /** Bytes read from the file. */
  bytesRead: number;
}

/**
 * Cold lookup of the goal's last activation: the last `thread_goal_updated` event line whose
 * goal is active (what `parseGoalLine` reads as `{ by: 'event', status: 'active' }`), reading
 * backwards from the end of the file in chunks, like `findLastMarker`. Codex writes that event
 * for every `thread/goal/set`, so a forward scan from its offset sees everything since the goal
 * was last set active, without reading what came before.
 * Rejects with a `RolloutReadError` naming the path if the file cannot be read.
 */
export async function findLastActivation(path: string, opts: LastMarkerOptions = {}): Promise<LastActivationResult> {
  const { hit, ...rest } = await scanBackward(path, 'findLastActivation', opts, parseActivationBytes);
  return { offset: hit && hit.offset, ...rest };
}

function parseActivationBytes(line: Buffer): true | null {
  if (line.indexOf(GOAL_EVENT_PREFILTER) < 0) return null; // model calls cannot be activations
  const goal = parseGoalLine(line.toString('utf8'));
  return goal !== null && goal.by === 'event' && goal.status === 'active' ? true : null;
}

interface BackwardResult<T> {
  hit: { value: T; offset: number } | null;
  size: number;
  nextOffset: number;
  bytesRead: number;
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
  const fh = await openRollout(path);
  try {
    const size = await fileSize(fh, path);
    const buf = Buffer.allocUnsafe(chunkSize);
    let bytesRead = 0;
    // End of the last complete line + 1; null until the last "\n" is seen.
    let nextOffset: number | null = null;
    // The end part of the line being assembled (it starts before the current chunk).
    const parts = new LineParts(cap, 'backward');
    let overlong = false;
    let pos = size;
    while (pos > minOffset) {
      const start = Math.max(minOffset, pos - chunkSize);
      const len = pos - start;
      opts.onRead?.(start, len);
      await readExactly(fh, buf, len, start, path);
      bytesRead += len;
      const view = buf.subarray(0, len);
      let cursor = len; // view[cursor..] is processed
      while (cursor > 0) {
        const nl = view.lastIndexOf(NL, cursor - 1);
        if (nl < 0) break;
        if (nextOffset === null) {
          nextOffset = start + nl + 1; // bytes after the last "\n" are a partial line
        } else if (!overlong) {
          const seg = view.subarray(nl + 1, cursor);
          if (seg.length + parts.length <= cap) {
            const value = match(parts.line(seg));
            if (value !== null) return { hit: { value, offset: start + nl + 1 }, size, nextOffset, bytesRead };
          }
        }
        parts.clear();
        overlong = false;
        cursor = nl;
      }
      // view[0..cursor) continues a line that starts in an earlier chunk.
      if (nextOffset !== null && !overlong && cursor > 0 && !parts.add(view.subarray(0, cursor))) {
        overlong = true;
        parts.clear();
      }
      pos = start;
    }
    // The file's first line (or the one at minOffset).
    if (nextOffset !== null && !overlong && parts.length > 0) {
      const value = match(parts.stored());
      if (value !== null) return { hit: { value, offset: minOffset }, size, nextOffset, bytesRead };
    }
    return { hit: null, size, nextOffset: nextOffset ?? Math.min(minOffset, size), bytesRead };
  } finally {
    await fh.close().catch(() => undefined);
  }
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
  const maxMarkers = opts.maxMarkers ?? DEFAULT_MAX_MARKERS;
  if (!Number.isSafeInteger(fromOffset) || fromOffset < 0) {
    throw new RangeError(`scanForMarkers(${path}): fromOffset must be a non-negative integer, got ${fromOffset}`);
  }
  const fh = await openRollout(path);
  try {
    const size = await fileSize(fh, path);
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
      let overlong = false;
      // Read the byte before `begin` too: it must be a "\n" if `begin` is still a line start.
      let pos = begin > 0 && begin < size ? begin - 1 : begin;
      let checkBoundary = pos < begin;
      while (pos < size) {
        const len = Math.min(chunkSize, size - pos);
        opts.onRead?.(pos, len);
        if (buf.length < len) buf = Buffer.allocUnsafe(chunkSize);
        await readExactly(fh, buf, len, pos, path);
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
        while (segStart <= len) {
          const nl = view.indexOf(NL, segStart);
          if (nl < 0) break;
          if (!overlong) {
            const seg = view.subarray(segStart, nl);
            if (seg.length + parts.length <= cap) {
              const line = parts.line(seg);
              const status = parseMarkerBytes(line);
              if (status !== null) {
                markers.push({ status, offset: lineStart });
                if (markers.length > maxMarkers) markers.splice(0, markers.length - maxMarkers);
              } else {
                const goal = parseGoalBytes(line);
                if (goal !== null) {
                  goalLines.push({ ...goal, offset: lineStart });
                  if (goalLines.length > maxMarkers) goalLines.splice(0, goalLines.length - maxMarkers);
                }
              }
            }
          }
          parts.clear();
          overlong = false;
          lineStart = pos + nl + 1;
          segStart = nl + 1;
        }
        // view[segStart..] starts (or continues) a line that ends in a later chunk.
        if (segStart < len && !overlong && !parts.add(view.subarray(segStart))) {
          overlong = true;
          parts.clear();
        }
        pos += len;
      }
      return {
        markers,
        goalLines,
        last: markers.length > 0 ? markers[markers.length - 1]! : null,
        nextOffset: lineStart,
        size,
        truncated,
        bytesRead,
      };
    }
  } finally {
    await fh.close().catch(() => undefined);
  }
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

/**
 * The part of a line read so far when the line spans chunks, kept in one buffer that is reused
 * from line to line and grows (by doubling) up to the line cap: assembling lines allocates
 * nothing per line, so memory stays at `chunkSize + maxLineBytes` without garbage piling up.
 * Going forwards the part is a line's start and later bytes go after it; going backwards it
 * is a line's end and earlier bytes go before it.
 */
class LineParts {
  private buf: Buffer = Buffer.alloc(0);
  /** Bytes held. */
  length = 0;

  constructor(
    private readonly cap: number,
    private readonly direction: 'forward' | 'backward',
  ) {}

  /** Adds bytes read next (after the part forwards, before it backwards); false if the line would exceed the cap. */
  add(bytes: Buffer): boolean {
    const total = this.length + bytes.length;
    if (total > this.cap) return false;
    this.reserve(total);
    bytes.copy(this.buf, this.direction === 'forward' ? this.length : this.buf.length - total);
    this.length = total;
    return true;
  }

  /** The whole line: the part with `seg`, its last (forwards) or first (backwards) bytes. A view, valid until the next call. */
  line(seg: Buffer): Buffer {
    if (this.length === 0) return seg;
    const held = this.length;
    if (!this.add(seg)) throw new RangeError('line longer than the cap'); // callers check first
    const line = this.stored();
    this.length = held;
    return line;
  }

  /** The bytes held, as a view. */
  stored(): Buffer {
    return this.direction === 'forward'
      ? this.buf.subarray(0, this.length)
      : this.buf.subarray(this.buf.length - this.length);
  }

  clear(): void {
    this.length = 0;
  }

  private reserve(n: number): void {
    if (n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.min(this.cap, Math.max(n, 2 * this.buf.length, 4096)));
    const held = this.stored();
    held.copy(next, this.direction === 'forward' ? 0 : next.length - held.length);
    this.buf = next;
  }
}

function limits(path: string, opts: ScanOptions): { chunkSize: number; cap: number } {
  const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK_BYTES;
  const cap = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  if (!Number.isSafeInteger(chunkSize) || chunkSize < 1) {
    throw new RangeError(`rollout ${path}: chunkSize must be a positive integer, got ${chunkSize}`);
  }
  if (!Number.isSafeInteger(cap) || cap < 1) {
    throw new RangeError(`rollout ${path}: maxLineBytes must be a positive integer, got ${cap}`);
  }
  return { chunkSize, cap };
}

async function openRollout(path: string): Promise<fsp.FileHandle> {
  try {
    return await fsp.open(path, 'r');
  } catch (err) {
    throw readError(path, err, 'cannot open');
  }
}

async function fileSize(fh: fsp.FileHandle, path: string): Promise<number> {
  let st;
  try {
    st = await fh.stat();
  } catch (err) {
    throw readError(path, err, 'cannot stat');
  }
  if (!st.isFile()) throw new RolloutReadError(path, 'EISDIR', `rollout ${path} is not a regular file`);
  return st.size;
}

async function readExactly(
  fh: fsp.FileHandle,
  buf: Buffer,
  len: number,
  position: number,
  path: string,
): Promise<void> {
  let got = 0;
  while (got < len) {
    let n: number;
    try {
      ({ bytesRead: n } = await fh.read(buf, got, len - got, position + got));
    } catch (err) {
      throw readError(path, err, 'cannot read');
    }
    if (n === 0) {
      throw new RolloutReadError(
        path,
        'ESHRUNK',
        `rollout ${path} shrank while being read (expected ${len} bytes at offset ${position}, got ${got})`,
      );
    }
    got += n;
  }
}

const REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a directory',
  ENOTDIR: 'a parent is not a directory',
  EMFILE: 'too many open files',
};

function readError(path: string, err: unknown, what: string): RolloutReadError {
  const code =
    typeof (err as NodeJS.ErrnoException)?.code === 'string' ? (err as NodeJS.ErrnoException).code : undefined;
  const detail = (code && REASONS[code]) ?? (err instanceof Error ? err.message : String(err));
  return new RolloutReadError(path, code, `${what} rollout ${path}: ${detail}${code ? ` (${code})` : ''}`, {
    cause: err,
  });
}
