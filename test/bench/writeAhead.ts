// Bench 7: what durability costs per decision. Since the crash journal, the engine saves before
// it announces anything (an arming, a backoff, a give-up, a recovery) and before every set (the
// write-ahead): each such save changes one watch. The product's JsonFileStore appends that
// watch's record to its journal and fdatasyncs it; the baseline is the store as it was before
// (test/bench/baselines/wholeStateStore.ts), one whole state written atomically per save. Both
// at 1,000 and 10,000 watched threads, on the same state, in the same run; then what a restart
// after a crash costs: loading the snapshot and replaying the journal.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { emptyState, newWatch, type PersistedState, type WatchedThread } from '../../src/model/watch';
import { JsonFileStore } from '../../src/store/jsonFileStore';
import { WholeStateStore } from './baselines/wholeStateStore';
import { figure, percentile, type Bench, type BenchContext, type BenchSection, type Figure } from './types';

/** A watch as a recovered thread carries it: history, a failure, the rollout offsets. */
function watch(i: number): WatchedThread {
  const w = newWatch(`thread-${String(i).padStart(5, '0')}`, 1_796_000_000_000);
  w.title = `Keep the nightly build green (${i})`;
  w.rolloutPath = `/home/user/.codex/sessions/2026/11/30/rollout-2026-11-30T12-00-00-${String(i).padStart(5, '0')}.jsonl`;
  w.armOffset = 10_000 + i;
  w.rolloutOffset = 200_000 + i;
  w.goal = {
    status: 'active',
    objective: 'Keep the nightly build green',
    tokensUsed: 12_345,
    tokenBudget: null,
    updatedAt: 1_796_000_000_500,
  };
  w.lastFailure = {
    turnId: 'turn-3',
    message: 'stream disconnected before completion',
    code: 'responseStreamDisconnected',
    httpStatus: null,
    at: 1_796_000_001_000,
    dueAt: 1_796_000_031_000,
  };
  w.recovered = ['turn-3'];
  w.history = [
    {
      at: 1_796_000_031_000,
      failedTurnId: 'turn-3',
      attempt: 1,
      error: 'responseStreamDisconnected',
      outcome: 'recovered',
      detail: 'thread/goal/set accepted',
    },
  ];
  return w;
}

function fleet(n: number): PersistedState {
  const s = emptyState();
  for (let i = 0; i < n; i++) {
    const w = watch(i);
    s.watches[w.threadId] = w;
  }
  return s;
}

interface Timing {
  p50: number;
  p99: number;
}

/** `runs` saves that each change one watch (a write-ahead: pending set, state recovering). */
async function writeAheads(
  state: PersistedState,
  runs: number,
  save: (s: PersistedState, changed: Set<string>) => Promise<void>,
): Promise<Timing> {
  const ids = Object.keys(state.watches);
  const times: number[] = [];
  for (let k = 0; k < runs; k++) {
    const id = ids[(k * 7919) % ids.length];
    const w = state.watches[id];
    const now = 1_796_000_100_000 + k;
    w.pending = { failedTurnId: `turn-${k}`, attempt: 1, sentAt: now };
    w.state = { kind: 'recovering', attempt: 1, failedTurnId: `turn-${k}`, sentAt: now };
    w.updatedAt = now;
    const t = performance.now();
    await save(state, new Set([id]));
    times.push(performance.now() - t);
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

async function measure(
  dir: string,
  threads: number,
  runs: number,
): Promise<{ figures: Figure[]; journalBytesPerRecord: number }> {
  const state = fleet(threads);
  const journaled = new JsonFileStore(path.join(dir, `journal-${threads}.json`));
  await journaled.save(state); // the first save is the snapshot
  const whole = new WholeStateStore(path.join(dir, `whole-${threads}.json`));
  await whole.save(state);
  // Interleaved halves, so a burst of disk noise hits both.
  const half = Math.ceil(runs / 2);
  const a1 = await writeAheads(state, half, (s, c) => journaled.save(s, c));
  const b1 = await writeAheads(state, half, (s, c) => whole.save(s, c));
  const a2 = await writeAheads(state, half, (s, c) => journaled.save(s, c));
  const b2 = await writeAheads(state, half, (s, c) => whole.save(s, c));
  const ours = { p50: (a1.p50 + a2.p50) / 2, p99: Math.max(a1.p99, a2.p99) };
  const base = { p50: (b1.p50 + b2.p50) / 2, p99: Math.max(b1.p99, b2.p99) };
  const journalPath = path.join(dir, `journal-${threads}.json.journal`);
  const journalBytes = fs.existsSync(journalPath) ? fs.statSync(journalPath).size : 0;
  // A restart after a crash: the snapshot plus whatever the journal holds now (no compact).
  await journaled.close(); // the crashed writer's file handle (a dead process holds none)
  const t = performance.now();
  const restarted = new JsonFileStore(path.join(dir, `journal-${threads}.json`));
  const loaded = await restarted.load();
  const replayMs = performance.now() - t;
  await restarted.close();
  if (loaded.problem) throw new Error(loaded.problem);
  if (JSON.stringify(loaded.state) !== JSON.stringify(state))
    throw new Error('the journal did not restore the last saved state');
  const records = 2 * half;
  return {
    figures: [
      figure(`write-ahead save p50, ${threads.toLocaleString('en-US')} threads`, 'ms', ours.p50, base.p50),
      figure(`write-ahead save p99, ${threads.toLocaleString('en-US')} threads`, 'ms', ours.p99, base.p99),
      figure(
        `bytes written per write-ahead, ${threads.toLocaleString('en-US')} threads`,
        'bytes',
        journalBytes / records,
        fs.statSync(path.join(dir, `whole-${threads}.json`)).size,
      ),
      figure(
        `restart after a crash: load and replay, ${threads.toLocaleString('en-US')} threads`,
        'ms',
        replayMs,
        null,
      ),
    ],
    journalBytesPerRecord: journalBytes / records,
  };
}

export const writeAheadBench: Bench = {
  id: 'write-ahead',
  title: 'Durability per decision: the crash journal against whole-state saves',
  async run(ctx: BenchContext): Promise<BenchSection> {
    const runs = ctx.quick ? 20 : 100;
    const sizes = ctx.quick ? [1_000] : [1_000, 10_000];
    const figures: Figure[] = [];
    for (const threads of sizes) {
      ctx.log(`${threads} threads: ${runs} write-aheads each way`);
      const dir = fs.mkdtempSync(path.join(ctx.tmpDir, `write-ahead-${threads}-`));
      figures.push(...(await measure(dir, threads, runs)).figures);
    }
    return {
      id: 'write-ahead',
      title: this.title,
      params: {
        threads: sizes,
        writeAheadsEachWay: runs,
        watch: 'a recovered thread: a failure, one history entry, rollout offsets',
      },
      figures,
      notes: [
        'Product: JsonFileStore, one journal record (the changed watch, whole) appended and fdatasynced; the journal is folded into a new snapshot once it outgrows the snapshot (at least 1 MiB): a fold, a whole-state write, falls inside the runs when it is due, and shows in the p99.',
        'Baseline: the store before the journal (test/bench/baselines/wholeStateStore.ts): the whole state serialized from the same cache and written atomically (temp file, fsync, rename, directory fsync) at every save.',
        'Restart: a new JsonFileStore loads the snapshot, validates every watch with zod, replays the journal left by the runs, folds it into a new snapshot, and the result is compared with the last saved state.',
      ],
    };
  },
};
