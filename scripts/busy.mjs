// Busy mode (issue 39): runs a command while every core is held busy, so that the tests it runs
// meet the scheduling delays of a loaded machine (a timer that fires late, a daemon that answers
// late) instead of an idle one's. One spinner per core (os.availableParallelism(), or
// BUSY_SPINNERS), each a Node process that spins in a process group of its own; the command runs
// with inherited stdio in this process's group. When the command exits, or this process gets
// SIGINT or SIGTERM (passed on to the command), every spinner is killed by its process group, never
// by name, and this process exits with the command's exit code (128 + the signal's number when a
// signal ended it). A spinner whose parent is gone (this process killed with SIGKILL) stops itself.
// test/unit/busy.test.ts proves the spinners spin while the command runs and that none survives.
//
//   node scripts/busy.mjs COMMAND [ARG...]    BUSY_SPINNERS=N: N spinners (0 or more)
import { spawn } from 'node:child_process';
import * as os from 'node:os';

const [command, ...args] = process.argv.slice(2);
if (command === undefined) {
  process.stderr.write('usage: node scripts/busy.mjs COMMAND [ARG...]   (BUSY_SPINNERS=N: N spinners)\n');
  process.exit(2);
}
const wanted = process.env.BUSY_SPINNERS;
const count = wanted === undefined || wanted === '' ? os.availableParallelism() : Number(wanted);
if (!Number.isInteger(count) || count < 0) {
  process.stderr.write(`busy: BUSY_SPINNERS must be a whole number, not ${JSON.stringify(wanted)}\n`);
  process.exit(2);
}

// Spins; every few million rounds it checks that its parent is still this process.
const SPIN = `const parent = ${process.pid}; for (;;) { for (let i = 0; i < 5e6; i++); if (process.ppid !== parent) process.exit(0); }`;
const spinners = [];
for (let i = 0; i < count; i++)
  spinners.push(spawn(process.execPath, ['-e', SPIN], { detached: true, stdio: 'ignore' }));
process.stdout.write(
  `busy: ${count} spinner${count === 1 ? '' : 's'} started (pids ${spinners.map((s) => s.pid).join(' ') || 'none'}), ${os.availableParallelism()} cores\n`,
);

const spinnersGone = Promise.all(spinners.map((s) => new Promise((resolve) => s.once('exit', resolve))));
/** Kills every spinner by its process group; resolves once each has exited (and been reaped). */
function stopSpinners() {
  for (const s of spinners) {
    try {
      process.kill(-s.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return spinnersGone;
}

const child = spawn(command, args, { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    stopSpinners();
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  });
child.on('error', (error) => {
  process.stderr.write(`busy: ${command}: ${error.message}\n`);
  void stopSpinners().then(() => process.exit(127));
});
child.on('exit', (code, signal) => {
  void stopSpinners().then(() => process.exit(code ?? 128 + (os.constants.signals[signal] ?? 0)));
});
