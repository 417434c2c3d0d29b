// The crash journal's records (src/store/journalRecord.ts): what one save's changes become, the
// header naming the snapshot a journal belongs to, and the replay of a journal over its snapshot.
// Rules: a journal replays only over the snapshot its header names; a last line cut short (a crash
// in an append) is ignored, never used; every other line that cannot be used is reported, with
// what is wrong with it, and the lines around it still apply; a record never reaches the state's
// prototype.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { noEntries } from '../../src/model/sharedState';
import { emptyState, newWatch, type PersistedState } from '../../src/model/watch';
import { journalGeneration, journalHeader, journalLines, replayJournal } from '../../src/store/journalRecord';
import { storedWatch } from '../../src/store/watchRecord';

const HEADER = '{"journal":1,"generation":"g1"}';
const WATCH_A = storedWatch(newWatch('a', 5));

/** A state holding watches `ids` (new ones). */
function stateWith(...ids: string[]): PersistedState {
  const s = emptyState();
  for (const id of ids) s.watches[id] = newWatch(id, 1);
  return s;
}

/** The journal of generation g1 holding `records`, each ended by its newline. */
function journal(...records: string[]): string {
  return [HEADER, ...records].map((line) => `${line}\n`).join('');
}

test('a save’s changes become one line per changed watch, per removed watch, and for the top, in that order', () => {
  const lines = journalLines({ watches: [['a', WATCH_A]], removed: ['b', 'c"'], top: '{"pausedAt":3,"disarmed":{}}' });
  assert.equal(
    lines,
    `{"watch":${WATCH_A}}\n{"removed":"b"}\n{"removed":"c\\""}\n{"top":{"pausedAt":3,"disarmed":{}}}\n`,
  );
  assert.equal(journalLines({ watches: [], removed: [], top: null }), '');
});

test('a journal’s header names its generation, and reads back', () => {
  assert.equal(journalHeader('g1'), `${HEADER}\n`);
  assert.equal(journalGeneration(journalHeader('g1')), 'g1');
  assert.equal(journalGeneration(`${journalHeader('g"2')}{"removed":"a"}\n`), 'g"2');
});

test('a journal names no generation without a whole, readable header line of its format', () => {
  assert.equal(journalGeneration(''), null);
  assert.equal(journalGeneration(`${HEADER} `), null, 'its newline never written');
  assert.equal(journalGeneration('\n'), null);
  assert.equal(journalGeneration('{"journal":1,"generation":\n'), null);
  assert.equal(journalGeneration('{"journal":2,"generation":"g1"}\n'), null, 'another format');
  assert.equal(journalGeneration('{"journal":1,"generation":""}\n'), null, 'no generation');
});

test('a journal of its snapshot applies each record in order: a watch whole, a removal, the top', () => {
  const s = stateWith('b', 'c');
  const r = replayJournal(
    s,
    journal(
      `{"watch":${WATCH_A}}`,
      '{"removed":"b"}',
      '{"removed":"never-there"}',
      '{"top":{"pausedAt":7,"disarmed":{"d":4}}}',
    ),
    'g1',
  );
  assert.deepEqual(r, { applied: 4, dropped: [], torn: false, stale: false });
  assert.deepEqual(Object.keys(s.watches), ['c', 'a']);
  assert.deepEqual(s.watches['a'], newWatch('a', 5));
  assert.equal(s.pausedAt, 7);
  assert.deepEqual(s.disarmed, { d: 4 });
});

test('a watch replayed is used as the record made whole: its empty lists are the one shared frozen list', () => {
  const s = emptyState();
  replayJournal(s, journal(`{"watch":${WATCH_A}}`), 'g1');
  assert.equal(s.watches['a'].recovered, noEntries());
  assert.equal(s.watches['a'].history, noEntries());
});

test('an empty journal (nothing written yet) replays nothing and is not torn', () => {
  const s = stateWith('a');
  assert.deepEqual(replayJournal(s, '', 'g1'), { applied: 0, dropped: [], torn: false, stale: false });
  assert.deepEqual(s, stateWith('a'));
});

