// A usage limit resumes at its real reset: the rate-limit snapshots read (windows told apart by
// their length, not their slot), the plan from the best source (the daemon's update, the read,
// the message's minute), a limit no reset clears (never scheduled), and the engine against the
// strict fake daemon, which sends `account/rateLimits/updated` before the goal update, only to
// the connections subscribed to the thread, as the real daemon does (docs/daemon-behaviour.md (o)).
// Shipped defaults (usageMarginMs 60 s, maxDelayMs 30 min).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dueAt } from '../../src/model/queries';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import {
  isUntimedCode,
  LIMIT_NOTICE_MS,
  limitEvidence,
  untimedFromMessage,
  readLimit,
} from '../../src/core/rateLimits';
import { usagePlan } from '../../src/core/usagePlan';
import type { RateLimitSnapshot } from '../../src/protocol/schema';
import { armedHarness, type Harness } from '../support/engineHarness';

const NOW = new Date(2026, 10, 30, 20, 46, 50).getTime();
const MARGIN = DEFAULT_OPTIONS.usageMarginMs;
const s = (sec: number) => Math.floor(sec / 1000);
const win = (usedPercent: number, windowDurationMins: number | null, resetsAt: number | null) => ({
  usedPercent,
  windowDurationMins,
  resetsAt: resetsAt === null ? null : s(resetsAt),
});
const snap = (over: Partial<RateLimitSnapshot>): RateLimitSnapshot => ({
  limitId: 'codex',
  primary: null,
  secondary: null,
  rateLimitReachedType: null,
  spendControlReached: null,
  ...over,
});
const HOUR = 3_600_000;

describe('what the rate-limit snapshots say', () => {
  it('the exhausted window resets: 5-hour primary, weekly secondary not exhausted', () => {
    const r = readLimit(
      [snap({ primary: win(100, 300, NOW + HOUR), secondary: win(40, 10080, NOW + 100 * HOUR) })],
      NOW,
    );
    assert.deepEqual(r, { kind: 'reset', at: NOW + HOUR, windowMins: 300 });
  });

  it('the weekly window in the primary slot, secondary null: told by its length', () => {
    const r = readLimit([snap({ primary: win(100, 10080, NOW + 50 * HOUR), secondary: null })], NOW);
    assert.deepEqual(r, { kind: 'reset', at: NOW + 50 * HOUR, windowMins: 10080 });
  });

  it('slots swapped, both exhausted: the latest reset wins, whatever its slot', () => {
    const r = readLimit(
      [snap({ primary: win(100, 10080, NOW + 50 * HOUR), secondary: win(100, 300, NOW + HOUR) })],
      NOW,
    );
    assert.deepEqual(r, { kind: 'reset', at: NOW + 50 * HOUR, windowMins: 10080 });
  });

  it('a sliding reset of a window not started (now + 7 days, 0 %) is not the limit', () => {
    const r = readLimit(
      [snap({ primary: win(100, 300, NOW + HOUR), secondary: win(0, 10080, NOW + 168 * HOUR) })],
      NOW,
    );
    assert.deepEqual(r, { kind: 'reset', at: NOW + HOUR, windowMins: 300 });
    assert.equal(readLimit([snap({ secondary: win(0, 10080, NOW + 168 * HOUR) })], NOW), null);
  });

  it('a 429 without headers (every field null) says nothing', () => {
    assert.equal(readLimit([snap({})], NOW), null);
  });

  it('an exhausted window with no reset is bounded by its length; with no length either, nothing is known', () => {
    assert.deepEqual(readLimit([snap({ primary: win(100, 300, null) })], NOW), {
      kind: 'reset',
      at: NOW + 5 * HOUR,
      windowMins: 300,
    });
    assert.equal(readLimit([snap({ primary: win(100, null, null), secondary: win(100, 300, NOW + HOUR) })], NOW), null);
  });

  it('credits depleted, a spend cap, an unknown reached type: no reset clears them', () => {
    const depleted = snap({
      primary: win(100, 300, NOW + HOUR),
      rateLimitReachedType: 'workspace_owner_credits_depleted',
    });
    assert.equal(readLimit([depleted], NOW)?.kind, 'untimed');
    assert.deepEqual(
      ['workspace_member_credits_depleted', 'workspace_owner_usage_limit_reached', 'something_new'].map((t) => {
        const r = readLimit([snap({ rateLimitReachedType: t })], NOW);
        return r?.kind === 'untimed' ? r.code : r;
      }),
      ['creditsDepleted', 'spendCapReached', 'unknownUsageLimit'],
    );
    const cap = readLimit([snap({ spendControlReached: true })], NOW);
    assert.equal(cap?.kind === 'untimed' && cap.code, 'spendCapReached');
    // The one type a reset clears.
    const timed = readLimit(
      [snap({ primary: win(100, 300, NOW + HOUR), rateLimitReachedType: 'rate_limit_reached' })],
      NOW,
    );
    assert.equal(timed?.kind, 'reset');
  });
});

