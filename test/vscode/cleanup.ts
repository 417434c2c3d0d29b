// What the VS Code test drivers create (temp dirs, process groups) is removed even when the
// process ends without reaching its finally blocks (an uncaught error, EPIPE on stdout, exit()).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const dirs = new Set<string>();
const groups = new Set<number>();
let hooked = false;

function hook(): void {
  if (hooked) return;
  hooked = true;
  // First in line: a later 'exit' listener of the test runner may throw (EPIPE when our
  // reader is gone), and the listeners after it would never run.
  process.prependListener('exit', () => {
    for (const pgid of groups) signal(pgid, 'SIGKILL');
    // Give the killed processes a moment to go, or they keep writing into the dirs below.
    const deadline = Date.now() + 2000;
    while ([...groups].some((pgid) => signal(pgid, 0)) && Date.now() < deadline) sleepSync(50);
    for (const dir of dirs) {
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          fs.rmSync(dir, { recursive: true, force: true });
          break;
        } catch {
          sleepSync(100); // ENOTEMPTY: something was still writing
        }
      }
    }
  });
}

/** false once no process of the group is left. */
function signal(pgid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false;
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

let signalsHooked = false;

/**
 * For test processes without their own signal handling (the UI suite):
 * - SIGINT, SIGTERM or SIGHUP end the process through process.exit, so the exit hook above
 *   still cleans up;
 * - EPIPE on stdout/stderr (the reader went away: `| head`, a dead `node --test` parent) is
 *   ignored, so the run goes on to its after hooks. Unhandled, node:test's own handler hits it
 *   again while reporting it, and Node dies with code 7 without running any exit hook.
 */
export function guardProcess(): void {
  if (signalsHooked) return;
  signalsHooked = true;
  hook();
  const codes: Record<string, number> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };
  for (const sig of Object.keys(codes)) {
    process.once(sig, () => process.exit(codes[sig]));
  }
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
    });
  }
}

/** A new directory under os.tmpdir(), removed by removeTempDir() or at process exit. */
export function makeTempDir(prefix: string): string {
  hook();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}

export function removeTempDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
}

/** A process group to SIGKILL if the process exits while it is still tracked. */
export function trackGroup(pgid: number): void {
  hook();
  groups.add(pgid);
}

export function untrackGroup(pgid: number): void {
  groups.delete(pgid);
}
