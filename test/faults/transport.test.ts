// Fault suite, item 2: transport faults. A proxy between the engine's client and the fake
// daemon drops the connection before or after each kind of request and reply (and around
// notifications and approval requests), delays frames, answers with errors, and refuses
// connections, on random schedules (fast-check). The engine runs with the shipped
// DEFAULT_OPTIONS, each goal on a provider of its own (no outage's probe: a wire's faults, not
// an outage, are the subject here). See test/support/faultProxy.ts for the fault model and
// test/support/transportScenario.ts for the run (transportPlan.ts the threads, transportOracle.ts
// every invariant checked):
//
//   Invariant: never a set on a goal that is paused by a person (once the engine was told),
//     complete, budget-limited, model-blocked, or was blocked before the engine saw it; never
//     while an approval the engine was told of waits; never one that competes with a running
//     turn or Codex's own retry (a set arrives only on a goal blocked by a failed turn).
//   Invariant: the engine shows Codex's own retry as `codexRetrying` while it lasts.
//   Invariant: never a reply to a server request (an approval).
//   Invariant: exactly one effective recovery per failed turn that must be recovered, none for
//     one that must not, judged from the daemon's record (the rollout's automatic activations
//     after each turn, test/support/daemonJudge.ts); no write-ahead intent left pending.
//   Invariant: expected give-ups derived from the failed turns and rejected sets (more than
//     maxAttempts in a row): no set after one, and the engine's state says so.
//   Invariant: the global limiter (burst 3, then one per 5 s) holds for the sets as they leave.
//   Invariant: no crash (no unhandled rejection, no uncaught exception).
//   Invariant: every fault that broke the connection has its own connection log line, and a
//     lost `thread/goal/set` a warning that names it.
//
// Each named case (approvals on failing goals, willRetry on a blocked goal whose turn runs on,
// pauses inside a backoff and inside a prepared send, rejected sets, give-ups, the limiter at
// its limit) must be reached a minimum number of times per run (MINIMUM_PER_200), counted from
// what actually happened on the wire; the counts are printed as test diagnostics.
//
// Rerun: FAULTS_SEED=<seed> [FAULTS_PATH=<path>] [FAULTS_RUNS=<n>] npm run test:faults
// (the seed is printed on every run; fast-check prints the path on a failure). FAULTS_VERBOSE=1
// prints the engine's log of the counterexample; FAULTS_NO_SHRINK=1 stops at the first failure;
// FAULTS_MAX_FAULTS=<n> allows more faults per schedule (default 8).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { type Fault, NOTIFICATION_METHODS, REQUEST_METHODS } from '../support/faultProxy';
import {
  type ApprovalStory,
  HOLD_MIN_MS,
  type Kind,
  type Outcome,
  type Reached,
  runSchedule,
  type Schedule,
  type ThreadPlan,
  TRANSIENT_INFOS,
} from '../support/transportScenario';

const RUNS = Number(process.env.FAULTS_RUNS ?? 200);
const SEED =
  process.env.FAULTS_SEED === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FAULTS_SEED);
const PATH = process.env.FAULTS_PATH;
/** Faults per schedule, at most (more makes a harsher, slower hunt). */
const MAX_FAULTS = Number(process.env.FAULTS_MAX_FAULTS ?? 8);

const crashes: unknown[] = [];
const onCrash = (error: unknown) => crashes.push(error);
let root = '';
before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-faults-'));
  process.on('unhandledRejection', onCrash);
  process.on('uncaughtException', onCrash);
});
after(() => {
  process.off('unhandledRejection', onCrash);
  process.off('uncaughtException', onCrash);
  fs.rmSync(root, { recursive: true, force: true });
});

const MAX_STEPS = 14;

const stepIndex = fc.integer({ min: 0, max: MAX_STEPS - 1 });

