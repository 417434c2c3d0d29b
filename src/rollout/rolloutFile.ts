// Reading a rollout file in bounded memory: positioned reads of exactly the bytes asked for, the
// chunk and line-size limits every lookup shares, and a `RolloutReadError` naming the path
// when the file cannot be read.
import * as fs from 'node:fs';
import { errorText } from '../util/errorText';

export const DEFAULT_CHUNK_BYTES = 64 * 1024;
export const DEFAULT_MAX_LINE_BYTES = 256 * 1024;

export interface ScanOptions {
  /** Bytes per read; default 64 KiB. */
  chunkSize?: number;
  /** Lines longer than this (bytes, without the "\n") cannot be markers and are skipped; default 256 KiB. */
  maxLineBytes?: number;
  /** Called before each read, with its file position and length (tests, diagnostics). */
  onRead?: (position: number, length: number) => void;
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

/** A newline byte: only complete lines (ending in one) count. */
export const NL = 0x0a;

export function limits(path: string, opts: ScanOptions): { chunkSize: number; cap: number } {
  const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK_BYTES;
  const cap = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  for (const [name, value] of Object.entries({ chunkSize, maxLineBytes: cap })) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(`rollout ${path}: ${name} must be a positive integer, got ${value}`);
    }
  }
  return { chunkSize, cap };
}

/** Node's callback API as a promise, its error a `RolloutReadError` saying `what` failed. */
function io<T>(path: string, what: string, call: (cb: (err: Error | null, value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) =>
    call((err, value) => (err ? reject(readError(path, err, what)) : resolve(value))),
  );
}

/**
 * Runs `body` on the open rollout, with its size and a reader of exactly `len` bytes at `position`
 * (or a `RolloutReadError`), and closes it afterwards. The file is a descriptor read with Node's
 * callback API: a `FileHandle`'s promises cost about twice the CPU per open, stat, read and close
 * (with 10,000 watched threads, most of what arming them cost the engine itself).
 */
export async function withRollout<T>(
  path: string,
  body: (size: number, readExactly: (buf: Buffer, len: number, position: number) => Promise<void>) => Promise<T>,
): Promise<T> {
  const fd = await io<number>(path, 'cannot open', (cb) => fs.open(path, 'r', cb));
  try {
    const st = await io<fs.Stats>(path, 'cannot stat', (cb) => fs.fstat(fd, cb));
    if (!st.isFile()) throw new RolloutReadError(path, 'EISDIR', `rollout ${path} is not a regular file`);
    return await body(st.size, async (buf, len, position) => {
      for (let got = 0; got < len;) {
        const n = await io<number>(path, 'cannot read', (cb) => fs.read(fd, buf, got, len - got, position + got, cb));
        if (n === 0) {
          throw new RolloutReadError(
            path,
            'ESHRUNK',
            `rollout ${path} shrank while being read (expected ${len} bytes at offset ${position}, got ${got})`,
          );
        }
        got += n;
      }
    });
  } finally {
    await new Promise((resolve) => fs.close(fd, resolve));
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

function readError(path: string, err: NodeJS.ErrnoException, what: string): RolloutReadError {
  const { code } = err;
  const detail = (code && REASONS[code]) ?? errorText(err);
  return new RolloutReadError(path, code, `${what} rollout ${path}: ${detail}${code ? ` (${code})` : ''}`, {
    cause: err,
  });
}
