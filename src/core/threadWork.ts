// Who does each job of a thread's queue (jobs.ts says what each is): the reconciler looks and
// refreshes, the attempts run and send, a task runs itself.
// When an attempt or a send is done, the schedule looks again (engineCore.ts: the thread may fall
// due again).
import type { Attempts } from './attempt';
import type { EngineCore } from './engineCore';
import type { JobWorker, ThreadJob } from './jobs';
import type { Reconciler } from './reconciler';

export class ThreadWorker implements JobWorker {
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
      case 'due':
        return this.core.schedule.due(threadId, job.notBeforeMono);
      case 'attempt':
        return this.attempts.run(job.session, threadId, job.notBeforeMono);
      case 'send':
        return this.attempts.send(job.prepared);
      case 'task':
        return job.run();
    }
  }
}