describe("which rate-limit notice is a usage limit's evidence (limitEvidence)", () => {
  const NOW = 1_800_000_000_000;
  const kept = { at: NOW - 60_000 };
  it('a usageLimited update takes the notice right before it, up to LIMIT_NOTICE_MS old', () => {
    assert.equal(LIMIT_NOTICE_MS, 5_000);
    const fresh = { at: NOW };
    assert.equal(limitEvidence('usageLimited', kept, fresh, NOW), fresh);
    const edge = { at: NOW - LIMIT_NOTICE_MS };
    assert.equal(limitEvidence('usageLimited', null, edge, NOW), edge, 'exactly the bound still counts');
  });
  it('an older notice (another request) does not count: the update keeps what it had', () => {
    assert.equal(limitEvidence('usageLimited', kept, { at: NOW - LIMIT_NOTICE_MS - 1 }, NOW), kept);
    assert.equal(limitEvidence('usageLimited', null, { at: NOW - LIMIT_NOTICE_MS - 1 }, NOW), null);
    assert.equal(limitEvidence('usageLimited', kept, null, NOW), kept, 'no notice at all: a re-sent update keeps it');
  });
  it('any other status drops the evidence, however fresh the notice', () => {
    for (const status of ['active', 'blocked', 'paused', 'budgetLimited', 'complete'] as const)
      assert.equal(limitEvidence(status, kept, { at: NOW }, NOW), null, status);
  });
});

describe('several exhausted windows', () => {
  it('the latest reset wins, whatever its slot, its snapshot or its order', () => {
    const early = win(100, 300, NOW + HOUR);
    const late = win(100, 10080, NOW + 50 * HOUR);
    const latest = { kind: 'reset', at: NOW + 50 * HOUR, windowMins: 10080 };
    assert.deepEqual(readLimit([snap({ primary: early, secondary: late })], NOW), latest);
    assert.deepEqual(readLimit([snap({ primary: early }), snap({ secondary: late })], NOW), latest);
    assert.deepEqual(readLimit([snap({ primary: late }), snap({ limitId: null, primary: early })], NOW), latest);
  });

  it('the same window read twice (both slots, or two snapshots): its later reset', () => {
    const first = win(100, 300, NOW + HOUR);
    const second = win(100, 300, NOW + 2 * HOUR);
    const later = { kind: 'reset', at: NOW + 2 * HOUR, windowMins: 300 };
    assert.deepEqual(readLimit([snap({ primary: first, secondary: second })], NOW), later);
    assert.deepEqual(readLimit([snap({ primary: second }), snap({ primary: first })], NOW), later);
  });

  it('an exhausted window whose reset is unknown, in any slot or snapshot, leaves the reset unknown', () => {
    const known = win(100, 300, NOW + HOUR);
    const unknown = win(100, null, null);
    for (const snapshots of [
      [snap({ primary: known, secondary: unknown })],
      [snap({ primary: unknown, secondary: known })],
      [snap({ primary: known }), snap({ primary: unknown })],
    ])
      assert.equal(readLimit(snapshots, NOW), null);
  });

  it('windows resetting at the same instant: the first one read names it', () => {
    const five = win(100, 300, NOW + HOUR);
    const week = win(100, 10080, NOW + HOUR);
    const mins = (...snapshots: RateLimitSnapshot[]) => {
      const r = readLimit(snapshots, NOW);
      return r?.kind === 'reset' && r.windowMins;
    };
    assert.equal(mins(snap({ primary: five, secondary: week })), 300);
    assert.equal(mins(snap({ primary: week, secondary: five })), 10080);
  });
});

