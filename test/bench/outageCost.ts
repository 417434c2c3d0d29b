// What an outage costs (issue 24): one outage, one probe (src/core/outage.ts) against today's
// per-goal schedule, on the real daemon (@openai/codex, the pinned build) with the mock model.
// Outages of three lengths (short: half the first backoff step; medium: outlasts three steps;
// long: outlasts all six) over 1, 10 and 30 goals; for each, three rows side by side in one
// outage window, each on its own daemon and mock: the product; the per-goal baseline (the same
// engine with `groupOutages` off: each goal recovered on its own schedule, as before the probe;
// kept in the bench only); and fixed retries at 1, 2 and 4 s (three attempts, no jitter).
// Measured per row: wasted recovery turns (automatic recoveries whose turn failed again, from the
// daemon's record), the extra downtime per goal after the provider healed (p50, p90), the goals
// given up, and the notifications a person would see.
//
// Every delay of the product is scaled by SCALE (1/15: backoff base 30 s → 2 s), so a run takes
// minutes, not hours; Codex's own failing turn is not scaled (see the notes).
import { DEFAULT_OPTIONS, type EngineOptions } from '../../src/core/options';
import { pinnedCodex } from '../../src/demo/codexBinary';
import { NOTICE_HOLD_MS, NOTICE_MAX_MS } from '../../src/model/notice';
import { rng } from '../support/random';
import { sleep, until } from '../support/wait';
import { burstNotifications, OutageRow, type RowCost } from './outageLab';
import { figure, percentile, round, type Bench, type BenchContext, type BenchSection, type Figure } from './types';

/**
 * Every delay of the product times this. Not 1/30: a failing turn on the mock takes about 1.1 s
 * (Codex's one internal retry, docs/daemon-behaviour.md (a)), so a first step of 0.5–1 s would be
 * shorter than the turn it follows; at 1/15 it is 1–2 s.
 */
const SCALE = 1 / 15;
const BASE_MS = DEFAULT_OPTIONS.baseDelayMs * SCALE;
const LIMITER_MS = DEFAULT_OPTIONS.limiterIntervalMs * SCALE;
const PRODUCT: Partial<EngineOptions> = {
  baseDelayMs: BASE_MS,
  maxDelayMs: DEFAULT_OPTIONS.maxDelayMs * SCALE,
  limiterIntervalMs: LIMITER_MS,
  groupOutages: true,
};
const PER_GOAL: Partial<EngineOptions> = { ...PRODUCT, groupOutages: false };
/** 1, 2, 4 s (scaled), exactly: the jitter is pinned (random = 1 gives the full nominal delay). */
const FIXED: Partial<EngineOptions> = { ...PRODUCT, groupOutages: false, maxAttempts: 3, baseDelayMs: 1_000 * SCALE };
const ROWS = ['product', 'per-goal', 'fixed 1/2/4 s'] as const;
/** The burst rule's windows, scaled like every other delay. */
const HOLD_MS = NOTICE_HOLD_MS * SCALE;
const BURST_MAX_MS = NOTICE_MAX_MS * SCALE;
/** "No worse" at 1 goal, for a time: within this of the baseline (two daemons' turns differ by tens of ms). */
const NOISE_MS = 0.1 * BASE_MS;

type Length = 'short' | 'medium' | 'long';
const LENGTHS: readonly Length[] = ['short', 'medium', 'long'];

/**
 * What a failing recovery turn is allowed in the outage lengths: about 1.1 s on the mock alone
 * (docs/daemon-behaviour.md (a): 4 requests, Codex's one retry), with a margin. The outage's first
 * failures, every goal's turn starting at once on three daemons, take longer (measured, in the notes).
 */
const FAILING_TURN_MS = 1_500;

/** How long the provider stays down after the last goal's first failure. */
function downAfterLastFailure(length: Length, goals: number): number {
  switch (length) {
    case 'short': // half the first step: over before the last goal's earliest possible first recovery
      return 0.5 * BASE_MS;
    case 'medium': // three full steps (1 + 2 + 4 bases) and the three failing turns they start
      return 7 * BASE_MS + 3 * FAILING_TURN_MS;
    case 'long': // all six full steps (1 + … + 32 bases), their six failing turns, the limiter's spread
      return 63 * BASE_MS + 6 * FAILING_TURN_MS + BASE_MS + goals * LIMITER_MS;
  }
}

