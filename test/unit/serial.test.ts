// The serialization primitive (src/util/serial.ts): order and isolation of failures; work over
// many items, a few at a time. The queue per key is test/unit/workQueue.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eachAtMost, Serial } from '../../src/util/serial';
import { immediate } from '../support/wait';

function gate(): { open: () => void; opened: Promise<void> } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('Serial', () => {
  test('runs work one at a time, in the order it was given', async () => {
    const serial = new Serial();
    const log: string[] = [];
    const first = gate();
    const a = serial.run(async () => {
      log.push('a start');
      await first.opened;
      log.push('a end');
      return 1;
    });
    const b = serial.run(() => {
      log.push('b');
      return 2;
    });
    await immediate();
    assert.deepEqual(log, ['a start']);
    assert.equal(serial.idle, false);
    first.open();
    assert.deepEqual(await Promise.all([a, b]), [1, 2]);
    assert.deepEqual(log, ['a start', 'a end', 'b']);
    await serial.drained();
    assert.equal(serial.idle, true);
  });

  test('a failure reaches its caller only; the next work runs all the same', async () => {
    const serial = new Serial();
    const failed = serial.run(() => Promise.reject(new Error('boom')));
    const next = serial.run(() => 'ran');
    await assert.rejects(failed, /boom/);
    assert.equal(await next, 'ran');
  });
});

describe('eachAtMost', () => {
  test('never runs more than `width` at once, starts items in order, and does every one', async () => {
    let running = 0;
    let most = 0;
    const started: number[] = [];
    await eachAtMost([...Array(50).keys()], 4, async (i) => {
      started.push(i);
      running += 1;
      most = Math.max(most, running);
      for (let k = 0; k < (i % 3) + 1; k++) await immediate();
      running -= 1;
    });
    assert.equal(most, 4);
    assert.deepEqual(started, [...Array(50).keys()]);
  });

  test('rejects with the first failure, and starts nothing after it', async () => {
    const started: number[] = [];
    await assert.rejects(
      eachAtMost([...Array(20).keys()], 3, async (i) => {
        started.push(i);
        await immediate();
        if (i === 4) throw new Error(`item ${i} failed`);
      }),
      /item 4 failed/,
    );
    await immediate();
    assert.ok(started.length < 20, `started ${started.length} of 20`);
    assert.ok(Math.max(...started) <= 4 + 3, `nothing much after the failure: ${started.join(',')}`);
  });

  test('no items: resolves at once', async () => {
    await eachAtMost([], 8, () => Promise.reject(new Error('never called')));
  });
});