const fraction = fc.integer({ min: 0, max: 999 }).map((x) => x / 1000);
const threadPlan: fc.Arbitrary<ThreadPlan> = fc.record({
  kind: fc.oneof(
    { weight: 4, arbitrary: fc.constant<Kind>('transient') },
    { weight: 3, arbitrary: fc.constant<Kind>('humanPause') },
    { weight: 4, arbitrary: fc.constant<Kind>('approval') },
    { weight: 2, arbitrary: fc.constant<Kind>('retrying') },
    { weight: 1, arbitrary: fc.constant<Kind>('usage') },
    { weight: 2, arbitrary: fc.constantFrom<Kind>('modelBlock', 'terminal', 'oldBlocked', 'pausedBefore') },
  ),
  failAt: fc.uniqueArray(stepIndex, { minLength: 1, maxLength: 3 }).map((a) => a.sort((x, y) => x - y)),
  eventAt: stepIndex,
  retryFirst: fc.boolean(),
  errorInfo: fc.integer({ min: 0, max: TRANSIENT_INFOS.length - 1 }),
  splitMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3_000 })),
  endTurn: fc.constantFrom<'completed' | 'failed'>('completed', 'failed'),
  terminal: fc.constantFrom<'complete' | 'budgetLimited'>('complete', 'budgetLimited'),
  // Sets the daemon refuses: none, a few, or enough (with the failures) to pass maxAttempts.
  rejects: fc.oneof(
    { weight: 3, arbitrary: fc.constant(0) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 3 }) },
    { weight: 1, arbitrary: fc.integer({ min: 4, max: 8 }) },
  ),
  holdMs: fc.integer({ min: HOLD_MIN_MS, max: 150_000 }),
  pause: fc.oneof(
    { weight: 1, arbitrary: fc.constant('step' as const) },
    { weight: 2, arbitrary: fc.constant('backoff' as const) },
    { weight: 3, arbitrary: fc.constant('prepared' as const) },
  ),
  pauseFrac: fraction,
  approval: fc.oneof(
    { weight: 1, arbitrary: fc.constant<ApprovalStory>('stays') },
    { weight: 2, arbitrary: fc.constant<ApprovalStory>('resolveThenFail') },
    { weight: 3, arbitrary: fc.constantFrom<ApprovalStory>('failWhilePending', 'onBlocked') },
  ),
  approvalActive: fc.boolean(),
});

const delayMs = fc.oneof(fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 1_000, max: 40_000 }));
const occurrence = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 4 }) },
  { weight: 1, arbitrary: fc.integer({ min: 5, max: 20 }) },
);

const requestFault: fc.Arbitrary<Fault> = fc.record({
  on: fc.constant('request' as const),
  // The set is where a mistake costs most: ask for it more often.
  method: fc.oneof(
    { weight: 2, arbitrary: fc.constant('thread/goal/set') },
    { weight: 5, arbitrary: fc.constantFrom(...REQUEST_METHODS) },
  ),
  phase: fc.constantFrom(
    'dropBeforeRequest',
    'dropBeforeReply',
    'dropAfterReply',
    'delayRequest',
    'delayReply',
    'errorReply',
    'rejectRequest' as const,
  ),
  occurrence,
  delayMs,
});
const notificationFault: fc.Arbitrary<Fault> = fc.record({
  on: fc.constant('notification' as const),
  method: fc.constantFrom(...NOTIFICATION_METHODS),
  phase: fc.constantFrom('dropBefore', 'dropAfter', 'delay' as const),
  occurrence,
  delayMs,
});
const connectFault: fc.Arbitrary<Fault> = fc.record({
  on: fc.constant('connect' as const),
  occurrence: fc.integer({ min: 1, max: 6 }),
});

const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  threads: fc.array(threadPlan, { minLength: 1, maxLength: 6 }),
  outage: fc.oneof(fc.constant(null), fc.record({ at: stepIndex, extra: fc.integer({ min: 0, max: 6 }) })),
  steps: fc.array(
    fc.oneof(
      fc.integer({ min: 0, max: 200 }),
      fc.integer({ min: 200, max: 5_000 }),
      fc.integer({ min: 5_000, max: 45_000 }),
    ),
    { minLength: 3, maxLength: MAX_STEPS },
  ),
  faults: fc.array(
    fc.oneof(
      { weight: 5, arbitrary: requestFault },
      { weight: 3, arbitrary: notificationFault },
      { weight: 1, arbitrary: connectFault },
    ),
    { maxLength: MAX_FAULTS },
  ),
  seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
});

/**
 * The cases the property names, and how many times each must be reached in a run of RUNS (200)
 * schedules, counted from what the daemon received and what reached the engine's socket (see
 * `Reached` in transportPlan.ts), scaled for other run counts. Below the minimum, the
 * generator no longer reaches what the property claims to test: the run fails. Each minimum sits
 * well below what 14 seeds reached (2026-12-02): the seed changes at every run, so a minimum close
 * to the lowest of them failed now and then with nothing wrong (limiterAtLimit was reached 23–64
 * times against a minimum of 25, now 12; pauseInBackoff 18–35 times against 15, now 10).
 */
const MINIMUM_PER_200: Record<keyof Reached, number> = {
  approvalOnFailedTurn: 15,
  approvalWhileBlocking: 10,
  recoveredAfterApproval: 40,
  retryOnBlocked: 20,
  recoveredAfterRetry: 15,
  retryShown: 15,
  pauseInBackoff: 10,
  pauseInPrepared: 15,
  rejectedByDaemon: 150,
  mustGiveUp: 10,
  limiterChecked: 500,
  limiterAtLimit: 12,
};