interface Scenario {
  goals: number;
  length: Length;
  /** From the switch to HTTP 500 to the heal. */
  outageMs: number;
  /** From the switch to a goal's first failure, the median over every goal of the three rows. */
  failMs: number;
  /** From the switch to the last goal's first failure. */
  lastFailMs: number;
  /** In ROWS order. */
  costs: RowCost[];
}

/** Waits for `check` (25 ms polls); a timeout's message has every row's last 60 decisions. */
function untilRows(rows: OutageRow[], check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const logs = () => rows.map((r) => `--- ${r.spec.name}\n${r.decisionLog().split('\n').slice(-60).join('\n')}`);
  return until(() => `${what} (${timeoutMs} ms)\n${logs().join('\n')}`, check, timeoutMs, 25);
}

async function runScenario(ctx: BenchContext, goals: number, length: Length): Promise<Scenario> {
  const seed = 100 * goals + LENGTHS.indexOf(length) + 1;
  const specs = [
    { name: ROWS[0], options: PRODUCT, random: rng(seed) },
    { name: ROWS[1], options: PER_GOAL, random: rng(seed) },
    { name: ROWS[2], options: FIXED, random: () => 1 },
  ];
  const started = await Promise.allSettled(specs.map((s) => OutageRow.start(s)));
  const rows = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  try {
    for (const r of started) if (r.status === 'rejected') throw r.reason;
    await Promise.all(rows.map((r) => r.arm(goals)));
    const groups = rows.map((r) => r.runsOn().join(', '));
    const downAt = Date.now();
    const ended = rows.map((r) => r.down());
    if (ended.some((n) => n !== goals)) ctx.log(`(first answers under way at the switch: ${ended.join(', ')})`);
    await untilRows(rows, () => rows.every((r) => r.firstFailures() !== null), 60_000, 'every goal’s first failure');
    const firstFailures = rows.flatMap((r) => r.firstFailures()!);
    const lastFailure = Math.max(...firstFailures);
    const failMs = percentile(
      firstFailures.map((t) => t - downAt),
      50,
    );
    await sleep(lastFailure + downAfterLastFailure(length, goals) - Date.now());
    const healedAt = Date.now();
    for (const r of rows) r.heal();
    await untilRows(rows, () => rows.every((r) => r.finished()), 70 * BASE_MS, 'every goal complete or given up');
    const costs = await Promise.all(rows.map((r) => r.measure(healedAt)));
    for (const [i, c] of costs.entries())
      if (c.oddities.length > 0 || c.wasted !== c.wastedByDecisions)
        ctx.log(`!! ${ROWS[i]}: decisions say ${c.wastedByDecisions} wasted; ${c.oddities.join('; ')}`);
    ctx.log(`runs on: ${groups.join(' | ')}`);
    return { goals, length, outageMs: healedAt - downAt, failMs, lastFailMs: lastFailure - downAt, costs };
  } finally {
    // The engines first: closing a lab kills every daemon this process started.
    await Promise.all(rows.map((r) => r.stopEngine()));
    for (const r of rows) await r.close().catch(() => undefined);
  }
}

const p = (c: RowCost, q: number): number | null => (c.downtimesMs.length > 0 ? percentile(c.downtimesMs, q) : null);
const perGoalNotices = (c: RowCost) => c.needsPersonAt.length;
const burstNotices = (c: RowCost) => burstNotifications(c.needsPersonAt, HOLD_MS, BURST_MAX_MS);

