// The deliberate product faults of scripts/mutations.mjs: one line each (`find` must occur exactly
// once in `file`; `replace` is what the faulty product has instead), the invariant it breaks, and
// the test that guards that invariant (a file under test/ and the test's full title, or a
// `pattern` for --test-name-pattern). docs/testing.md is the readable table of the same list.
const ATTEMPT = 'src/core/attempt.ts';
const POLICY = 'src/core/policy.ts';
const LOOKS = 'src/core/looks.ts';
const EVENTS = 'src/core/events.ts';

const HOME_SCAN = 'src/core/homeScan.ts';
const USER_ACTIONS = 'src/core/userActions.ts';
const FOREIGN = 'test/integration/foreignOwner.test.ts';
const FOREIGN_SUITE = 'a goal in another Codex app \\(its own app-server on the same home\\)';

export const MUTATIONS = [
  {
    id: 'elsewhere-told-again',
    invariant: 'a failure in another Codex app is told once per failed turn, also across a crash and a restart',
    fault: 'every look at a goal stopped in another Codex app announces its failure again',
    file: POLICY,
    find: '    announce: !known,',
    replace: '    announce: true,',
    guard: {
      file: FOREIGN,
      name: 'the runner says so once, and not again after a crash or a clean stop; `status` shows it',
    },
  },
  {
    id: 'elsewhere-blocked-hidden',
    invariant: 'a goal blocked in another Codex app is shown, with its own state',
    fault: 'the home scan shows only running and usage-limited goals of other apps, not blocked ones',
    file: HOME_SCAN,
    find: "const SHOWN = new Set(['active', 'blocked', 'usageLimited']);",
    replace: "const SHOWN = new Set(['active', 'usageLimited']);",
    // The suite's tests build on one another (one daemon, one other app, one engine): the whole suite.
    guard: { file: FOREIGN, pattern: FOREIGN_SUITE },
  },
  {
    id: 'elsewhere-retry-waits',
    invariant: 'Retry now on a goal from another Codex app recovers it now, once',
    fault: 'the goal taken over from another app is counted as a new failure and waits for a backoff',
    file: USER_ACTIONS,
    find: 'if (fromElsewhere) takeOver(core, w, goal.status);',
    replace: 'if (fromElsewhere) w.failures = 0;',
    guard: { file: FOREIGN, pattern: FOREIGN_SUITE },
  },
  {
    id: 'set-twice',
    invariant: 'at most one automatic set per failed turn',
    fault: 'the recovery sends its thread/goal/set twice',
    file: ATTEMPT,
    find: 'const result = await session.setGoalActive(threadId);',
    replace: 'await session.setGoalActive(threadId); const result = await session.setGoalActive(threadId);',
    guard: {
      file: 'test/unit/seed.test.ts',
      name: 'recovers after backoff, once, and doubles the backoff on the next failure (TestRecovery)',
    },
  },
  {
    id: 'set-twice-real-daemon',
    invariant: 'at most one automatic set per failed turn (counted by the real daemon)',
    fault: 'the recovery sends its thread/goal/set twice',
    file: ATTEMPT,
    find: 'const result = await session.setGoalActive(threadId);',
    replace: 'await session.setGoalActive(threadId); const result = await session.setGoalActive(threadId);',
    guard: {
      file: 'test/integration/runner.test.ts',
      name: 'recovers an outage of 3 failed turns after 3 backoffs, with exactly one set per failed turn',
    },
  },
  {
    id: 'due-early-after-crash',
    invariant: 'never before the due time, also after a crash that cut a prepared recovery short',
    fault: 'an intent found on disk after a restart is due at once, even before its stored due time',
    file: LOOKS,
    find: 'w.lastFailure.dueAt = Math.max(core.now(), w.lastFailure.dueAt ?? 0);',
    replace: 'w.lastFailure.dueAt = core.now();',
    guard: { file: 'test/unit/crashConsistency.test.ts', pattern: 'holds safety and liveness' },
  },
  {
    id: 'no-retrying-guard',
    invariant: "never competes with Codex's own retry",
    fault: 'the engine never records that Codex is retrying (an error with willRetry: true)',
    file: EVENTS,
    find: 'live.retrying = willRetry ? error.message || describeErrorInfo(error.codexErrorInfo).code : null;',
    replace: 'live.retrying = null;',
    guard: { file: 'test/unit/seed.test.ts', name: "never competes with Codex's own retry (TestNoCompetingRetry)" },
  },
  {
    id: 'no-retrying-guard-transport',
    invariant: "never competes with Codex's own retry, and shows it (codexRetrying) while it lasts",
    fault: 'the engine never records that Codex is retrying (an error with willRetry: true)',
    file: EVENTS,
    find: 'live.retrying = willRetry ? error.message || describeErrorInfo(error.codexErrorInfo).code : null;',
    replace: 'live.retrying = null;',
    guard: { file: 'test/faults/transport.test.ts', pattern: 'keeps every invariant' },
  },
  {
    id: 'no-usage-retrying-wait',
    invariant: "a usage-limited goal whose turn Codex still retries waits for the turn's end",
    fault: 'a blocked or usage-limited goal is scheduled while Codex retries',
    file: POLICY,
    find: '  return isThreadActive(live.status) || waitsForPerson(live) || live.retrying !== null;',
    replace: '  return isThreadActive(live.status) || waitsForPerson(live);',
    guard: { file: 'test/unit/seed.test.ts', pattern: "never competes with Codex's own retry on a usage-limited goal" },
  },
  {
    id: 'no-approval-wait',
    invariant: 'never a set while an approval is pending (also on a blocked goal whose thread is no longer active)',
    fault: 'a blocked or usage-limited goal is scheduled while an approval waits for the person',
    file: POLICY,
    find: '  return isThreadActive(live.status) || waitsForPerson(live) || live.retrying !== null;',
    replace: '  return isThreadActive(live.status) || live.retrying !== null;',
    guard: { file: 'test/unit/approvalOnBlocked.test.ts', pattern: 'waits for the approval' },
  },
  {
    id: 'no-approval-wait-transport',
    invariant: 'never a set while an approval is pending (on the wire, under transport faults)',
    fault: 'a blocked or usage-limited goal is scheduled while an approval waits for the person',
    file: POLICY,
    find: '  return isThreadActive(live.status) || waitsForPerson(live) || live.retrying !== null;',
    replace: '  return isThreadActive(live.status) || live.retrying !== null;',
    guard: { file: 'test/faults/transport.test.ts', pattern: 'keeps every invariant' },
  },
  {
    id: 'answer-approvals',
    invariant: 'never answers a server request (an approval belongs to the person)',
    fault: 'the client declines every approval on the wire',
    file: 'src/protocol/client.ts',
    find: '    const r = params as { id: RequestId; method: string; params: unknown };\n',
    replace:
      "    const r = params as { id: RequestId; method: string; params: unknown };\n    void this.transport.writer.write({ jsonrpc: '2.0', id: r.id, result: { decision: 'decline' } } as never);\n",
    guard: {
      file: 'test/unit/engine.test.ts',
      name: 'never answers a server request, and resumes watching after the approval resolves',
    },
  },
  {
    id: 'no-goal-status-veto',
    invariant: 'a person wins: a pause that arrives while the recovery reads is never overridden',
    fault: 'the veto judges the goal by the status it expected, not by the one just read',
    file: POLICY,
    find: '    if (goal.status !== expected) return `the goal is ${goal.status} now`;\n  }\n  const verdict = decide(f);\n',
    replace: '  }\n  const verdict = decide({ ...f, w: { ...f.w, goal: goal && { ...goal, status: expected } } });\n',
    guard: { file: 'test/unit/seed.test.ts', pattern: 'resumes the goal during the attempt' },
  },
  {
    id: 'no-global-pause-veto',
    invariant: 'Pause auto-recovery holds every recovery',
    fault: 'the veto ignores the global pause',
    file: POLICY,
    find: "  if (paused) return 'auto-recovery is paused';\n",
    replace: '',
    guard: { file: 'test/unit/engine.test.ts', pattern: 'Pause auto-recovery that lands while a recovery is prepared' },
  },
  {
    id: 'no-user-intent-veto',
    invariant: "a person's goal status marker in the rollout wins over the engine",
    fault: "the decision table carries on past a person's marker",
    file: POLICY,
    find: "  if (w.state.kind === 'userIntent') return { act: 'keep', why: `the user set the goal ${w.state.requested}` };\n",
    replace: '',
    guard: {
      file: 'test/unit/seed.test.ts',
      name: 'a human marker newer than the arming disarms; a later human active re-arms',
    },
  },
  {
    id: 'no-user-intent-check',
    invariant: "a person's pause already in the rollout wins over a recovery being prepared",
    fault:
      "the decision table (and so the veto, the same table on fresh reads) carries on past a person's marker read during the attempt",
    file: POLICY,
    find: "  if (w.state.kind === 'userIntent') return { act: 'keep', why: `the user set the goal ${w.state.requested}` };\n",
    replace: '',
    guard: { file: 'test/unit/seed.test.ts', pattern: 'a human pause whose marker reaches the rollout during' },
  },
  {
    id: 'adopt-old-blocked',
    invariant: 'never adopts a goal that was blocked before the engine saw it',
    fault: 'adopts() arms goals whatever their status when first seen',
    file: POLICY,
    find: "  return seenStatus === 'active' && options.autoArm;\n",
    replace: '  return options.autoArm;\n',
    guard: {
      file: 'test/unit/seed.test.ts',
      name: 'never adopts a goal that was blocked before the engine saw it (TestOldBlocked)',
    },
  },
  {
    id: 'no-write-ahead',
    invariant: 'durable before announced: the intent is on disk before the set can take effect',
    fault: 'the attempt sends without waiting for its write-ahead save',
    file: ATTEMPT,
    find: '      if (!(await core.persist()))\n        throw new SaveFailed(',
    replace: '      if (false)\n        throw new SaveFailed(',
    guard: { file: 'test/unit/crashConsistency.test.ts', pattern: 'holds safety and liveness' },
  },
  {
    id: 'no-write-ahead-real-runner',
    invariant: 'durable before announced: a runner killed as its set leaves it has the intent on disk',
    fault: 'the attempt sends without waiting for its write-ahead save',
    file: ATTEMPT,
    find: '      if (!(await core.persist()))\n        throw new SaveFailed(',
    replace: '      if (false)\n        throw new SaveFailed(',
    guard: {
      file: 'test/faults/runnerKilled.test.ts',
      pattern: 'write-ahead: a runner SIGKILLed as its set leaves it',
    },
  },
  {
    id: 'adopt-old-blocked-real-daemon',
    invariant: 'never adopts a goal that was blocked before the engine saw it (real daemon)',
    fault: 'adopts() arms goals whatever their status when first seen',
    file: POLICY,
    find: "  return seenStatus === 'active' && options.autoArm;\n",
    replace: '  return options.autoArm;\n',
    guard: {
      file: 'test/integration/runner.test.ts',
      name: 'does not adopt a goal that was already blocked when it started',
    },
  },
  {
    id: 'answer-approvals-real-daemon',
    invariant: "never answers a server request (real daemon: the approval stays the person's)",
    fault: 'the client declines every approval on the wire',
    file: 'src/protocol/client.ts',
    find: '    const r = params as { id: RequestId; method: string; params: unknown };\n',
    replace:
      "    const r = params as { id: RequestId; method: string; params: unknown };\n    void this.transport.writer.write({ jsonrpc: '2.0', id: r.id, result: { decision: 'decline' } } as never);\n",
    guard: { file: 'test/integration/runner.test.ts', pattern: 'never answers a pending approval' },
  },
  {
    id: 'no-limiter',
    invariant: 'the global limiter: a burst, then one recovery per interval',
    fault: 'the limiter always has a token',
    file: 'src/core/limiter.ts',
    find: '    if (this.tokens >= 1) {\n',
    replace: '    if (true) {\n',
    guard: { file: 'test/unit/engine.test.ts', name: 'limits recoveries globally: a burst, then one per interval' },
  },
  {
    id: 'rejected-set-counts-as-success',
    invariant: 'a rejected set is a failed attempt: backed off further, given up after maxAttempts',
    fault: 'an error reply to the set is taken for success',
    file: ATTEMPT,
    find: "    if (w.goal?.status === 'active' || (live.turn && live.turn.id !== failedTurnId)) {\n      confirmRecovered(core, w, failedTurnId, attempt, `took effect despite",
    replace:
      "    if (Date.now() > 0 || w.goal?.status === 'active' || (live.turn && live.turn.id !== failedTurnId)) {\n      confirmRecovered(core, w, failedTurnId, attempt, `took effect despite",
    guard: { file: 'test/faults/transport.test.ts', pattern: 'keeps every invariant' },
  },
  {
    id: 'send-when-prepared',
    invariant: 'never before the due time',
    fault: 'a prepared recovery is sent at once, 200 ms (the prepare lead) before it is due',
    file: ATTEMPT,
    find: '    if (early <= 0) {\n',
    replace: '    if (early <= 1e9) {\n',
    guard: {
      file: 'test/unit/engine.test.ts',
      name: 'prepares a recovery ahead: reads and the write-ahead save before the due time, the set exactly at it',
    },
  },
  {
    id: 'arm-recovers-older-failure',
    invariant: 'arm (Watch this goal) never recovers a failure older than the arming',
    fault: 'the failed turn that stopped the goal when a person armed it is taken for a new failure',
    file: POLICY,
    find: '  if (turn.id === w.beforeArming) return failedBeforeArming(',
    replace: "  if (turn.id === `${w.beforeArming}'`) return failedBeforeArming(",
    guard: {
      file: 'test/unit/arm.test.ts',
      name: 'a goal blocked by a failure older than the arming: armed, that failure never recovered and said why; a new one after the goal is resumed is',
    },
  },
];
