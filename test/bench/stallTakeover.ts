// How long a stall silences recovery: headless runners (dist/cli.js) on one real daemon
// (@openai/codex, the pinned build) and the mock model, as on one machine. Each round starts a
// leader and a follower, lets the leader beat for a while, then stops the leader the way life
// does: SIGSTOP (Ctrl-Z, a debugger, a paused VM: its sockets stay open). Measured from the
// stop: the follower's `role: leader` line (the takeover) and its `connected` line (its engine
// at work against the daemon); then, once the stopped runner is woken (SIGCONT), how long it
// takes to see that its lease ran out and follow the new leader (it must never lead again).
// Baseline in the same run: the same rounds with the leader SIGKILLed instead (a crash: the
// socket closes at once, the best case any election can do). Before the lease (0.3.0), a stopped
// leader was never replaced while it stayed stopped (25 s in issue 23's test: unbounded).
// Times are read from the runners' own line stamps (`ts`, ms) against the stop's wall-clock time.
import { DaemonLab } from '../support/daemonLab';
import { RunnerProcess } from '../support/runnerProcess';
import { sleep } from '../support/wait';
import { LEASE_MS, RENEW_MS } from '../../src/leader/lease';
import * as path from 'node:path';
import { figure, percentile, type Bench, type BenchContext, type BenchSection } from './types';

const T = 30_000;

interface Round {
  toLeaderMs: number;
  toConnectedMs: number;
  /** From SIGCONT to the woken runner's `role: follower` line (stalls only). */
  stepDownMs: number | null;
}

async function round(ctx: BenchContext, lab: DaemonLab, how: 'SIGSTOP' | 'SIGKILL', i: number): Promise<Round> {
  const state = (name: string) => ['--state', path.join(ctx.tmpDir, `${how}-${i}-${name}.json`)];
  const a = new RunnerProcess(['--socket', lab.socket, ...state('a')]);
  let b: RunnerProcess | null = null;
  try {
    await a.waitFor((d) => d.type === 'role' && d.role === 'leader', T, 'a leads');
    await a.connected(T);
    b = new RunnerProcess(['--socket', lab.socket, ...state('b')]);
    await b.waitFor((d) => d.type === 'role' && d.role === 'follower', T, 'b follows');
    // A stop lands anywhere between two beats.
    await sleep(RENEW_MS * 1.5 + Math.random() * RENEW_MS);
    const at = Date.now();
    process.kill(a.child.pid!, how);
    const led = await b.waitFor((d) => d.type === 'role' && d.role === 'leader', LEASE_MS + T, 'b leads');
    const connected = await b.waitFor(
      (d) => d.type === 'connection' && d.state === 'connected' && Date.parse(d.ts) >= Date.parse(led.ts),
      T,
      'b connected',
    );
    let stepDownMs: number | null = null;
    if (how === 'SIGSTOP') {
      const woke = Date.now();
      process.kill(a.child.pid!, 'SIGCONT');
      const followed = await a.waitFor(
        (d) => d.type === 'role' && d.role === 'follower' && d.leaderPid === b!.child.pid,
        T,
        'the woken runner follows',
      );
      stepDownMs = Date.parse(followed.ts) - woke;
      if (a.of('role').filter((d) => d.role === 'leader').length !== 1) throw new Error('the woken runner led again');
    }
    return {
      toLeaderMs: Date.parse(led.ts) - at,
      toConnectedMs: Date.parse(connected.ts) - at,
      stepDownMs,
    };
  } finally {
    if (a.running) process.kill(a.child.pid!, 'SIGCONT');
    await a.kill();
    await b?.kill();
  }
}

export const stallTakeover: Bench = {
  id: 'stall-takeover',
  title: 'Takeover after a stall: a leading runner SIGSTOPped (real daemon)',
  async run(ctx: BenchContext): Promise<BenchSection> {
    const rounds = ctx.quick ? 3 : 8;
    const lab = await DaemonLab.start();
    const stalls: Round[] = [];
    const crashes: Round[] = [];
    try {
      for (let i = 0; i < rounds; i++) {
        stalls.push(await round(ctx, lab, 'SIGSTOP', i));
        crashes.push(await round(ctx, lab, 'SIGKILL', i));
        const s = stalls.at(-1)!;
        ctx.log(
          `round ${i + 1}: stall ${s.toLeaderMs} ms to leader, ${s.toConnectedMs} ms to connected, woken one ` +
            `followed ${s.stepDownMs} ms after SIGCONT; crash ${crashes.at(-1)!.toLeaderMs} ms to leader`,
        );
      }
    } finally {
      await lab.close();
    }
    const p = (list: Round[], key: 'toLeaderMs' | 'toConnectedMs', q: number) =>
      percentile(
        list.map((r) => r[key]),
        q,
      );
    const bound = LEASE_MS + 2_000;
    const maxToLeader = p(stalls, 'toLeaderMs', 100);
    return {
      id: 'stall-takeover',
      title: this.title,
      params: { rounds, leaseMs: LEASE_MS, renewMs: RENEW_MS, runners: 2 },
      figures: [
        figure('takeover after a stall, median', 'ms', p(stalls, 'toLeaderMs', 50), p(crashes, 'toLeaderMs', 50)),
        figure('takeover after a stall, max', 'ms', maxToLeader, p(crashes, 'toLeaderMs', 100), {
          text: `≤ lease + 2 s (${bound} ms)`,
          met: maxToLeader <= bound,
        }),
        figure(
          'connected after a stall, median',
          'ms',
          p(stalls, 'toConnectedMs', 50),
          p(crashes, 'toConnectedMs', 50),
        ),
        figure('connected after a stall, max', 'ms', p(stalls, 'toConnectedMs', 100), p(crashes, 'toConnectedMs', 100)),
        figure(
          'woken leader follows after SIGCONT, max',
          'ms',
          Math.max(...stalls.map((r) => r.stepDownMs ?? 0)),
          null,
        ),
      ],
      notes: [
        `Baseline: the same rounds with the leader SIGKILLed (a crash closes its socket at once: the best case). ` +
          `A stall cannot be told from a slow leader before the lease (${LEASE_MS} ms) runs out; the follower ` +
          `counts it from the leader's last beat (every ${RENEW_MS} ms), so a takeover comes ${LEASE_MS - RENEW_MS}–` +
          `${LEASE_MS} ms after the stop plus the election and the engine's start.`,
        'Before the lease (0.3.0), a stopped leader was never replaced while it stayed stopped: unbounded.',
        'The woken runner never led again in any round (checked), and never acted: its fence is closed (unit and fault tests).',
      ],
    };
  },
};
