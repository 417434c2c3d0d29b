// The work queue per key (src/util/workQueue.ts), client-go's semantics: a key never processed twice
// at once, keys side by side, order kept, merging adds joining a waiting job (never one under way),
// failures reaching their caller only, delayed adds that can be taken back, idle keys forgotten.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Job, WorkQueue } from '../../src/util/workQueue';
import { FakeClock } from '../support/fakeClock';
import { turns } from '../support/wait';

interface TestJob extends Job {
  readonly kind: 'look' | 'task';
  readonly name: string;
}

function gate(): { open: () => void; opened: Promise<void> } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/** A queue whose processor logs `key:name start|end`, holds a job while its gate is closed, and fails `fail*` jobs. */
function lab() {
  const clock = new FakeClock();
  const log: string[] = [];
  const dones: string[] = [];
  const tracked: Promise<void>[] = [];
  const gates = new Map<string, ReturnType<typeof gate>>();
  let running = 0;
  let most = 0;
  const perKey = new Map<string, number>();
  const queue = new WorkQueue<TestJob>({
    process: async (key, job) => {
      running += 1;
      most = Math.max(most, running);
      perKey.set(key, (perKey.get(key) ?? 0) + 1);
      assert.equal(perKey.get(key), 1, `${key} processed twice at once`);
      log.push(`${key}:${job.name} start`);
      try {
        await gates.get(`${key}:${job.name}`)?.opened;
        if (job.name.startsWith('fail')) throw new Error(`${job.name} failed`);
      } finally {
        log.push(`${key}:${job.name} end`);
        perKey.set(key, perKey.get(key)! - 1);
        running -= 1;
      }
    },
    merges: (job) => job.kind === 'look',
    done: (key, job) =>
      dones.push(`${key}:${job.name} done, ${job.kind} ${queue.has(key, job.kind) ? 'still' : 'no more'}`),
    track: (done) => tracked.push(done),
    timers: clock,
  });
  const hold = (id: string): (() => void) => {
    const g = gate();
    gates.set(id, g);
    return g.open;
  };
  return { clock, log, dones, tracked, queue, hold, most: () => most };
}

const look = (name: string): TestJob => ({ kind: 'look', name });
const task = (name: string): TestJob => ({ kind: 'task', name });

