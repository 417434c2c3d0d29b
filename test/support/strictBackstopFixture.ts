// Run only as a child by test/unit/strictFakes.test.ts (it is not a *.test file): one test makes a
// set the strict fake daemon forbids and then ends without calling the harness again and with no
// `after` hook; node:test must report that test as failed, naming the broken rule.
import { it } from 'node:test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FakeDaemon } from './fakeDaemon';
import { makeHarness } from './engineHarness';
import { sleep } from './wait';

it('makes a forbidden set and never calls the harness again', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-backstop-'));
  const daemon = new FakeDaemon(dir);
  daemon.addThread(); // active, its turn running: no automatic set is allowed
  await makeHarness({ dir, daemon });
  const c = daemon.accept();
  c.fromClient.write(
    `${JSON.stringify({ id: 'x', method: 'thread/goal/set', params: { threadId: 'thread-1', status: 'active', origin: 'automatic' } })}\n`,
  );
  await sleep(50); // real time passes; no harness call, no check
});

it('a clean test next to it passes', () => undefined);