function describe(s: Scenario): string {
  const row = (c: RowCost, i: number) => {
    const down = c.downtimesMs.length > 0 ? `${p(c, 50)}/${p(c, 90)} ms` : 'none recovered';
    const notices = i === 0 ? burstNotices(c) : perGoalNotices(c);
    return (
      `${ROWS[i]} wasted ${c.wasted} (of ${c.recoveries} recoveries), extra downtime p50/p90 ${down}, ` +
      `given up ${c.gaveUp}, notifications ${notices}` +
      (i === 0 ? '' : ` (${burstNotices(c)} with bursts)`)
    );
  };
  return (
    `${s.goals} goal(s), ${s.length} outage (${(s.outageMs / 1000).toFixed(1)} s down; first failures ` +
    `${(s.failMs / 1000).toFixed(2)} s after the switch at the median, the last ${(s.lastFailMs / 1000).toFixed(2)} s): ` +
    s.costs.map(row).join('; ')
  );
}

function figuresOf(s: Scenario): Figure[] {
  const [product, perGoal, fixed] = s.costs;
  const at = `${s.goals} goal${s.goals === 1 ? '' : 's'}, ${s.length} outage:`;
  const lone = s.goals === 1;
  const ten = s.goals === 10;
  const noWorse = (v: number, b: number, slack = 0) => ({ text: `no worse than per-goal`, met: v <= b + slack });
  const out: Figure[] = [];
  let target: { text: string; met: boolean } | undefined;
  if (ten && s.length !== 'short')
    target = { text: '≥ 5× fewer than per-goal', met: 5 * product.wasted <= perGoal.wasted };
  else if (ten || lone) target = noWorse(product.wasted, perGoal.wasted);
  out.push(figure(`${at} wasted turns`, 'turns', product.wasted, perGoal.wasted, target));
  out.push(figure(`${at} wasted turns, fixed 1/2/4 s`, 'turns', fixed.wasted, perGoal.wasted));
  for (const q of [50, 90]) {
    const [v, b, f] = [p(product, q), p(perGoal, q), p(fixed, q)];
    target = undefined;
    if (q === 90 && v !== null && ten) target = { text: '≤ per-goal', met: b === null || v <= b };
    if (q === 90 && v !== null && lone && b !== null)
      target = { text: `no worse than per-goal (± ${NOISE_MS} ms)`, met: v <= b + NOISE_MS };
    if (v !== null) out.push(figure(`${at} extra downtime p${q}`, 'ms', v, b, target));
    if (f !== null) out.push(figure(`${at} extra downtime p${q}, fixed 1/2/4 s`, 'ms', f, b));
  }
  out.push(
    figure(
      `${at} given up`,
      'goals',
      product.gaveUp,
      perGoal.gaveUp,
      lone ? noWorse(product.gaveUp, perGoal.gaveUp) : undefined,
    ),
  );
  out.push(figure(`${at} given up, fixed 1/2/4 s`, 'goals', fixed.gaveUp, perGoal.gaveUp));
  const [notices, baseNotices] = [burstNotices(product), perGoalNotices(perGoal)];
  out.push(
    figure(
      `${at} notifications`,
      'notifications',
      notices,
      baseNotices,
      lone ? noWorse(notices, baseNotices) : undefined,
    ),
  );
  out.push(figure(`${at} notifications, fixed 1/2/4 s`, 'notifications', perGoalNotices(fixed), baseNotices));
  return out;
}

