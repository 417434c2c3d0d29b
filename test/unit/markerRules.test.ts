// The rules of a rollout's goal lines (src/core/markerRules.ts), row by row: where a just-armed
// watch's arming stands, which model block still holds, which markers are older than the arming.
// Pure: no rollout. (That humanMarkers.ts reads the rollout and carries them out: markers.test.ts,
// the seed's TestPauseDuringRead and the engine's tests.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { armingOffset, markerCounts, modelBlock } from '../../src/core/markerRules';
import type { GoalLine } from '../../src/rollout/markers';

const event = (status: GoalLine['status'], offset: number): GoalLine => ({ by: 'event', status, offset });
const model = (status: GoalLine['status'], offset: number): GoalLine => ({ by: 'model', status, offset });

describe('the arming of a just-armed watch', () => {
  const rows: [string, GoalLine[], number | null, number][] = [
    [
      'the last active goal event of the lines read',
      [event('active', 10), event('paused', 20), event('active', 30)],
      5,
      30,
    ],
    [
      'an active event before a later paused one still is the last activation',
      [event('active', 10), event('paused', 20)],
      5,
      10,
    ],
    ['a model active call is no activation: the backward lookup’s', [model('active', 40)], 5, 5],
    ['an event of another status is none: the backward lookup’s', [event('blocked', 40), event('paused', 50)], 7, 7],
    ['no activation read and none found: the start of the file', [model('blocked', 40)], null, 0],
    ['no lines, the lookup’s activation', [], 12, 12],
  ];
  for (const [name, lines, activation, expected] of rows)
    it(`${name} → ${expected}`, () => assert.equal(armingOffset(lines, activation), expected));
});

describe('the model block that still holds', () => {
  const rows: [string, GoalLine[], number, number | null, number | null][] = [
    ['none before, none read', [], 0, null, null],
    ['a block held before, nothing read: still held', [], 0, 15, 15],
    ['a model blocked call since the arming', [model('blocked', 20)], 10, null, 20],
    ['a model blocked call at the arming itself counts', [model('blocked', 10)], 10, null, 10],
    ['a model blocked call before the arming does not', [model('blocked', 9)], 10, null, null],
    ['a later active goal event lifts it', [model('blocked', 20), event('active', 30)], 0, null, null],
    [
      'an active goal event before the block does not lift it',
      [event('active', 20), model('blocked', 30)],
      0,
      null,
      30,
    ],
    ['an active event before the arming does not lift a held block', [event('active', 40)], 50, 30, 30],
    ['an active event lifts a block held from before', [event('active', 40)], 0, 30, null],
    // The file was rewritten (a new rollout, read from its start): the held block's offset is the old
    // file's, and an active event read now comes after it all the same.
    [
      'after a rewrite, an active event at a lower offset lifts the old file’s block',
      [event('active', 5)],
      0,
      300,
      null,
    ],
    ['a blocked goal event is no model block', [event('blocked', 20)], 0, null, null],
    ['a blocked goal event does not move a held block', [event('blocked', 40)], 0, 30, 30],
    ['the model’s own active call does not lift it', [model('blocked', 20), model('active', 30)], 0, null, 20],
    ['another goal event does not lift it', [model('blocked', 20), event('paused', 30)], 0, null, 20],
    ['the model’s paused call is no block', [model('paused', 20)], 0, null, null],
    ['the newest of two blocks holds', [model('blocked', 20), model('blocked', 40)], 0, null, 40],
    ['lifted, then blocked again', [model('blocked', 20), event('active', 30), model('blocked', 40)], 0, null, 40],
  ];
  for (const [name, lines, armOffset, current, expected] of rows)
    it(`${name} → ${expected}`, () => assert.equal(modelBlock(lines, armOffset, current), expected));
});

describe('a marker older than the arming says nothing', () => {
  const rows: [number, number | null, boolean][] = [
    [9, 10, false],
    [10, 10, true],
    [11, 10, true],
    [0, null, true],
    [5, null, true],
  ];
  for (const [offset, armOffset, counts] of rows)
    it(`a marker at ${offset}, armed at ${armOffset} → ${counts ? 'counts' : 'older'}`, () =>
      assert.equal(markerCounts(offset, armOffset), counts));
});
