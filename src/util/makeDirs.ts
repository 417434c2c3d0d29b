// A directory and its missing parents, made one level at a time. Not `mkdir({recursive: true})`:
// under /proc (a state path such as /proc/1/x/state.json) Node's recursive mkdir never settles
// (measured on Node 20.20: the promise stays pending and a thread spins), so a save hung
// and the engine could not stop. Each plain mkdir fails at once, with its own error.
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { errCode } from './errno';

/**
 * Makes `dir` (and each missing parent) with `mode`. Resolves to the outermost directory it made,
 * or undefined when `dir` was there already (what `mkdir({recursive: true})` returns). Rejects
 * when a part of the path is not a directory or cannot be made.
 */
export async function makeDirs(dir: string, mode: number): Promise<string | undefined> {
  const missing: string[] = [];
  for (let at = path.resolve(dir); ;) {
    try {
      const st = await fsp.stat(at);
      if (!st.isDirectory()) throw Object.assign(new Error(`${at} is not a directory`), { code: 'ENOTDIR' });
      break;
    } catch (e) {
      if (errCode(e) !== 'ENOENT') throw e;
      missing.push(at);
      const up = path.dirname(at);
      if (up === at) break;
      at = up;
    }
  }
  let first: string | undefined;
  for (const d of missing.reverse()) {
    try {
      await fsp.mkdir(d, { mode });
      first ??= d;
    } catch (e) {
      if (errCode(e) !== 'EEXIST') throw e; // made meanwhile by another process: fine
    }
  }
  return first;
}
