// The command table (src/core/commandTable.ts): every command by name, whether it names a thread,
// the method of its name it runs; the names, the channel's check and the dispatch derive from it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  COMMAND_TABLE,
  COMMANDS,
  type CommandTarget,
  isServiceCommand,
  parseChannelCommand,
  runCommand,
} from '../../src/core/commandTable';

/** An engine that records which method ran, with what. */
function recorder(): { target: CommandTarget; calls: string[] } {
  const calls: string[] = [];
  const method =
    (name: string) =>
    (...args: unknown[]): Promise<void> => {
      calls.push(`${name}(${args.join(',')})`);
      return Promise.resolve();
    };
  const target = Object.fromEntries(COMMANDS.map((m) => [m, method(m)])) as unknown as CommandTarget;
  return { target, calls };
}

test('each command runs its own method: a thread command with its thread, the others with nothing', async () => {
  const { target, calls } = recorder();
  for (const command of COMMANDS) await runCommand(target, command, 't1');
  assert.deepEqual(calls, [
    'pauseAll()',
    'resumeAll()',
    'pauseGoal(t1)',
    'arm(t1)',
    'disarm(t1)',
    'rearm(t1)',
    'retryNow(t1)',
    'refresh()',
    'reset()',
  ]);
});

test('a thread command without its thread is refused before anything runs', async () => {
  const { target, calls } = recorder();
  for (const command of COMMANDS.filter((c) => COMMAND_TABLE[c].thread))
    await assert.rejects(runCommand(target, command), new RegExp(`^Error: ${command} needs a thread$`));
  assert.deepEqual(calls, []);
});

test("the channel knows the table's names and no others, not even an object's own", () => {
  for (const command of COMMANDS) assert.equal(isServiceCommand(command), true, command);
  for (const other of ['resync', 'toString', 'constructor', '__proto__', 'hasOwnProperty', ''])
    assert.equal(isServiceCommand(other), false, other);
  assert.deepEqual(parseChannelCommand('arm', ['t1']), { command: 'arm', threadId: 't1' });
  assert.deepEqual(parseChannelCommand('pauseAll', [7]), { command: 'pauseAll' });
  assert.throws(() => parseChannelCommand('toString', []), /^Error: unknown command toString$/);
});