export const outageCost: Bench = {
  id: 'outage-cost',
  title: 'What an outage costs: one probe against per-goal recovery (real daemon, delays ×1/15)',
  async run(ctx: BenchContext): Promise<BenchSection> {
    const counts = ctx.quick ? [1, 10] : [1, 10, 30];
    const lengths: readonly Length[] = ctx.quick ? ['medium'] : LENGTHS;
    const scenarios: Scenario[] = [];
    for (const length of lengths)
      for (const goals of counts) {
        const t0 = Date.now();
        const s = await runScenario(ctx, goals, length);
        scenarios.push(s);
        ctx.log(`${describe(s)} [${((Date.now() - t0) / 1000).toFixed(0)} s]`);
      }
    const outages = (length: Length) =>
      scenarios
        .filter((s) => s.length === length)
        .map((s) => `${(s.outageMs / 1000).toFixed(1)} s at ${s.goals}`)
        .join(', ');
    const failMs = scenarios.map((s) => s.failMs);
    return {
      id: 'outage-cost',
      title: this.title,
      params: {
        quick: ctx.quick,
        codex: pinnedCodex().version,
        scale: '1/15',
        goals: counts,
        outages: lengths,
        product: { ...DEFAULT_OPTIONS, ...PRODUCT },
        perGoal: PER_GOAL,
        fixed: FIXED,
        jitter: 'product and per-goal: mulberry32, the same seed per scenario (100·goals + outage 1–3); fixed: none',
        notificationBurstMs: { hold: HOLD_MS, max: BURST_MAX_MS },
      },
      figures: scenarios.flatMap(figuresOf),
      notes: [
        `${ctx.quick ? 'QUICK RUN (1 and 10 goals, the medium outage). ' : ''}Every delay of the product ×1/15 ` +
          `(backoff base 30 s → ${BASE_MS} ms, cap 30 min → ${PRODUCT.maxDelayMs! / 1000} s, the limiter's one per ` +
          `5 s → ${round(LIMITER_MS)} ms; 3 at once, 6 attempts, budget 12 as shipped; prepare 200 ms and the 60 s ` +
          `resync unscaled). Not 1/30: a failing turn (Codex's one internal retry on the mock's HTTP 500) takes ` +
          `about 1.1 s alone, longer than a 1/30 first step (0.5–1 s); it counts ${FAILING_TURN_MS} ms in the ` +
          `outage lengths below. The outage's first failures, every goal's turn starting at once on three daemons, ` +
          `came ${round(Math.min(...failMs) / 1000)}–${round(Math.max(...failMs) / 1000)} s after the switch (the ` +
          `median of a scenario). Times are as measured (×15 for the shipped scale; a failing turn is not scaled).`,
        'Rows side by side in each scenario, each on its own daemon and mock, in one outage window (one switch to ' +
          'HTTP 500, one heal, for all three). Product: the shipped engine (one outage, one probe). Per-goal ' +
          'baseline: the same with `groupOutages` off (each goal on its own backoff, as before the probe; kept ' +
          'in the bench only); the same jitter seed as the product. Fixed 1/2/4 s: no grouping, 3 attempts at ' +
          `exactly 1, 2, 4 s scaled (base ${round(1_000 * SCALE)} ms, jitter pinned), through the same limiter.`,
        'The outage: goals armed while their first turns run (the mock answers slowly), then HTTP 500 and every ' +
          'first answer ended at once (each goal’s next turn fails), then `goalComplete` (healed: the next ' +
          'turn completes the goal). Its length counts from the last goal’s first failure: short 0.5 base (half ' +
          'the first step), medium 7 bases + 3 failing turns (outlasts three full steps), long 63 bases + 6 ' +
          'failing turns + 1 base + the limiter’s spread (outlasts all six full steps: 31.5 bases is the shortest ' +
          `six jittered steps take, 63 the longest). Down, from the switch: short ${outages('short')}; ` +
          `medium ${outages('medium')}; long ${outages('long')} goals.`,
        'Wasted turns: automatic activations in the daemon’s record of each thread (its rollout) less the one ' +
          'that completed the goal (checked against its failed turns and the engine’s `recovering` decisions). ' +
          'Extra downtime: from the heal to the activation that took, as the daemon wrote it in the rollout ' +
          '(its clock is the machine’s), 0 if it went out before; goals given up are left out of it and counted ' +
          'in `given up`.',
        `Notifications: the product's own burst rule (src/views/notificationBurst.ts, windows scaled: hold ` +
          `${round(HOLD_MS)} ms, at most ${round(BURST_MAX_MS)} ms) on its gave-up and attention decisions; the ` +
          'per-goal and fixed rows: one per goal that needs a person (the behaviour before bursts). What bursts ' +
          'would make of those rows is in the lines below.',
        'Targets: at 10 goals ≥ 5× fewer wasted turns than per-goal in the medium and long outages (the short ' +
          'one ends before the first step: no more than per-goal), p90 extra downtime ≤ per-goal; at 1 goal no ' +
          `worse than per-goal (a time within ${NOISE_MS} ms: a lone goal is recovered the same way in both, with ` +
          'the same jitter; two daemons’ turns differ by tens of ms). None at 30 goals.',
        ...scenarios.map(describe),
      ],
    };
  },
};