describe('a limit no reset clears: its code, and what the person is told', () => {
  it('each reached type no reset clears: the code, the type named, and what to do', () => {
    const reading = (t: string) => readLimit([snap({ rateLimitReachedType: t })], NOW);
    assert.deepEqual(reading('workspace_member_credits_depleted'), {
      kind: 'untimed',
      code: 'creditsDepleted',
      message:
        'out of credits (workspace_member_credits_depleted): no reset clears it; add credits, then resume the goal',
    });
    assert.deepEqual(reading('workspace_owner_usage_limit_reached'), {
      kind: 'untimed',
      code: 'spendCapReached',
      message:
        'spend cap reached (workspace_owner_usage_limit_reached): ' +
        'no reset clears it; raise the cap, then resume the goal',
    });
    assert.deepEqual(readLimit([snap({ spendControlReached: true })], NOW), {
      kind: 'untimed',
      code: 'spendCapReached',
      message: 'spend cap reached (spend_control_reached): no reset clears it; raise the cap, then resume the goal',
    });
    assert.deepEqual(reading('something_new'), {
      kind: 'untimed',
      code: 'unknownUsageLimit',
      message: 'usage limit of a kind no reset is known to clear (something_new): resume the goal when it is lifted',
    });
  });

  it('the message alone: the code, and what to do', () => {
    assert.deepEqual(untimedFromMessage('Your workspace is out of credits. Add credits to continue.'), {
      kind: 'untimed',
      code: 'creditsDepleted',
      message: 'out of credits: no reset clears it; add credits, then resume the goal',
    });
    assert.deepEqual(untimedFromMessage('You hit your spend cap set in your workspace.'), {
      kind: 'untimed',
      code: 'spendCapReached',
      message: 'spend cap reached: no reset clears it; raise the cap, then resume the goal',
    });
  });

  it('a failure coded as a limit no reset clears needs a person; a timed limit or a transient failure does not', () => {
    assert.deepEqual(
      ['creditsDepleted', 'spendCapReached', 'unknownUsageLimit', 'usageLimitExceeded', 'rateLimitExceeded'].map(
        isUntimedCode,
      ),
      [true, true, true, false, false],
    );
  });
});

describe('when a usage limit is resumed (usagePlan)', () => {
  const reset = (at: number) => ({ kind: 'reset' as const, at, windowMins: 300 });
  it("the thread's rollout first, then the notification, then the read, then the message: never before the reset", () => {
    const own = usagePlan(
      { rollout: reset(NOW + 3 * HOUR), notice: reset(NOW + 8_000), read: reset(NOW + HOUR), message: NOW + 10_000 },
      NOW,
      DEFAULT_OPTIONS,
    );
    assert.deepEqual([own.act, own.act === 'resume' && own.dueAt], ['resume', NOW + 3 * HOUR + MARGIN]);
    const plan = usagePlan(
      { rollout: null, notice: reset(NOW + 8_000), read: reset(NOW + HOUR), message: NOW + 10_000 },
      NOW,
      DEFAULT_OPTIONS,
    );
    assert.deepEqual([plan.act, plan.act === 'resume' && plan.dueAt], ['resume', NOW + 8_000 + MARGIN]);
    const fromRead = usagePlan({ notice: null, read: reset(NOW + HOUR), message: NOW + 10_000 }, NOW, DEFAULT_OPTIONS);
    assert.equal(fromRead.act === 'resume' && fromRead.dueAt, NOW + HOUR + MARGIN);
  });

  it('a reset already past tells nothing: the next source speaks', () => {
    const plan = usagePlan({ notice: reset(NOW - 1), read: null, message: NOW + 10_000 }, NOW, DEFAULT_OPTIONS);
    assert.equal(plan.act === 'resume' && plan.dueAt, NOW + 10_000 + MARGIN);
    const none = usagePlan({ notice: null, read: null, message: null }, NOW, DEFAULT_OPTIONS);
    assert.equal(none.act === 'resume' && none.dueAt, NOW + DEFAULT_OPTIONS.maxDelayMs);
  });

  it('a reset at the same instant tells nothing; one ms later is resumed after it (each source)', () => {
    const plan = (at: number, source: 'rollout' | 'notice' | 'read' | 'message') =>
      usagePlan(
        {
          rollout: source === 'rollout' ? reset(at) : null,
          notice: source === 'notice' ? reset(at) : null,
          read: source === 'read' ? reset(at) : null,
          message: source === 'message' ? at : null,
        },
        NOW,
        DEFAULT_OPTIONS,
      );
    const unknown = {
      act: 'resume',
      dueAt: NOW + DEFAULT_OPTIONS.maxDelayMs,
      resetsAt: null,
      source: 'no reset known',
    };
    for (const source of ['rollout', 'notice', 'read', 'message'] as const) {
      assert.deepEqual(plan(NOW - 1, source), unknown, `${source}: a ms before`);
      assert.deepEqual(plan(NOW, source), unknown, `${source}: at the same instant`);
      const after = plan(NOW + 1, source);
      assert.deepEqual(
        after.act === 'resume' && [after.dueAt, after.resetsAt],
        [NOW + 1 + MARGIN, NOW + 1],
        `${source}: a ms after`,
      );
    }
  });

  it('says whence the time comes, naming the window in words', () => {
    const source = (s: Parameters<typeof usagePlan>[0]) => {
      const plan = usagePlan(s, NOW, DEFAULT_OPTIONS);
      return plan.act === 'resume' && plan.source;
    };
    const at = (windowMins: number | null) => ({ kind: 'reset' as const, at: NOW + HOUR, windowMins });
    assert.deepEqual(
      [null, 10_080, 1440, 2880, 300, 60, 90].map((mins) => source({ notice: at(mins), read: null, message: null })),
      [
        "the daemon's rate-limit update (rate-limit window)",
        "the daemon's rate-limit update (weekly window)",
        "the daemon's rate-limit update (1-day window)",
        "the daemon's rate-limit update (2-day window)",
        "the daemon's rate-limit update (5-hour window)",
        "the daemon's rate-limit update (1-hour window)",
        "the daemon's rate-limit update (90-minute window)",
      ],
    );
    assert.equal(
      source({ rollout: at(300), notice: at(60), read: null, message: null }),
      "the thread's rollout (5-hour window)",
    );
    assert.equal(source({ notice: null, read: at(300), message: null }), "the account's rate limits (5-hour window)");
    assert.equal(
      source({ notice: null, read: null, message: NOW + HOUR }),
      'the error message (the end of the minute it names)',
    );
  });

  it('a limit no reset clears is never scheduled, whatever the message says', () => {
    const notice = readLimit([snap({ rateLimitReachedType: 'workspace_owner_credits_depleted' })], NOW);
    const plan = usagePlan({ notice, read: null, message: NOW + 10_000 }, NOW, DEFAULT_OPTIONS);
    assert.deepEqual([plan.act, plan.act === 'attention' && plan.code], ['attention', 'creditsDepleted']);
    const own = usagePlan(
      { rollout: notice, notice: reset(NOW + HOUR), read: null, message: null },
      NOW,
      DEFAULT_OPTIONS,
    );
    assert.deepEqual([own.act, own.act === 'attention' && own.code], ['attention', 'creditsDepleted']);
  });
});

