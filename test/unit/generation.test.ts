// The election's generation fence (src/leader/generation.ts), as rules: work begun in a
// generation is wanted until the next start or stop, and never again after it (however many
// generations later); a lost leader's re-election runs only for current work, and only while the
// instance neither leads nor follows. Pure: no I/O, no timers. (That election.ts asks these
// rules at each step is stated with real sockets in electionGeneration.test.ts.)
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Generations } from '../../src/leader/generation';

const NEITHER = { leading: false, following: false };

describe('election generations: the fence', () => {
  it('work begun now is current until a start or stop begins the next generation, and never after', () => {
    const g = new Generations();
    const before = g.now;
    assert.equal(g.current(before), true, 'before any start, work of the first generation is wanted');
    const started = g.begin();
    assert.equal(g.now, started, 'work begun now belongs to the new generation');
    assert.equal(g.current(started), true);
    assert.equal(g.current(before), false, 'a start ends the older generation');
    const stopped = g.begin();
    assert.equal(g.current(stopped), true);
    assert.equal(g.current(started), false, 'a stop ends the started generation');
    const older = [before, started, stopped];
    for (let i = 0; i < 5; i++) g.begin();
    assert.deepEqual(
      older.map((gen) => g.current(gen)),
      [false, false, false],
      'no older generation is ever current again',
    );
    assert.equal(g.current(g.now), true);
  });

  it('two elections keep their generations apart', () => {
    const a = new Generations();
    const b = new Generations();
    assert.equal(b.current(a.now), false);
    assert.equal(a.current(b.begin()), false);
  });
});

describe('election generations: electing again', () => {
  it('current work that neither leads nor follows elects again', () => {
    const g = new Generations();
    assert.equal(g.electsAgain(g.begin(), NEITHER), true);
  });

  it('an instance that leads or follows already (an election settled it meanwhile) does not', () => {
    const g = new Generations();
    const gen = g.begin();
    assert.equal(g.electsAgain(gen, { leading: true, following: false }), false);
    assert.equal(g.electsAgain(gen, { leading: false, following: true }), false);
  });

  it('work of an older generation (a stop came meanwhile) does not, even with no leader', () => {
    const g = new Generations();
    const gen = g.begin();
    g.begin();
    assert.equal(g.electsAgain(gen, NEITHER), false);
  });
});
