/**
 * A user's goal threads, driven through the user client: start a thread with an active goal,
 * and wait for what the daemon then reports about it.
 */
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import * as z from '../util/zod';
import type { UserClient } from './userClient';
import { field, type Notification } from './userClientLog';

/** What is read of the replies to thread/start and thread/goal/set; the rest is handed on as received. */
const ThreadStartReplySchema = z.looseObject({ thread: z.looseObject({ id: z.string() }) });
const GoalSetReplySchema = z.looseObject({ goal: z.optional(z.unknown()) });

export interface StartThreadOptions {
  /** Working directory (default: a new temp dir, removed by `cleanup`). */
  cwd?: string;
  /** e.g. "untrusted" so exec_command asks for approval; default: config (never). */
  approvalPolicy?: string;
  /** thread/start `sandbox` (default: config). */
  sandbox?: string;
  tokenBudget?: number;
  /** Goal origin (default "user"). */
  origin?: 'user' | 'automatic';
  timeoutMs?: number;
}

export interface StartedGoalThread<J = unknown> {
  threadId: string;
  /** thread/start result `thread`. */
  thread: J;
  /** thread/goal/set result `goal`. */
  goal: J;
  cwd: string;
  /** log seq just before thread/goal/set was sent. */
  goalSetSeq: number;
  /** Removes the temp cwd (if this helper made it). */
  cleanup(): Promise<void>;
}

/**
 * thread/start (cwd = a fresh temp dir) then thread/goal/set {status:"active", objective, origin}.
 * Measured with 0.169.0: no first turn is needed; setting an active goal on the idle, freshly
 * started thread starts a turn at once (turn/started follows the goal/set reply), and that
 * first turn is what creates the rollout. Before it, `thread/resume` fails (-32600 "no rollout
 * found for thread id …") and `thread/turns/list` fails (-32600 "… is not materialized yet …"),
 * although `thread.path` is already reported.
 */
export async function startThreadWithGoal<J = unknown>(
  client: UserClient<J>,
  objective: string,
  opts: StartThreadOptions = {},
): Promise<StartedGoalThread<J>> {
  const madeCwd = opts.cwd === undefined;
  const cwd = opts.cwd ?? (await fs.mkdtemp(path.join(os.tmpdir(), 'cgr-thread-cwd-')));
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const { approvalPolicy, sandbox, tokenBudget } = opts;
  const params = { cwd, ...(approvalPolicy ? { approvalPolicy } : {}), ...(sandbox ? { sandbox } : {}) };
  const started = ThreadStartReplySchema.parse(await client.request<unknown>('thread/start', params, timeoutMs));
  const threadId = started.thread.id;
  const goalSetSeq = client.lastSeq;
  const goalParams = {
    threadId,
    status: 'active',
    objective,
    origin: opts.origin ?? 'user',
    ...(tokenBudget !== undefined ? { tokenBudget } : {}),
  };
  const set = GoalSetReplySchema.parse(await client.request<unknown>('thread/goal/set', goalParams, timeoutMs));
  return {
    threadId,
    thread: started.thread as J,
    goal: set.goal as J,
    cwd,
    goalSetSeq,
    cleanup: async () => {
      if (madeCwd) await fs.rm(cwd, { recursive: true, force: true });
    },
  };
}

/** Predicate: a notification about `threadId` with `method` (and optional extra check). */
export function about<J = unknown>(
  threadId: string,
  method: string,
  extra: (p: J | undefined) => boolean = () => true,
): (n: Notification<J>) => boolean {
  return (n) => n.method === method && field(n.params, 'threadId') === threadId && extra(n.params);
}

/** Wait for thread/goal/updated with goal.status === status for threadId. */
export function waitGoalStatus<J>(
  client: UserClient<J>,
  threadId: string,
  status: string,
  timeoutMs = 30_000,
  since = 0,
): Promise<Notification<J>> {
  const reached = (p: J | undefined) => field(p, 'goal', 'status') === status;
  return client.waitFor(about(threadId, 'thread/goal/updated', reached), timeoutMs, since);
}

/** Wait for turn/completed for threadId (optionally with a given turn status). */
export function waitTurnCompleted<J>(
  client: UserClient<J>,
  threadId: string,
  status?: string,
  timeoutMs = 30_000,
  since = 0,
): Promise<Notification<J>> {
  const ended = (p: J | undefined) => status === undefined || field(p, 'turn', 'status') === status;
  return client.waitFor(about(threadId, 'turn/completed', ended), timeoutMs, since);
}
