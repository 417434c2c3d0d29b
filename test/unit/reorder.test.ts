// The engine is level-triggered: the order in which the daemon's notifications arrive changes
// when a decision is taken, never which. Each core scenario runs once on the strict fake daemon
// as it sends (the reference) and then under its reordering mode (test/support/fakeReorder.ts:
// the notifications of one daemon-side transition in a seeded order, with seeded gaps in which
// the engine's reads are answered) for SEEDS seeds, and must end the same way: the same sets at
// the same fake-clock times, the same states at each checkpoint, the same decisions per thread.
// The orders must really vary (the last test): a mode that moved nothing could not fail.
// Shipped defaults (DEFAULT_OPTIONS: backoff base 30 s, 60 s resync, 60 s usage margin).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dueAt } from '../../src/model/queries';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { FakeDaemon } from '../support/fakeDaemon';
import { Reorderer } from '../support/fakeReorder';
import { armedHarness, type Harness } from '../support/engineHarness';
import { ownProviders } from '../support/fleet';
import { tempDir } from '../support/wait';

const SEEDS = 24;
const RESYNC = DEFAULT_OPTIONS.resyncMs;
const MARGIN = DEFAULT_OPTIONS.usageMarginMs;
const HOUR = 3_600_000;

const harnesses: Harness[] = [];
after(async () => {
  for (const h of harnesses) await h.cleanup();
});

/** What a run shows at a checkpoint: each watch's state, failure and recoveries, and the sets so far. */
type Outcome = Record<string, unknown>[];

interface Run {
  h: Harness;
  /** Records the engine's state as it stands (its clock relative to the start). */
  look: (label: string) => void;
}

/** The decisions that say what the engine did to a thread, in its order (other threads' interleave freely). */
const DECISIVE = new Set(['backoff', 'recovering', 'recovered', 'gave-up', 'attention', 'disarmed', 'rearmed']);

async function runOnce(
  threads: string[],
  seed: number | null,
  scenario: (run: Run) => Promise<void>,
): Promise<{ outcome: Outcome; delivered: string[] }> {
  const daemon = new FakeDaemon(tempDir('cgr-reorder-'));
  daemon.reorder = seed === null ? null : new Reorderer(seed);
  for (const id of threads) daemon.addThread(id).status = { type: 'active', activeFlags: [] }; // its turn runs
  ownProviders(daemon, threads); // no outage groups: each goal meets only the limiter
  const h = await armedHarness([], { daemon, dir: daemon.dir }, harnesses);
  for (const id of threads) assert.equal(h.engine.watch(id)?.state.kind, 'running', `${id} not armed`);
  const start = h.clock.now();
  const sets: string[] = [];
  daemon.before = (m) => {
    if (m.method === 'thread/goal/set') sets.push(`${String(m.params?.threadId)} at +${h.clock.now() - start}`);
  };
  const outcome: Outcome = [];
  const look = (label: string) => {
    const watches = threads.map((id) => {
      const w = h.engine.watch(id)!;
      const due = dueAt(w);
      return {
        id,
        state: w.state,
        due: due === null ? null : due - start,
        failure: w.lastFailure?.turnId ?? null,
        recovered: [...w.recovered],
        goal: daemon.thread(id).goal?.status,
        decided: h.decisions
          .filter((d) => 'threadId' in d && d.threadId === id && DECISIVE.has(d.type))
          .map((d) => d.type),
      };
    });
    // Sets due at one instant go out in either order (the limiter's burst): their order is no outcome.
    outcome.push({ label, at: h.clock.now() - start, sets: [...sets].sort(), watches });
  };
  try {
    await scenario({ h, look });
  } catch (error) {
    const sent = daemon.reorder?.delivered.join('\n  ') ?? '';
    throw new Error(`${seed === null ? 'the order as sent' : `seed ${seed}`}: ${String(error)}\n  ${sent}`, {
      cause: error,
    });
  }
  assert.deepEqual(daemon.takeViolations(), [], 'the strict daemon saw a broken rule');
  await h.cleanup();
  return { outcome, delivered: daemon.reorder?.delivered ?? [] };
}

