// Busy mode (scripts/busy.mjs, `npm run test:busy`, a step of .ci/run): while the command runs,
// each spinner really burns CPU (its utime in /proc/<pid>/stat grows), in a process group of its
// own; and no spinner outlives the command, whether it succeeds, fails, cannot be started, or the
// wrapper is told to stop (SIGTERM), and even when the wrapper is killed outright (SIGKILL: the
// spinner sees its parent gone). The wrapper exits with the command's code. Linux only (/proc).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { sleep } from '../support/wait';

const root = path.resolve(__dirname, '../../..');
const SCRIPT = path.join(root, 'scripts/busy.mjs');
const skip = fs.existsSync('/proc/self/stat') ? false : 'needs /proc (Linux)';

interface Stat {
  state: string;
  pgrp: number;
  ppid: number;
  /** utime + stime, in clock ticks. */
  cpu: number;
}
/** /proc/<pid>/stat's fields, or undefined when there is no such process. */
function stat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const f = text.slice(text.lastIndexOf(')') + 2).split(' '); // f[0] is field 3 (state)
  return { state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]), cpu: Number(f[11]) + Number(f[12]) };
}
/** Gone: no such process, or a zombie that no longer runs (never the case here: the wrapper reaps them). */
const alive = (pid: number) => {
  const s = stat(pid);
  return s !== undefined && s.state !== 'Z' && s.state !== 'X';
};

/** Starts the wrapper on `node -e CODE`; resolves the spinners' PIDs from its first line. */
function busy(code: string, spinners: number) {
  const wrapper = spawn(process.execPath, [SCRIPT, process.execPath, '-e', code], {
    cwd: root,
    env: { ...process.env, BUSY_SPINNERS: String(spinners) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  wrapper.stdout.setEncoding('utf8');
  wrapper.stderr.setEncoding('utf8');
  wrapper.stderr.on('data', (chunk: string) => (out += chunk));
  const pids = new Promise<number[]>((resolve, reject) => {
    wrapper.stdout.on('data', (chunk: string) => {
      out += chunk;
      const m = /^busy: (\d+) spinners? started \(pids ([\d ]+|none)\)/m.exec(out);
      if (m) resolve(m[2] === 'none' ? [] : m[2].split(' ').map(Number));
    });
    wrapper.once('exit', () => reject(new Error(`the wrapper exited before naming its spinners:\n${out}`)));
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    wrapper.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { wrapper, pids, exited, output: () => out };
}

async function assertAllGone(pids: number[], withinMs = 0) {
  const until = Date.now() + withinMs;
  while (pids.some(alive) && Date.now() < until) await sleep(50);
  assert.deepEqual(
    pids.filter(alive),
    [],
    `spinners still running: ${pids.map((p) => `${p} ${JSON.stringify(stat(p))}`).join(', ')}`,
  );
}

describe('busy mode (scripts/busy.mjs)', { skip }, () => {
  it('spins one process per spinner, each in its own group, burning CPU while the command runs; none survives its success', async () => {
    // The command runs until its stdin (the wrapper's, inherited) ends: it outlives the measuring.
    const run = busy("process.stdin.resume(); process.stdin.on('end', () => process.exit(0));", 2);
    const pids = await run.pids;
    assert.equal(pids.length, 2);
    const before = pids.map((p) => stat(p)!);
    // Each spinner gets 1 s of CPU (100 ticks at 100 a second; starting Node costs some 15) within
    // 30 s even on a machine loaded far past its cores; a spinner that sleeps never does.
    const until = Date.now() + 30_000;
    const burnt = () => pids.map((p, i) => (stat(p)?.cpu ?? 0) - before[i].cpu);
    while (burnt().some((ticks) => ticks < 100) && Date.now() < until) await sleep(100);
    assert.ok(
      burnt().every((ticks) => ticks >= 100),
      `ticks each spinner burnt: ${burnt().join(', ')}`,
    );
    for (const pid of pids) {
      const now = stat(pid);
      assert.ok(now && alive(pid), `spinner ${pid} is running`);
      assert.equal(now.pgrp, pid, `spinner ${pid} leads a process group of its own`);
      assert.equal(now.ppid, run.wrapper.pid, `spinner ${pid} is the wrapper's child`);
    }
    run.wrapper.stdin.end();
    assert.deepEqual(await run.exited, { code: 0, signal: null }, run.output());
    await assertAllGone(pids);
  });

  it("exits with a failing command's code, and no spinner survives it", async () => {
    const run = busy('setTimeout(() => process.exit(3), 300)', 2);
    const pids = await run.pids;
    assert.deepEqual(await run.exited, { code: 3, signal: null }, run.output());
    await assertAllGone(pids);
  });

  it('exits 127 when the command cannot be started, and no spinner survives it', async () => {
    const wrapper = spawn(process.execPath, [SCRIPT, path.join(root, 'no-such-command')], {
      env: { ...process.env, BUSY_SPINNERS: '2' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    wrapper.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const code = await new Promise((resolve) => wrapper.once('exit', resolve));
    assert.equal(code, 127);
    const pids = /pids ([\d ]+)\)/.exec(out)![1].split(' ').map(Number);
    assert.equal(pids.length, 2);
    await assertAllGone(pids);
  });

  it('on SIGTERM passes the signal on to the command, stops every spinner, and exits as the command did', async () => {
    const run = busy('setTimeout(() => {}, 60_000)', 2);
    const pids = await run.pids;
    await sleep(300);
    assert.ok(pids.every(alive));
    run.wrapper.kill('SIGTERM');
    assert.deepEqual(await run.exited, { code: 128 + 15, signal: null }, run.output());
    await assertAllGone(pids);
  });

  it('a spinner stops itself when the wrapper is killed outright (SIGKILL)', async () => {
    const run = busy('setTimeout(() => {}, 5_000)', 1);
    const pids = await run.pids;
    await sleep(300);
    run.wrapper.kill('SIGKILL');
    await run.exited;
    // The command (in the wrapper's group, as an interactive run would have it) is the test's to end.
    await assertAllGone(pids, 5_000);
  });
});