describe('the message alone, when no rate-limit snapshot reached the engine (it was not subscribed yet)', () => {
  it("Codex's texts for credits and spend caps are limits no reset clears; a time is not one", () => {
    const code = (m: string) => {
      const r = untimedFromMessage(m);
      return r?.kind === 'untimed' ? r.code : r;
    };
    assert.deepEqual(
      [
        'Your workspace is out of credits. Add credits to continue.',
        'Your workspace is out of credits. Ask your workspace owner to refill in order to continue.',
        'You hit your spend cap set in your workspace. Increase your spend cap to continue.',
        'You hit your spend cap set by the owner of your workspace. Ask an owner to increase your spend cap to continue.',
        "You've hit your usage limit. Upgrade to Pro or try again at 8:46 PM.",
      ].map(code),
      ['creditsDepleted', 'creditsDepleted', 'spendCapReached', 'spendCapReached', null],
    );
  });

  it('usagePlan: the message naming credits wins over its missing time (never the maximum delay)', () => {
    const messageLimit = untimedFromMessage('Your workspace is out of credits. Add credits to continue.');
    const plan = usagePlan({ notice: null, read: null, message: null, messageLimit }, NOW, DEFAULT_OPTIONS);
    assert.deepEqual([plan.act, plan.act === 'attention' && plan.code], ['attention', 'creditsDepleted']);
    // A snapshot that names a reset still comes first.
    const fromNotice = usagePlan(
      { notice: { kind: 'reset', at: NOW + HOUR, windowMins: 300 }, read: null, message: null, messageLimit },
      NOW,
      DEFAULT_OPTIONS,
    );
    assert.equal(fromNotice.act, 'resume');
  });
});

