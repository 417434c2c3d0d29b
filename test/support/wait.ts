// Waiting in tests, declared once: `sleep`, `immediate`/`turns` (turns of the event loop), `poll`/
// `until` (a condition that async work makes true) and `tempDir` (a private directory, removed when
// the test process exits).

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** At least `ms` (none when it is not positive: a time already passed). */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** One turn of the event loop: what is ready (I/O, in-memory streams, promises) runs first. */
export const immediate = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** `n` turns of the event loop. */
export async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await immediate();
}

/** Polls `check` every `intervalMs` until it holds (true) or `timeoutMs` has passed (false). */
export async function poll(check: () => boolean, timeoutMs: number, intervalMs = 5): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await sleep(intervalMs);
  }
  return true;
}

/**
 * Waits for `check`; fails with "timed out waiting for <what>" after `timeoutMs` (`what` may be a
 * function, for a message that says how things stood when the time ran out).
 */
export async function until(
  what: string | (() => string),
  check: () => boolean,
  timeoutMs = 10_000,
  intervalMs = 5,
): Promise<void> {
  if (!(await poll(check, timeoutMs, intervalMs)))
    throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
}

const made: string[] = [];
process.once('exit', () => {
  for (const d of made.reverse()) {
    try {
      fs.rmSync(d, { recursive: true, force: true });
    } catch {
      // a directory a test left unreadable stays; the OS cleans its temp dir
    }
  }
});

/** A private directory (mode 0o700 unless said), removed when the process exits. */
export function tempDir(prefix = 'cgr-', options: { mode?: number; realpath?: boolean } = {}): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(d, options.mode ?? 0o700);
  made.push(d);
  return options.realpath ? fs.realpathSync(d) : d;
}
