// The daemon is the judge: what a real `codex app-server` holds for a thread, read from its own
// record — the turns (`thread/turns/list`), the goal (`thread/goal/get`) and the rollout's goal
// events (test/support/rolloutGoals.ts) — never from the product's output or history.
//
// Why the rollout and not the turns: a second `thread/goal/set {status:"active"}` on a goal that
// is already active starts no turn and the product prints nothing for it, but the daemon writes
// one more `thread_goal_updated` event (measured, docs/daemon-behaviour.md (g)). So counting the
// automatic activations per failed turn catches a duplicate set that counting turns or the
// product's `recovering` lines would miss.
//
// Used by the integration, fault and VS Code suites: one way to say "exactly one recovery per
// failed turn" and "no automatic set".
import assert from 'node:assert/strict';
import { readRolloutGoals, type Activation, type RolloutGoals } from './rolloutGoals';
import { sleep } from './wait';

/** Anything that can make a JSON-RPC request to the daemon (the demo's UserClient, a probe). */
export interface DaemonReader {
  request(method: string, params: unknown, timeoutMs?: number): Promise<any>;
}

export interface TurnRow {
  id: string;
  status: string;
}

export interface DaemonRecord {
  threadId: string;
  /** Turns in the order the daemon lists them. */
  turns: TurnRow[];
  /** Ids of the failed turns. */
  failed: string[];
  /** The goal's status now, or null when the thread has no goal. */
  goalStatus: string | null;
  rollout: RolloutGoals;
  /** Automatic activations (the engine's effective sets), keyed by the turn each follows. */
  automaticAfter: Map<string | null, Activation[]>;
}

const T = 60_000;

/**
 * Reads the daemon's record of a thread. With `settled` (the default), first waits until no turn
 * is in progress: a goal turns `complete` before its turn's end is listed.
 */
export async function daemonRecord(
  daemon: DaemonReader,
  threadId: string,
  rolloutPath: string,
  opts: { settled?: boolean; timeoutMs?: number } = {},
): Promise<DaemonRecord> {
  const timeoutMs = opts.timeoutMs ?? T;
  let turns = await allTurns(daemon, threadId, timeoutMs);
  if (opts.settled !== false) {
    for (const deadline = Date.now() + timeoutMs; turns.some((x) => x.status === 'inProgress');) {
      if (Date.now() > deadline)
        throw new Error(`a turn of ${threadId} is still in progress after ${timeoutMs} ms: ${JSON.stringify(turns)}`);
      await sleep(100);
      turns = await allTurns(daemon, threadId, timeoutMs);
    }
  }
  const goal = (await daemon.request('thread/goal/get', { threadId }, timeoutMs)).goal as { status: string } | null;
  return daemonRecordFrom(threadId, turns, goal?.status ?? null, rolloutPath);
}

/**
 * Every turn of the thread, page after page: `thread/turns/list` answers one page (measured with
 * 0.169.0: a soak's thread of 100 turns and more lists only its newest ones without the cursor).
 */
async function allTurns(daemon: DaemonReader, threadId: string, timeoutMs: number): Promise<TurnRow[]> {
  const turns: TurnRow[] = [];
  let cursor: string | null = null;
  do {
    const page: { data: TurnRow[]; nextCursor?: string | null } = await daemon.request(
      'thread/turns/list',
      cursor === null ? { threadId } : { threadId, cursor },
      timeoutMs,
    );
    turns.push(...page.data);
    cursor = page.nextCursor ?? null;
  } while (cursor !== null);
  return turns;
}

/** The same record from a daemon's state held in the test itself (a fake daemon): its turns, its goal, its rollout. */
export function daemonRecordFrom(
  threadId: string,
  turns: readonly TurnRow[],
  goalStatus: string | null,
  rolloutPath: string,
): DaemonRecord {
  const rollout = readRolloutGoals(rolloutPath);
  const automaticAfter = new Map<string | null, Activation[]>();
  for (const a of rollout.automatic) automaticAfter.set(a.afterTurn, [...(automaticAfter.get(a.afterTurn) ?? []), a]);
  return {
    threadId,
    turns: turns.map((t) => ({ id: t.id, status: t.status })),
    failed: turns.filter((t) => t.status === 'failed').map((t) => t.id),
    goalStatus,
    rollout,
    automaticAfter,
  };
}

function describeRecord(r: DaemonRecord): string {
  const after = r.rollout.automatic.map((a) => a.afterTurn);
  return `turns ${JSON.stringify(r.turns)}, goal ${r.goalStatus}, automatic activations after ${JSON.stringify(after)}, user activations ${r.rollout.user.length}`;
}

/** No automatic set ever took effect on the thread: the daemon's rollout has no automatic activation. */
export function assertNoAutomaticSet(
  r: DaemonRecord,
  why = 'an automatic set on a goal the engine must leave alone',
): void {
  assert.deepEqual(r.rollout.unreadable, [], `a rollout line of ${r.threadId} is not JSON`);
  assert.equal(r.rollout.automatic.length, 0, `${why}: ${describeRecord(r)}`);
}

