// What a snapshot's head says (src/store/snapshotHead.ts), each rule on its own, in milliseconds:
// the term and the daemon are read before the watches only (a goal's text may say anything), each
// only in the form a snapshot writes it, both from one read of the file's head; a missing,
// unreadable, corrupt or huge file names nothing or what its head says, and no read leaves a
// file open. The stores that check them are tested in writeGuard.test.ts and stateFiles.test.ts.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { headOnDisk, readHead } from '../../src/store/snapshotHead';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-head-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const NOTHING = { term: null, daemon: null };

describe("where the term is read in a snapshot's head", () => {
  it('before the watches', () => {
    assert.deepEqual(readHead('{"version":1,"term":"7@e","watches":{"t":{"term":"9@e"}}}').term, { n: 7, of: 'e' });
  });

  it('never from inside the watches (a goal’s text may say anything)', () => {
    assert.equal(readHead('{"version":1,"watches":{"t":{"x":1}},"term":"9@e"}').term, null);
    assert.equal(readHead('"watches":{},"term":"9@e"}').term, null);
    assert.equal(
      readHead('{"version":2,"pausedAt":null,"watches":{"t":{"title":"\\"term\\":\\"9@x\\","}}}').term,
      null,
    );
  });

  it('a head cut before the watches begin: the term is read up to its end', () => {
    assert.deepEqual(readHead('{"version":1,"term":"7@e"}').term, { n: 7, of: 'e' });
    assert.deepEqual(readHead('{"term":"7@e",').term, { n: 7, of: 'e' });
  });

  it('only a whole stamp: not a cut one, nor one that is not a term', () => {
    for (const head of ['{"term":"7@e', '{"term":"7@e"', '{"term":"7@e":', '{"term":"x@e",', '{"term":7,'])
      assert.equal(readHead(head).term, null, head);
  });
});

describe("where the daemon is read in a snapshot's head", () => {
  it('a JSON string before the watches, escapes and all', () => {
    assert.equal(readHead('{"version":2,"daemon":"/h/a.sock","pausedAt":null').daemon, '/h/a.sock');
    assert.equal(readHead('{"daemon":"/h/\\"q\\".sock","watches":{}}').daemon, '/h/"q".sock');
    assert.equal(readHead('{"daemon":"/h/\\\\","watches":{}}').daemon, '/h/\\');
  });

  it('nothing else: inside the watches, not a string, not JSON, cut, or none', () => {
    assert.equal(readHead('{"version":2,"watches":{"daemon":"/x"}}').daemon, null, 'inside the watches');
    assert.equal(readHead('{"version":2,"daemon":7,"watches":{}}').daemon, null);
    assert.equal(readHead('{"version":2,"daemon":"\\x"}').daemon, null, 'not JSON');
    assert.equal(readHead('{"version":2,"daemon":"/h/a.so').daemon, null, 'cut');
    assert.equal(readHead('{"version":2,"daemon":"","watches":{}}').daemon, null, 'empty: as the load reads it');
    assert.equal(readHead('{"version":2,"watches":{}}').daemon, null);
  });

  it('both from one head, each where the other is not', () => {
    assert.deepEqual(readHead('{"version":2,"journal":"g","term":"3@e","daemon":"/s","pausedAt":null,"watches":{}}'), {
      term: { n: 3, of: 'e' },
      daemon: '/s',
    });
    assert.deepEqual(readHead('{"version":2,"daemon":"/s","watches":{}}'), { term: null, daemon: '/s' });
    assert.deepEqual(readHead('{"version":2,"term":"3@e","watches":{}}'), { term: { n: 3, of: 'e' }, daemon: null });
  });
});

describe('the head on disk', () => {
  const file = (name: string, text: string | Buffer): string => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, text);
    return p;
  };

  it('read from the file’s head, a long daemon address and all', async () => {
    const long = `/h/${'d'.repeat(2000)}.sock`;
    const p = file('state.json', `{"version":2,"term":"3@e","daemon":${JSON.stringify(long)},"watches":{}}`);
    assert.deepEqual(await headOnDisk(p), { term: { n: 3, of: 'e' }, daemon: long });
  });

  it('a huge file: only its head is read, and it says what the head says', async () => {
    const watches = '"x":1,'.repeat(200_000);
    const p = file('huge.json', `{"version":2,"term":"4@e","daemon":"/s","watches":{${watches}"y":{"term":"9@e"}}}`);
    assert.deepEqual(await headOnDisk(p), { term: { n: 4, of: 'e' }, daemon: '/s' });
  });

  it('names nothing for a missing file, a directory, an empty or a corrupt one', async () => {
    assert.deepEqual(await headOnDisk(path.join(dir, 'none.json')), NOTHING);
    fs.mkdirSync(path.join(dir, 'adir'));
    assert.deepEqual(await headOnDisk(path.join(dir, 'adir')), NOTHING);
    assert.deepEqual(await headOnDisk(file('empty.json', '')), NOTHING);
    assert.deepEqual(await headOnDisk(file('garbage.json', Buffer.from([0xff, 0, 0x22, 0x0a, 0xc3]))), NOTHING);
  });

  it('reading it leaves no file open (a save reads it every time)', async () => {
    const p = file('open.json', '{"term":"3@e","daemon":"/s","watches":{}}');
    const open = () => fs.readdirSync('/proc/self/fd').length;
    const before = open();
    for (let i = 0; i < 20; i++) await headOnDisk(p);
    await headOnDisk(path.join(dir, 'adir'));
    assert.equal(open(), before);
  });
});
