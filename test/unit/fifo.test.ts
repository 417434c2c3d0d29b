// The message queue of the JSON-RPC connection (src/util/fifo.ts): order kept across its
// compactions, and a take that does not grow with the number of items waiting.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Fifo } from '../../src/util/fifo';

describe('Fifo', () => {
  test('gives items back in the order they came, through every compaction, pushes interleaved', () => {
    const q = new Fifo<number>();
    const model: number[] = [];
    let next = 0;
    // Random-length bursts of pushes and takes, far past the 1,024-slot compaction threshold.
    let seed = 7;
    const rand = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 400; round++) {
      for (let i = rand(60); i > 0; i--) {
        q.push(next);
        model.push(next++);
      }
      for (let i = rand(60); i > 0; i--) assert.equal(q.shift(), model.shift());
      assert.equal(q.length, model.length);
    }
    while (model.length > 0) assert.equal(q.shift(), model.shift());
    assert.equal(q.shift(), undefined);
    assert.equal(q.length, 0);
  });

  test('clear empties it', () => {
    const q = new Fifo<string>();
    q.push('a');
    q.push('b');
    q.clear();
    assert.equal(q.length, 0);
    assert.equal(q.shift(), undefined);
    q.push('c');
    assert.equal(q.shift(), 'c');
  });

  test('taking 200,000 items one by one is linear: as fast per item as taking 2,000', () => {
    // Counted, not timed: the work of a take is the slots it moves. Array.prototype.shift moves
    // all the others each time; a Fifo moves each item at most once per compaction, and a
    // compaction happens only when half the array has been taken.
    const moves = (n: number): number => {
      const q = new Fifo<number>();
      for (let i = 0; i < n; i++) q.push(i);
      let moved = 0;
      const inner = q as unknown as { items: unknown[] };
      for (let i = 0; i < n; i++) {
        const before = inner.items;
        q.shift();
        if (inner.items !== before && inner.items.length > 0) moved += inner.items.length;
      }
      return moved / n;
    };
    assert.ok(moves(200_000) <= 1, `moves per take at 200,000: ${moves(200_000)}`);
    assert.ok(moves(2_000) <= 1);
  });
});
