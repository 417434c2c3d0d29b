// The test support that keeps a killed test process from leaving its runners behind
// (test/support/orphanGuard.ts): a guarded child outlives its parent by at most a second.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { test } from 'node:test';
import { isDead } from '../support/processes';
import { sleep, until } from '../support/wait';

const GUARD = path.resolve(__dirname, '..', 'support', 'orphanGuard.js');

test('a guarded child ends when its parent is killed, and only then', async () => {
  // The parent starts a guarded child that would otherwise live for a minute, prints its pid, and
  // waits; SIGKILL gives it no chance to clean up.
  const script = [
    "const { spawn } = require('node:child_process');",
    `const c = spawn(process.execPath, ['--require', ${JSON.stringify(GUARD)}, '-e', 'setTimeout(() => {}, 60000)'],`,
    "  { stdio: 'ignore' });",
    'console.log(c.pid);',
    'setInterval(() => {}, 1000);',
  ].join('\n');
  const parent = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => parent.once('exit', resolve));
  let out = '';
  parent.stdout.on('data', (b: Buffer) => (out += b.toString()));
  try {
    await until('the child pid', () => /^\d+\n/.test(out), 10_000);
    const child = Number(out.trim());
    await sleep(1_200);
    assert.ok(!isDead(child), 'the guarded child ended while its parent was alive');
    parent.kill('SIGKILL');
    await exited;
    await until('the orphaned child to end', () => isDead(child), 5_000);
  } finally {
    if (parent.exitCode === null && parent.signalCode === null) parent.kill('SIGKILL');
  }
});