describe('WorkQueue', () => {
  test('one key: jobs one at a time, in the order added; other keys side by side', async () => {
    const { log, queue, hold, most } = lab();
    const release = hold('a:1');
    const a1 = queue.add('a', task('1'));
    const a2 = queue.add('a', task('2'));
    const b1 = queue.add('b', task('1'));
    await b1;
    assert.deepEqual(log, ['a:1 start', 'b:1 start', 'b:1 end'], 'b ran while a was held; a:2 waited for a:1');
    release();
    await Promise.all([a1, a2]);
    assert.deepEqual(log.slice(3), ['a:1 end', 'a:2 start', 'a:2 end']);
    assert.equal(most(), 2);
  });

  test('never inside the add: the job starts after the caller goes on', async () => {
    const { log, queue } = lab();
    const done = queue.add('a', task('1'));
    assert.deepEqual(log, []);
    await done;
    assert.deepEqual(log, ['a:1 start', 'a:1 end']);
  });

  test('a merging add joins the waiting job of its kind: one run, both callers told', async () => {
    const { log, queue, hold } = lab();
    const release = hold('a:busy');
    const busy = queue.add('a', task('busy'));
    const first = queue.add('a', look('look1'));
    const second = queue.add('a', look('look2'));
    assert.equal(first, second, 'the second add is the first job');
    release();
    await Promise.all([busy, first, second]);
    assert.deepEqual(log, ['a:busy start', 'a:busy end', 'a:look1 start', 'a:look1 end']);
  });

  test('an add while a job of its kind is under way runs again after it (nothing added is lost)', async () => {
    const { log, queue, hold } = lab();
    const release = hold('a:look1');
    const first = queue.add('a', look('look1'));
    await turns(5);
    assert.deepEqual(log, ['a:look1 start']);
    const second = queue.add('a', look('look2'));
    assert.notEqual(first, second);
    release();
    await Promise.all([first, second]);
    assert.deepEqual(log, ['a:look1 start', 'a:look1 end', 'a:look2 start', 'a:look2 end']);
  });

  test('a job that does not merge is never joined', async () => {
    const { log, queue, hold } = lab();
    const release = hold('a:busy');
    const busy = queue.add('a', task('busy'));
    const t1 = queue.add('a', task('t1'));
    const t2 = queue.add('a', task('t2'));
    assert.notEqual(t1, t2);
    release();
    await Promise.all([busy, t1, t2]);
    assert.deepEqual(
      log.filter((l) => l.endsWith('start')),
      ['a:busy start', 'a:t1 start', 'a:t2 start'],
    );
  });

  test('done is told once per job, after it stops counting in `has` and before its caller hears', async () => {
    const { dones, queue, hold } = lab();
    const release = hold('a:t1');
    const t1 = queue.add('a', task('t1')).then(() => dones.push('t1 caller'));
    const t2 = queue.add('a', task('t2')).then(() => dones.push('t2 caller'));
    const failed = queue.add('a', task('fail3')).catch(() => dones.push('fail3 caller'));
    await turns(5);
    assert.deepEqual(dones, []);
    release();
    await Promise.all([t1, t2, failed]);
    assert.deepEqual(dones, [
      'a:t1 done, task still',
      't1 caller',
      'a:t2 done, task still',
      't2 caller',
      'a:fail3 done, task no more',
      'fail3 caller',
    ]);
  });

  test('whoever waits for all work is told of every job queued, a delayed one once due, a merged add not again', async () => {
    const { clock, tracked, queue, hold } = lab();
    const release = hold('a:busy');
    const busy = queue.add('a', task('busy'));
    const l1 = queue.add('a', look('l1'));
    void queue.add('a', look('l2')); // joins l1
    queue.addAfter('b', task('later'), 100);
    assert.deepEqual(tracked, [busy, l1]);
    await clock.advance(100);
    assert.equal(tracked.length, 3, 'the delayed job, once due');
    release();
    await Promise.all(tracked);
  });

  test('a failure reaches its caller only; the key goes on with its next job', async () => {
    const { log, queue } = lab();
    const failed = queue.add('a', task('fail1'));
    const next = queue.add('a', task('2'));
    await assert.rejects(failed, /fail1 failed/);
    await next;
    assert.deepEqual(log, ['a:fail1 start', 'a:fail1 end', 'a:2 start', 'a:2 end']);
  });

  test('has and busy see a job waiting, under way and delayed; an idle key is forgotten', async () => {
    const { clock, queue, hold } = lab();
    const release = hold('a:1');
    const done = queue.add('a', task('1'));
    assert.equal(queue.has('a', 'task'), true, 'waiting');
    assert.equal(queue.has('a', 'look'), false);
    await turns(5);
    assert.equal(queue.has('a', 'task'), true, 'under way');
    release();
    await done;
    await turns(5);
    assert.equal(queue.busy('a'), false);
    assert.equal(queue.size, 0);
    queue.addAfter('a', look('later'), 1_000);
    assert.equal(queue.has('a', 'look'), true, 'delayed');
    assert.equal(queue.busy('a'), true);
    assert.equal(queue.size, 1);
    await clock.advance(1_000);
    await turns(5);
    assert.equal(queue.busy('a'), false);
  });

  test('a delayed add runs at its time, behind the work then waiting', async () => {
    const { clock, log, queue, hold } = lab();
    queue.addAfter('a', look('send'), 500);
    await clock.advance(499);
    assert.deepEqual(log, []);
    const release = hold('a:busy');
    const busy = queue.add('a', task('busy'));
    await turns(5);
    await clock.advance(1);
    assert.deepEqual(log, ['a:busy start'], 'due, but the key is busy');
    assert.equal(queue.has('a', 'look'), true);
    release();
    await busy;
    await turns(5);
    assert.deepEqual(log, ['a:busy start', 'a:busy end', 'a:send start', 'a:send end']);
  });

  test('delayed adds taken back never run and are handed back; a second delayed add of a kind replaces the first', async () => {
    const { clock, log, queue } = lab();
    queue.addAfter('a', look('first'), 100);
    queue.addAfter('a', look('second'), 300);
    queue.addAfter('b', look('third'), 50);
    queue.addAfter('c', task('other kind'), 400);
    await clock.advance(20);
    assert.deepEqual(log, []);
    assert.deepEqual(queue.takeBack('look'), [
      { key: 'a', job: look('second') },
      { key: 'b', job: look('third') },
    ]);
    assert.deepEqual(queue.takeBack('look'), [], 'nothing left to take back');
    assert.equal(queue.busy('a'), false);
    assert.equal(queue.busy('b'), false);
    assert.equal(queue.has('c', 'task'), true, 'a delayed add of another kind was taken back');
    await clock.advance(1_000);
    assert.deepEqual(log, ['c:other kind start', 'c:other kind end']);
    assert.equal(clock.pending().length, 0, 'their timers cleared');
  });

  test('a delayed add that is due is no longer taken back: it runs', async () => {
    const { clock, log, queue, hold } = lab();
    const release = hold('a:busy');
    const busy = queue.add('a', task('busy'));
    await turns(5);
    queue.addAfter('a', look('due'), 10);
    await clock.advance(10);
    assert.deepEqual(queue.takeBack('look'), [], 'a due add, waiting behind work under way, was taken back');
    release();
    await busy;
    await turns(5);
    assert.deepEqual(log, ['a:busy start', 'a:busy end', 'a:due start', 'a:due end']);
  });

  test('a delayed job that fails is reported by no one but the processor, and the key goes on', async () => {
    const { clock, log, queue } = lab();
    queue.addAfter('a', task('fail-later'), 10);
    await clock.advance(10);
    await turns(5);
    await queue.add('a', task('after'));
    assert.deepEqual(log, ['a:fail-later start', 'a:fail-later end', 'a:after start', 'a:after end']);
  });
});