/** Every order a seed gives: the outcome of the reference run. Returns it, and the orders delivered. */
async function sameForEveryOrder(
  threads: string[],
  scenario: (run: Run) => Promise<void>,
): Promise<{ reference: Outcome; seen: string[][] }> {
  const reference = await runOnce(threads, null, scenario);
  const orders: string[][] = [];
  for (let seed = 1; seed <= SEEDS; seed++) {
    const { outcome, delivered } = await runOnce(threads, seed, scenario);
    assert.deepEqual(
      outcome,
      reference.outcome,
      `seed ${seed} ended otherwise than the order as sent; the client got:\n  ${delivered.join('\n  ')}`,
    );
    orders.push(delivered);
  }
  return { reference: reference.outcome, seen: orders };
}

const orders = new Map<string, string[][]>();

/**
 * Two goals hit their usage limits: thread-1 with the headers (a reset 3 h 17 s away), thread-2
 * without (its message names a minute an hour away, the only source). `between`: settled between
 * the two failures, or both at once. Returns thread-1's reset.
 */
async function twoLimits(h: Run['h'], between: boolean): Promise<{ resetAt: number; nearer: number }> {
  const clockText = (at: number) =>
    new Date(at).toLocaleTimeString('en-US', { hour: 'numeric', minute: '2-digit', hour12: true });
  const limited = (at: number) => `You’ve hit your usage limit. … or try again at ${clockText(at)}.`;
  const resetAt = Math.ceil((h.clock.now() + 3 * HOUR + 17_000) / 1000) * 1000;
  const nearer = h.clock.now() + HOUR;
  const window = { usedPercent: 100, windowDurationMins: 300, resetsAt: resetAt / 1000 };
  h.daemon.failWithEvents('thread-1', {
    codexErrorInfo: 'usageLimitExceeded',
    message: limited(resetAt),
    rateLimits: { primary: window },
  });
  if (between) await h.settle();
  h.daemon.failWithEvents('thread-2', { codexErrorInfo: 'usageLimitExceeded', message: limited(nearer) });
  await h.settle();
  return { resetAt, nearer };
}

