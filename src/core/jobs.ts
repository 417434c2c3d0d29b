// What goes into a thread's work queue (src/util/workQueue.ts, client-go's semantics: a thread's
// work never overlaps and runs in order; a look asked for again while one waits runs once), and
// who does each (the engine names them once, engine.ts):
//   look     an event or a command changed something: the reconciler decides again
//   refresh  a resync's pass: the reconciler reads the thread and decides
//   due      its recovery's due time (a delayed add, set from the watch): its turn (probe, limiter
//            slot), and once its slot is taken, the attempt: reads, vetoes, saves its intent, sets
//   send     a prepared attempt's due time came: the set goes out, or is called off (the job carries it)
//   task     a command's or a pass's own work, awaited by whoever asked
import type { ScheduledState, Watch } from '../model/watch';
import type { DaemonSession } from '../protocol/daemon';
import type { LiveThread } from './live';

/** An attempt between its write-ahead save and its set (carried by its thread's delayed `send` job). */
export interface Prepared {
  session: DaemonSession;
  w: Watch;
  live: LiveThread;
  /** The thread's event count when its reads began: any event since calls the set off. */
  seq: number;
  scheduled: ScheduledState;
  failedTurnId: string;
  expectedStatus: 'blocked' | 'usageLimited';
  attempt: number;
  /** Its write-ahead's time, once written (the recovery budget's count). */
  sentAt: number | null;
}

export type ThreadJob =
  | { readonly kind: 'look' }
  | { readonly kind: 'refresh'; readonly session: DaemonSession }
  | { readonly kind: 'due'; readonly notBeforeMono: number }
  | { readonly kind: 'send'; readonly prepared: Prepared }
  | { readonly kind: 'task'; readonly run: () => Promise<void> };

/** Only looks merge: one waiting look sees every change that asked for it. */
export function merges(job: ThreadJob): boolean {
  return job.kind === 'look';
}

/** Who does a thread's jobs: one function for each kind. */
export type JobWorkers = {
  readonly [K in ThreadJob['kind']]: (threadId: string, job: Extract<ThreadJob, { kind: K }>) => Promise<void> | void;
};
