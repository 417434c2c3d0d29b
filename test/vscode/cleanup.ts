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
  process.on('exit', () => {
    for (const pgid of groups) {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });
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