/**
 * Exactly one automatic activation right after each of the given failed turns (by default every
 * failed turn the daemon lists), and none anywhere else: no duplicate, no recovery of a turn
 * that did not fail, none lost. `mayRecover`: failed turns allowed one activation or none (a
 * recovery the test cannot require, e.g. one that raced a person's pause).
 */
export function assertOneRecoveryPerFailedTurn(
  r: DaemonRecord,
  failedTurns: readonly string[] = r.failed,
  mayRecover: readonly string[] = [],
): void {
  assert.deepEqual(r.rollout.unreadable, [], `a rollout line of ${r.threadId} is not JSON`);
  for (const [after, list] of r.automaticAfter) {
    assert.ok(
      list.length <= 1,
      `${list.length} automatic activations after turn ${after} (a duplicate set): ${describeRecord(r)}`,
    );
    assert.ok(
      after !== null && (failedTurns.includes(after) || mayRecover.includes(after)),
      `an automatic activation after turn ${after}, which is not a failed turn being recovered: ${describeRecord(r)}`,
    );
  }
  for (const f of failedTurns)
    assert.equal(
      r.automaticAfter.get(f)?.length ?? 0,
      1,
      `failed turn ${f} was not recovered exactly once: ${describeRecord(r)}`,
    );
}

/** At most one automatic activation per turn (a recovery may still be to come, or given up). */
export function assertNoDuplicateSet(r: DaemonRecord): void {
  for (const [after, list] of r.automaticAfter)
    assert.ok(
      list.length <= 1,
      `${list.length} automatic activations after turn ${after} (a duplicate set): ${describeRecord(r)}`,
    );
}

/** The thread's rollout, where the daemon says it is: `thread/read`'s `thread.path`. */
export async function rolloutPathOf(daemon: DaemonReader, threadId: string, timeoutMs = T): Promise<string> {
  const path = (await daemon.request('thread/read', { threadId }, timeoutMs)).thread?.path;
  if (typeof path !== 'string' || path === '') throw new Error(`the daemon reports no rollout path for ${threadId}`);
  return path;
}

/**
 * Waits until the daemon's record of a thread passes `check` (read as it is, not settled: e.g.
 * "an automatic activation after the first failed turn", "two failed turns"); returns it.
 */
export async function waitForDaemonRecord(
  daemon: DaemonReader,
  threadId: string,
  rolloutPath: string,
  what: string,
  check: (r: DaemonRecord) => boolean,
  timeoutMs = T,
): Promise<DaemonRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await daemonRecord(daemon, threadId, rolloutPath, { settled: false, timeoutMs });
    if (check(r)) return r;
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what} in the daemon's record: ${describeRecord(r)}`,
      );
    await sleep(100);
  }
}

/** No automatic set took effect since `before`, an earlier record of the same thread (rollouts only grow). */
export function assertNoAutomaticSetSince(
  r: DaemonRecord,
  before: DaemonRecord,
  why = 'an automatic set on a goal the engine must leave alone',
): void {
  assert.deepEqual(r.rollout.unreadable, [], `a rollout line of ${r.threadId} is not JSON`);
  const since = r.rollout.automatic.slice(before.rollout.automatic.length);
  assert.equal(
    since.length,
    0,
    `${why}: ${since.length} automatic activation(s) since the earlier record; ${describeRecord(r)}`,
  );
}

/**
 * Exactly one effective recovery of `failedTurnId` across a daemon SIGKILL, from the daemon's own
 * record. A kill can lose the rollout's last lines while the goal store already committed the
 * goal's new status (measured: test/support/rolloutGoals.ts), so the part before the kill is
 * read from the goal's status in the restarted daemon before any client acted (`statusAtRestart`:
 * anything but `blocked` means a set before the kill took effect; nothing but the engine sets
 * this goal active), and the part after it from the rollout's automatic activations past its
 * size at the restart (`sizeAtRestart`: no kill follows, every set there is written). Their sum
 * must be 1; every automatic activation follows the failed turn; it is the thread's only failed
 * turn.
 */
export function assertOneRecoveryAcrossKill(
  r: DaemonRecord,
  failedTurnId: string,
  statusAtRestart: string,
  sizeAtRestart: number,
): void {
  assert.deepEqual(r.rollout.unreadable, [], `a rollout line of ${r.threadId} is not JSON: the oracle cannot read it`);
  assert.deepEqual(r.failed, [failedTurnId], `failed turns: ${describeRecord(r)}`);
  const beforeKill = statusAtRestart !== 'blocked' ? 1 : 0;
  const afterRestart = r.rollout.automatic.filter((a) => a.offset >= sizeAtRestart);
  assert.equal(
    beforeKill + afterRestart.length,
    1,
    `effective recoveries: ${beforeKill} before the kill (goal ${statusAtRestart} at the restart) + ${afterRestart.length} after it: ${describeRecord(r)}`,
  );
  for (const a of r.rollout.automatic)
    assert.equal(a.afterTurn, failedTurnId, `an activation does not follow the failed turn: ${describeRecord(r)}`);
}