describe('the engine under a reordering daemon: the same outcome for every order', () => {
  it("blocked goals (two threads, one failing after Codex's own retry) are each recovered exactly once, at their due time", async () => {
    const scenario = async ({ h, look }: Run) => {
      h.daemon.failWithEvents('thread-1', { retryFirst: true });
      h.daemon.failWithEvents('thread-2');
      await h.settle();
      look('failed');
      await h.advance(DEFAULT_OPTIONS.baseDelayMs);
      look('due');
      await h.advance(RESYNC * 3);
      look('later');
    };
    const { reference, seen } = await sameForEveryOrder(['thread-1', 'thread-2'], scenario);
    orders.set('blocked', seen);
    assert.deepEqual(reference.at(-1)?.sets, ['thread-1 at +30000', 'thread-2 at +30000']);
  });

  it('a failure told in two halves, the turn read in between (listed interrupted): recovered exactly once', async () => {
    const { seen } = await sameForEveryOrder(['thread-1'], async ({ h, look }) => {
      h.daemon.failWithEvents('thread-1', { phase: 'goal' });
      await h.settle();
      look('goal half');
      h.daemon.failWithEvents('thread-1', { phase: 'turn' });
      await h.settle();
      look('turn half');
      await h.advance(DEFAULT_OPTIONS.baseDelayMs + RESYNC * 2);
      look('later');
    });
    orders.set('halves', seen);
  });

  it('a usage-limited goal is resumed once, at its reset plus the margin (the update, or the message)', async () => {
    const { seen } = await sameForEveryOrder(['thread-1', 'thread-2'], async ({ h, look }) => {
      const { resetAt } = await twoLimits(h, true);
      look('limited');
      await h.advance(resetAt + MARGIN - 1 - h.clock.now());
      look('before the reset');
      await h.advance(1 + RESYNC * 2);
      look('after the reset');
    });
    orders.set('usage', seen);
  });

  it('two goals hit their usage limits at once, one with the headers, one without: each is resumed at its own reset (its rollout says which)', async () => {
    await sameForEveryOrder(['thread-1', 'thread-2'], async ({ h, look }) => {
      const { resetAt, nearer } = await twoLimits(h, false);
      look('limited');
      const resets = ['thread-1', 'thread-2'].map((id) => {
        const s = h.engine.watch(id)!.state;
        return s.kind === 'usageLimited' ? s.resetsAt : s.kind;
      });
      // thread-2's reset is the end of the minute its message names, not thread-1's.
      assert.deepEqual(resets, [resetAt, Math.floor(nearer / 60_000) * 60_000 + 60_000]);
      await h.advance(resetAt + MARGIN + RESYNC * 2 - h.clock.now());
      look('after the resets');
    });
  });

  it('an approval pending on a blocked goal is left to the person: no set until it is resolved, then one', async () => {
    const { seen } = await sameForEveryOrder(['thread-1'], async ({ h, look }) => {
      h.daemon.failWithEvents('thread-1');
      await h.settle();
      look('failed');
      // The approval arrives within the backoff (test/unit/approvalOnBlocked.test.ts); the thread stays systemError.
      h.daemon.serverRequest('approval-1', 'item/commandExecution/requestApproval', {
        threadId: 'thread-1',
        turnId: 'turn-1',
        itemId: 'item-1',
      });
      await h.settle();
      look('asked');
      for (let i = 0; i < 12; i++) await h.advance(10_000);
      look('waited');
      h.daemon.resolveServerRequest('approval-1');
      await h.settle();
      await h.advance(DEFAULT_OPTIONS.baseDelayMs + RESYNC);
      look('resolved');
    });
    orders.set('approval', seen);
  });

  it("Codex's own retry is not competed with: nothing set while the turn goes on, one set after its end", async () => {
    const { seen } = await sameForEveryOrder(['thread-1'], async ({ h, look }) => {
      h.daemon.failWithEvents('thread-1', { retryFirst: true, phase: 'goal' });
      await h.settle();
      look('retrying');
      for (let minute = 0; minute < 10; minute++) await h.advance(60_000);
      look('ten minutes');
      h.daemon.failWithEvents('thread-1', { phase: 'turn' });
      await h.settle();
      look('ended');
      await h.advance(DEFAULT_OPTIONS.baseDelayMs + RESYNC * 2);
      look('later');
    });
    orders.set('retry', seen);
  });

  it('the orders really varied: the turn’s end before the goal update, the status before it, and gaps', () => {
    const failures = [...(orders.get('blocked') ?? []), ...(orders.get('usage') ?? [])];
    assert.ok(failures.length >= 2 * SEEDS, 'the scenarios above did not run');
    const before = (order: string[], a: RegExp, b: RegExp) => {
      const i = order.findIndex((l) => a.test(l));
      const j = order.findIndex((l) => b.test(l));
      return i >= 0 && j >= 0 && i < j;
    };
    const endFirst = failures.filter((o) =>
      before(o, /^turn\/completed thread-1 \(failed/, /goal\/updated thread-1 \((blocked|usageLimited)/),
    );
    const statusFirst = failures.filter((o) =>
      before(o, /status\/changed thread-1 \(systemError/, /goal\/updated thread-1 \((blocked|usageLimited)/),
    );
    assert.ok(endFirst.length > 0, 'no seed sent the turn’s end before the goal update');
    assert.ok(statusFirst.length > 0, 'no seed sent the status before the goal update');
    assert.ok(endFirst.length < failures.length, 'every seed sent the turn’s end first');
    const distinct = new Set([...orders.values()].flat().map((o) => o.join('|')));
    assert.ok(distinct.size > SEEDS, `only ${distinct.size} distinct orders`);
  });
});
