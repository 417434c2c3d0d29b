// The write guard's rules (src/store/guard.ts), each on its own, in milliseconds: what reads as a
// term, which stored term refuses a save (only a newer one of the writer's own election), what a
// store without a guard or without an election does (writes), where in a snapshot's head the term
// is read (before the watches only), and that reading it leaves no file open. The stores that ask
// the guard are tested in writeGuard.test.ts.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  checkFence,
  checkTerm,
  FencedError,
  parseTerm,
  termInHead,
  termOnDisk,
  termText,
  type Term,
  type WriteGuard,
} from '../../src/store/guard';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-guard-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

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

describe("where the term is read in a snapshot's head", () => {
  it('before the watches', () => {
    assert.deepEqual(termInHead('{"version":1,"term":"7@e","watches":{"t":{"term":"9@e"}}}'), { n: 7, of: 'e' });
  });

  it('never from inside the watches (a goal’s text may say anything)', () => {
    assert.equal(termInHead('{"version":1,"watches":{"t":{"x":1}},"term":"9@e"}'), null);
    assert.equal(termInHead('"watches":{},"term":"9@e"}'), null);
  });

  it('a head cut before the watches begin: the term is read up to its end', () => {
    assert.deepEqual(termInHead('{"version":1,"term":"7@e"}'), { n: 7, of: 'e' });
    assert.deepEqual(termInHead('{"term":"7@e",'), { n: 7, of: 'e' });
  });
});

describe('the term on disk', () => {
  it('read from the file’s head; none for a missing file', async () => {
    const file = path.join(dir, 'state.json');
    fs.writeFileSync(file, '{"version":1,"term":"3@e","watches":{}}');
    assert.deepEqual(await termOnDisk(file), { n: 3, of: 'e' });
    assert.equal(await termOnDisk(path.join(dir, 'none.json')), null);
  });

  it('reading it leaves no file open (a save reads it every time)', async () => {
    const file = path.join(dir, 'open.json');
    fs.writeFileSync(file, '{"term":"3@e","watches":{}}');
    const open = () => fs.readdirSync('/proc/self/fd').length;
    const before = open();
    for (let i = 0; i < 20; i++) await termOnDisk(file);
    assert.equal(open(), before);
  });
});