/**
 * Schedules that once broke an invariant, run first in every run (fast-check's `examples`), so a
 * fix cannot come undone with the random seed. The limiter, 2026-12-07 (seed 427807032): a set
 * held back 15 s; the attempts due meanwhile took their tokens and stalled behind it; when the
 * connection came back, a fourth set went out beside three (src/core/limiter.ts, `spend`).
 */
const KNOWN: Schedule[] = [
  {
    threads: [
      {
        kind: 'humanPause',
        failAt: [0],
        eventAt: 0,
        retryFirst: false,
        errorInfo: 0,
        splitMs: 0,
        endTurn: 'completed',
        terminal: 'complete',
        rejects: 1,
        holdMs: 31_000,
        pause: 'backoff',
        pauseFrac: 0,
        approval: 'failWhilePending',
        approvalActive: false,
      },
    ],
    outage: { at: 0, extra: 6 },
    steps: [15_951, 3_593, 0, 10_547],
    faults: [{ on: 'request', method: 'thread/goal/set', phase: 'delayRequest', occurrence: 1, delayMs: 15_000 }],
    seed: 506_411_145,
  },
];

describe('transport faults', () => {
  it(`keeps every invariant over ${RUNS} random fault schedules against the fake daemon, reaching each named case a minimum number of times`, async (t) => {
    let n = 0;
    let last: Outcome | null = null;
    const totals = {
      runs: 0,
      sets: 0,
      recovered: 0,
      fired: 0,
      drops: 0,
      delays: 0,
      errors: 0,
      timeouts: 0,
      races: 0,
      notSeen: 0,
      fakeMinutes: 0,
    };
    const reached = Object.fromEntries(Object.keys(MINIMUM_PER_200).map((k) => [k, 0])) as Record<
      keyof Reached,
      number
    >;
    const started = Date.now();
    t.diagnostic(`seed ${SEED} (replay: FAULTS_SEED=${SEED} npm run test:faults)`);
    await fc.assert(
      fc.asyncProperty(scheduleArb, async (schedule) => {
        const outcome = await runSchedule(schedule, path.join(root, `run-${n++}`), () => crashes.length);
        last = outcome;
        totals.runs += 1;
        for (const k of [
          'sets',
          'recovered',
          'fired',
          'drops',
          'delays',
          'errors',
          'timeouts',
          'races',
          'notSeen',
          'fakeMinutes',
        ] as const)
          totals[k] += outcome.stats[k];
        for (const k of Object.keys(reached) as (keyof Reached)[]) reached[k] += outcome.reached[k];
        if (outcome.broken.length > 0) {
          if (process.env.FAULTS_VERBOSE) console.log(outcome.log.join('\n'));
          const message = `broken invariants:\n  ${outcome.broken.join('\n  ')}`;
          console.log(message);
          throw new Error(message);
        }
      }),
      {
        numRuns: RUNS,
        seed: SEED,
        path: PATH,
        endOnFailure: process.env.FAULTS_NO_SHRINK === '1',
        examples: PATH === undefined ? KNOWN.map((k) => [k]) : [],
      },
    );
    const seconds = (Date.now() - started) / 1000;
    t.diagnostic(`transport faults: ${JSON.stringify(totals)} in ${seconds.toFixed(1)} s`);
    const scale = RUNS / 200;
    t.diagnostic(
      `cases reached (minimum for ${RUNS} runs): ${Object.entries(reached)
        .map(([k, v]) => `${k} ${v} (≥ ${Math.ceil(MINIMUM_PER_200[k as keyof Reached] * scale)})`)
        .join(', ')}`,
    );
    // The property must have exercised what it claims: faults fired, connections broke, recoveries
    // happened, and every named case was reached. (Not when replaying one counterexample.)
    assert.ok(last !== null);
    if (PATH !== undefined || RUNS < 100) return;
    assert.ok(totals.drops >= RUNS / 4, `only ${totals.drops} connection drops in ${RUNS} runs`);
    assert.ok(totals.delays >= RUNS / 8, `only ${totals.delays} delays in ${RUNS} runs`);
    assert.ok(totals.recovered >= RUNS / 2, `only ${totals.recovered} recoveries in ${RUNS} runs`);
    for (const [k, min] of Object.entries(MINIMUM_PER_200)) {
      const need = Math.ceil(min * scale);
      assert.ok(
        reached[k as keyof Reached] >= need,
        `the case ${k} was reached ${reached[k as keyof Reached]} times in ${RUNS} runs, fewer than the ${need} required`,
      );
    }
  });
});