test('a journal of its header alone is whole; a header cut short is torn, and nothing is replayed', () => {
  assert.deepEqual(replayJournal(emptyState(), `${HEADER}\n`, 'g1'), {
    applied: 0,
    dropped: [],
    torn: false,
    stale: false,
  });
  assert.deepEqual(replayJournal(emptyState(), HEADER, 'g1'), { applied: 0, dropped: [], torn: true, stale: false });
});

test('a last record cut short is ignored, even when what was written is JSON; the records before it apply', () => {
  const s = stateWith('a', 'b');
  const r = replayJournal(s, `${journal('{"removed":"a"}')}{"removed":"b"}`, 'g1');
  assert.deepEqual(r, { applied: 1, dropped: [], torn: true, stale: false });
  assert.deepEqual(Object.keys(s.watches), ['b']);
});

test('a journal of another snapshot (folded into this one already) is not replayed', () => {
  for (const generation of ['g0', null]) {
    const s = stateWith('a');
    const r = replayJournal(s, journal('{"removed":"a"}'), generation);
    assert.deepEqual(r, { applied: 0, dropped: [], torn: false, stale: true });
    assert.deepEqual(Object.keys(s.watches), ['a']);
  }
});

test('a journal whose header cannot be read replays nothing, and says so with the header', () => {
  const s = stateWith('a');
  const r = replayJournal(s, '{"journal":9}\n{"removed":"a"}\n', 'g1');
  assert.deepEqual(r, {
    applied: 0,
    dropped: ['journal header unreadable ({"journal":9}): no record of it could be replayed'],
    torn: false,
    stale: false,
  });
  assert.deepEqual(Object.keys(s.watches), ['a']);
});

test('each record that cannot be used is reported with its line number and what is wrong; the others apply', () => {
  const badGoal = { ...(JSON.parse(WATCH_A) as object), threadId: 'b', goal: { status: 'gone' } };
  const proto = { ...(JSON.parse(WATCH_A) as object), threadId: '__proto__' };
  const s = stateWith('x');
  const r = replayJournal(
    s,
    journal(
      '{"watch":',
      '[{"watch":1}]',
      'null',
      '5',
      '{"x":1}',
      '{"watch":null}',
      '{"watch":{"title":"t"}}',
      JSON.stringify({ watch: badGoal }),
      JSON.stringify({ watch: proto }),
      '{"removed":5}',
      '{"top":5}',
      '{"top":{"pausedAt":"x","disarmed":{}}}',
      '{"removed":"x"}',
    ),
    'g1',
  );
  assert.deepEqual(r.dropped, [
    'journal record 1: not JSON ({"watch":)',
    'journal record 2: not a record',
    'journal record 3: not a record',
    'journal record 4: not a record',
    'journal record 5: unknown record ({"x":1})',
    'journal record 6: watch (no thread id): (root): Invalid input: expected object, received null',
    'journal record 7: watch (no thread id): threadId: Invalid input: expected string, received undefined',
    'journal record 8: watch "b": goal.status: Invalid option: expected one of ' +
      '"active"|"paused"|"blocked"|"usageLimited"|"budgetLimited"|"complete"',
    'journal record 9: not a usable thread id',
    'journal record 10: removed: not a thread id',
    'journal record 11: top: Invalid input: expected object, received number',
    'journal record 12: top: Invalid input: expected number, received string',
  ]);
  assert.equal(r.applied, 1);
  assert.equal(r.torn, false);
  assert.deepEqual(s, emptyState(), 'only the last record applied: x removed');
  assert.equal(Object.getPrototypeOf(s.watches), Object.prototype);
});

// zod’s record leaves that key out: said, never lost without a word.
test('a disarm under "__proto__" never reaches the state, and is said; the record’s other disarms apply', () => {
  for (const value of ['2', '{"x":1}']) {
    const s = emptyState();
    const r = replayJournal(s, journal(`{"top":{"pausedAt":null,"disarmed":{"__proto__":${value},"c":3}}}`), 'g1');
    const said = 'journal record 1: the disarm of "__proto__" is not a usable thread id: left out; the rest applied';
    assert.deepEqual(r, { applied: 1, dropped: [said], torn: false, stale: false });
    assert.deepEqual(Object.entries(s.disarmed), [['c', 3]]);
    assert.equal(Object.getPrototypeOf(s.disarmed), Object.prototype);
  }
});
