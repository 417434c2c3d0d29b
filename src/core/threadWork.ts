// The work of one thread. Each thread has one queue (src/util/workQueue.ts, client-go's semantics):
// its work never overlaps and runs in order, and a look asked for again while one waits runs once.
// What the engine's parts ask of a thread goes in as a job, and this file says who does each:
//   look     an event or a command changed something: the reconciler decides again
//   refresh  a resync's pass: the reconciler reads the thread and decides
//   attempt  its recovery fell due (the schedule): the attempt reads, vetoes, saves its intent, sets
//   send     a prepared attempt's due time came: the set goes out, or is called off (the job carries it)
//   task     a command's or a pass's own work, awaited by whoever asked
// When an attempt or a send is done, the schedule looks again (engineCore.ts: the thread may fall
// due again).
import type { DaemonSession } from '../protocol/daemon';
import type { Attempts, Prepared } from './attempt';
import type { EngineCore } from './engineCore';
import type { Reconciler } from './reconciler';

export type ThreadJob =
  | { readonly kind: 'look' }
  | { readonly kind: 'refresh'; readonly session: DaemonSession }
  | { readonly kind: 'attempt'; readonly session: DaemonSession; readonly notBeforeMono: number }
  | { readonly kind: 'send'; readonly prepared: Prepared }
  | { readonly kind: 'task'; readonly run: () => Promise<void> };

/** Only looks merge: one waiting look sees every change that asked for it. */
export function merges(job: ThreadJob): boolean {
  return job.kind === 'look';
}

export class ThreadWorker {
  constructor(
    private readonly core: EngineCore,
    private readonly reconciler: Reconciler,
    private readonly attempts: Attempts,
  ) {}

  async process(threadId: string, job: ThreadJob): Promise<void> {
    switch (job.kind) {
      case 'look': {
        const session = this.core.session;
        if (session) await this.reconciler.evaluate(session, threadId);
        return;
      }
      case 'refresh':
        return this.reconciler.refresh(job.session, threadId);
      case 'attempt':
        return this.attempts.run(job.session, threadId, job.notBeforeMono);
      case 'send':
        return this.attempts.send(job.prepared);
      case 'task':
        return job.run();
    }
  }
}
