// The world of the strict fake daemon (test/support/fakeDaemon.ts): its goals, turns and threads,
// made as the real daemon reports them, and the rollout lines Codex writes for a person's goal
// command, for every `thread/goal/set` and for the model's own `update_goal`.
import type { GoalStatus } from '../../src/model/watch';

export interface FakeGoal {
  threadId: string;
  objective: string;
  status: GoalStatus;
  tokenBudget: number | null;
  tokensUsed: number;
  timeUsedSeconds: number;
  createdAt: number;
  updatedAt: number;
}
export interface FakeTurn {
  id: string;
  status: string;
  error: { message: string; codexErrorInfo: unknown; additionalDetails: null } | null;
}
export interface FakeThread {
  id: string;
  goal: FakeGoal | null;
  turn: FakeTurn;
  status: { type: string; activeFlags?: string[] };
  path: string;
  loaded: boolean;
  name: string | null;
  /**
   * Held by another Codex app (its own app-server): listed `notLoaded`, and a resume is refused
   * with "already has an active writer" (measured on 0.169.0 and 0.171.0).
   */
  elsewhere?: boolean;
  /** `thread/list`'s updatedAt (unix seconds); default the goal's updatedAt. */
  updatedAt?: number;
  /** What the thread runs on (`thread/read`'s modelProvider and model); default the mock's. */
  modelProvider?: string;
  model?: string;
}

let goalClock = 1_000;

export function testGoal(threadId: string, status: GoalStatus): FakeGoal {
  goalClock += 1;
  return {
    threadId,
    objective: 'ship the feature',
    status,
    tokenBudget: null,
    tokensUsed: 100,
    timeUsedSeconds: 5,
    createdAt: 1,
    updatedAt: goalClock,
  };
}

/** `account/rateLimits/updated`'s snapshot as the real daemon sends it for a 429 without rate-limit headers. */
export const NULL_SNAPSHOT = {
  limitId: 'codex',
  limitName: null,
  normalModelSlug: null,
  primary: null,
  secondary: null,
  credits: null,
  individualLimit: null,
  spendControlReached: null,
  planType: null,
  rateLimitReachedType: null,
};

export function testTurn(id: string, status: string, codexErrorInfo: unknown = 'internalServerError'): FakeTurn {
  return {
    id,
    status,
    error: status === 'failed' ? { message: 'synthetic failure', codexErrorInfo, additionalDetails: null } : null,
  };
}

/** A user goal-status marker line, as the seed's intentLine writes it. */
export function intentLine(status: GoalStatus): string {
  const body = `\nUser set goal status: ${JSON.stringify(status)}.\n`;
  return `${JSON.stringify({
    type: 'response_item',
    payload: {
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: body }],
      internal_chat_message_metadata_passthrough: { content_item_kinds: ['user.goal'] },
    },
  })}\n`;
}

/** The `event_msg/thread_goal_updated` line Codex writes into the rollout for every `thread/goal/set` (§g). */
export function goalEventLine(goal: FakeGoal): string {
  return `${JSON.stringify({ type: 'event_msg', payload: { type: 'thread_goal_updated', threadId: goal.threadId, goal } })}\n`;
}

/** The line Codex writes when the model itself calls `update_goal` (a model block: not a failure). */
export function modelGoalCallLine(status: GoalStatus, callId = 'call-1'): string {
  return `${JSON.stringify({ type: 'response_item', payload: { type: 'function_call', name: 'update_goal', arguments: JSON.stringify({ status }), call_id: callId } })}\n`;
}