describe('a usage limit on the engine (strict fake daemon, fake clock, shipped defaults)', () => {
  const harnesses: Harness[] = [];
  after(async () => {
    for (const h of harnesses) await h.cleanup();
  });
  const armed = () => armedHarness(['thread-1'], {}, harnesses);
  /** The clock text the real daemon puts in the message: the reset rounded down to the minute. */
  const clockText = (at: number) =>
    new Date(at).toLocaleTimeString('en-US', { hour: 'numeric', minute: '2-digit', hour12: true });
  const limit = (h: Harness, resetAt: number, rateLimits?: Record<string, unknown>) =>
    h.daemon.failWithEvents('thread-1', {
      codexErrorInfo: 'usageLimitExceeded',
      message: `You’ve hit your usage limit. … or try again at ${clockText(resetAt)}.`,
      ...(rateLimits ? { rateLimits } : {}),
    });

  it('with the rate-limit update: resumed once, right after the exact reset (hours away), never before', async () => {
    const h = await armed();
    const resetAt = Math.ceil((h.clock.now() + 3 * HOUR + 17_000) / 1000) * 1000;
    limit(h, resetAt, { primary: win(100, 300, resetAt), secondary: win(30, 10080, resetAt + 100 * HOUR) });
    await h.settle();
    const w = h.engine.watch('thread-1')!;
    assert.deepEqual(w.state, { kind: 'usageLimited', resetsAt: resetAt });
    assert.equal(dueAt(w), resetAt + MARGIN);
    await h.advance(resetAt + MARGIN - 1 - h.clock.now());
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'resumed before the reset plus margin');
    await h.advance(1);
    assert.equal(h.daemon.count('thread/goal/set'), 1);
    await h.advance(DEFAULT_OPTIONS.resyncMs * 3);
    assert.equal(h.daemon.count('thread/goal/set'), 1, 'resumed twice');
  });

  it('without headers, a reset seconds away in the same clock minute: resumed at that minute’s end plus margin, not tomorrow', async () => {
    const h = await armed();
    // 8 s before the reset, both in one clock minute.
    const minuteStart = Math.ceil(h.clock.now() / 60_000) * 60_000;
    await h.advance(minuteStart + 50_000 - h.clock.now());
    const resetAt = minuteStart + 58_000;
    limit(h, resetAt);
    await h.settle();
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.state.kind, 'usageLimited');
    assert.equal(dueAt(w), minuteStart + 60_000 + MARGIN, `due ${dueAt(w)! - h.clock.now()} ms from now`);
    await h.advance(minuteStart + 60_000 + MARGIN - h.clock.now());
    assert.equal(h.daemon.count('thread/goal/set'), 1);
  });

  it('the engine reads the turn between the limit and the turn’s end (listed interrupted, no message): it waits for the end, and resumes at the minute the message names', async () => {
    // The order that lost the message (issue 39): the goal turns usageLimited, the engine's read of
    // the newest turn is answered before the turn has ended (the daemon lists it interrupted, with
    // no error and no end time, while the thread is systemError: daemon-behaviour (q)), and only
    // then comes `turn/completed` with the message, the one source of this reset.
    const h = await armed();
    const minuteStart = Math.ceil(h.clock.now() / 60_000) * 60_000;
    await h.advance(minuteStart + 50_000 - h.clock.now());
    const resetAt = minuteStart + 58_000;
    const message = `You’ve hit your usage limit. … or try again at ${clockText(resetAt)}.`;
    h.daemon.failWithEvents('thread-1', { codexErrorInfo: 'usageLimitExceeded', phase: 'goal' });
    await h.settle();
    assert.ok(h.daemon.count('thread/turns/list') > 0, 'the engine never read the turn in between');
    assert.equal(h.engine.watch('thread-1')!.state.kind, 'turnEnding');
    h.daemon.failWithEvents('thread-1', { codexErrorInfo: 'usageLimitExceeded', phase: 'turn', message });
    await h.settle();
    const w = h.engine.watch('thread-1')!;
    assert.deepEqual(w.state, { kind: 'usageLimited', resetsAt: minuteStart + 60_000 });
    assert.equal(dueAt(w), minuteStart + 60_000 + MARGIN, `due ${dueAt(w)! - h.clock.now()} ms from now`);
  });

  it('out of credits (the update says so): needs attention, told once, never scheduled', async () => {
    const h = await armed();
    const resetAt = h.clock.now() + HOUR;
    limit(h, resetAt, {
      primary: win(100, 300, resetAt),
      rateLimitReachedType: 'workspace_owner_credits_depleted',
      credits: { hasCredits: false, unlimited: false, balance: '0' },
    });
    await h.settle();
    const w = h.engine.watch('thread-1')!;
    assert.equal(w.state.kind === 'needsAttention' && w.state.code, 'creditsDepleted');
    assert.equal(dueAt(w), null);
    assert.ok(h.decisions.some((d) => d.type === 'attention' && d.threadId === 'thread-1'));
    await h.advance(DEFAULT_OPTIONS.maxDelayMs + 2 * HOUR);
    assert.equal(h.daemon.count('thread/goal/set'), 0, 'resumed a limit no reset clears');
  });
});
