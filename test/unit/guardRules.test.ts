// The write guard's rules (src/store/guard.ts), each on its own, in milliseconds: what reads as a
// term, which stored term refuses a save (only a newer one of the writer's own election), what a
// store without a guard or without an election does (writes). Where a snapshot's head names the
// term is snapshotHead.test.ts; the stores that ask the guard are tested in writeGuard.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkFence,
  checkTerm,
  FencedError,
  parseTerm,
  termText,
  type Term,
  type WriteGuard,
} from '../../src/store/guard';

const guard = (fence: string | null, term: Term | null): WriteGuard => ({ fence: () => fence, term: () => term });
const refused = (f: () => void, reason: RegExp) =>
  assert.throws(f, (e: unknown) => e instanceof FencedError && e.name === 'FencedError' && reason.test(e.message));

describe('what reads as a term', () => {
  it('a stamped "n@election" string, and it reads back what termText stamps', () => {
    assert.deepEqual(parseTerm('5@abc_D-9'), { n: 5, of: 'abc_D-9' });
    assert.deepEqual(parseTerm(termText({ n: 123456789012345, of: 'x' })), { n: 123456789012345, of: 'x' });
  });

  it('nothing else: not a value that only prints as one, nor a stamp with anything before or after it', () => {
    for (const value of [['5@x'], { toString: () => '5@x' }, 5, null, undefined])
      assert.equal(parseTerm(value), null, String(value));
    for (const text of [
      'x5@x',
      ' 5@x',
      '5@x ',
      '5@x"',
      '5@',
      '@x',
      '-1@x',
      '1234567890123456@x',
      `5@${'a'.repeat(65)}`,
    ])
      assert.equal(parseTerm(text), null, text);
  });
});

describe('the fence', () => {
  it('a store without a guard writes', () => {
    checkFence(undefined);
  });

  it('an open fence lets the write through; a closed one refuses it with its reason', () => {
    checkFence(guard(null, null));
    refused(() => checkFence(guard('the lease ran out', null)), /^not saved: the lease ran out$/);
  });
});

describe('which stored term refuses a save', () => {
  const mine = { n: 5, of: 'e1' };
  it('a newer term of the same election: refused, naming both terms and the place', () => {
    refused(
      () => checkTerm(guard(null, mine), { n: 6, of: 'e1' }, 'state file s.json'),
      /state file s\.json.*\(6\).*\(5\)/,
    );
  });

  it('the same term, an older one, another election’s, or none stored: written', () => {
    for (const stored of [{ n: 5, of: 'e1' }, { n: 4, of: 'e1' }, { n: 99, of: 'e2' }, null])
      checkTerm(guard(null, mine), stored, 'x');
  });

  it('a writer with no election, or no guard, writes over any stored term', () => {
    checkTerm(guard(null, null), { n: 99, of: 'e1' }, 'x');
    checkTerm(undefined, { n: 99, of: 'e1' }, 'x');
  });
});
