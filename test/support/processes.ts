// Whether a process a test started has ended.
import * as fs from 'node:fs';

/** The process is gone, or a zombie (its parent gone too, it still answers kill(0) until reaped). */
export function isDead(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return /^\d+ \(.*\) Z/.test(stat);
  } catch {
    return true;
  }
}
