// zod schemas for every message the engine reads from the Codex app-server
// (checked against `codex app-server generate-ts` of @openai/codex 0.169.0 and 0.171.0, and
// kept so by the drift test: test/integration/schemaDrift.test.ts).
// Unknown fields are tolerated and dropped; a missing or mistyped field the
// engine relies on is a protocol error, reported with the method's name.
import * as z from '../util/zod';
import { GoalStatusSchema } from '../model/watch';

/** Absent or null: null. */
function orNull<T extends z.ZodMiniType>(schema: T) {
  return z.pipe(
    z.optional(z.nullable(schema)),
    z.transform((v: z.infer<T> | null | undefined) => v ?? null),
  );
}

export const ThreadGoalSchema = z.object({
  threadId: z.string(),
  objective: z.string(),
  status: GoalStatusSchema,
  tokenBudget: orNull(z.number()),
  tokensUsed: z.catch(z.number(), 0),
  timeUsedSeconds: z.catch(z.number(), 0),
  createdAt: z.catch(z.number(), 0),
  updatedAt: z.catch(z.number(), 0),
});
export type ThreadGoal = z.infer<typeof ThreadGoalSchema>;

const ThreadStatusUnion = z.union([
  z.object({ type: z.literal('active'), activeFlags: z.catch(z.array(z.string()), []) }),
  z.object({ type: z.enum(['notLoaded', 'idle', 'systemError']) }),
  // A status this version does not know: keep its name, treat it as not active.
  z.object({ type: z.string() }),
]);
type ParsedStatus = z.infer<typeof ThreadStatusUnion>;

/** The statuses nearly every thread has, one frozen copy each (the engine keeps one per thread). */
const SHARED_STATUSES: ReadonlyMap<string, ParsedStatus> = new Map(
  [
    { type: 'active', activeFlags: Object.freeze([]) as unknown as string[] },
    { type: 'notLoaded' },
    { type: 'idle' },
    { type: 'systemError' },
  ].map((status) => [status.type, Object.freeze(status)]),
);

export const ThreadStatusSchema = z.pipe(
  ThreadStatusUnion,
  z.transform((status: ParsedStatus): ParsedStatus => {
    const flagged = 'activeFlags' in status && status.activeFlags.length > 0;
    return (!flagged && SHARED_STATUSES.get(status.type)) || status;
  }),
);
export type ThreadStatus = z.infer<typeof ThreadStatusSchema>;

export const TurnErrorSchema = z.object({
  message: z.catch(z.string(), ''),
  codexErrorInfo: orNull(z.unknown()),
  additionalDetails: orNull(z.string()),
});
export type TurnError = z.infer<typeof TurnErrorSchema>;

export const TurnSchema = z.object({
  id: z.string(),
  status: z.string(), // completed | interrupted | failed | inProgress (others tolerated)
  error: orNull(TurnErrorSchema),
  /** Unix seconds; null: the turn has not ended (daemon-behaviour (q)); absent: not said. */
  completedAt: z.catch(z.optional(z.nullable(z.number())), undefined),
});
export type Turn = z.infer<typeof TurnSchema>;

export const ThreadSchema = z.object({
  id: z.string(),
  status: ThreadStatusSchema,
  path: orNull(z.string()),
  preview: z.catch(z.string(), ''),
  name: orNull(z.string()),
  /** Unix seconds; moves when the rollout is written (a turn, a goal change). Read from `thread/list`. */
  updatedAt: z.catch(z.number(), 0),
  /** What the thread runs on (`"openai"`, `"gpt-5.5"`; the mock: `"mock"`, `"mock-model"`): an outage's group. */
  modelProvider: z.catch(z.optional(z.nullable(z.string())), null),
  model: z.catch(z.optional(z.nullable(z.string())), null),
});
export type Thread = z.infer<typeof ThreadSchema>;

// Results.
export const InitializeResultSchema = z.object({
  userAgent: z.catch(z.string(), ''),
  codexHome: z.optional(z.string()),
});
export const LoadedListResultSchema = z.object({
  data: z.array(z.string()),
  nextCursor: z.optional(z.nullable(z.string())),
});
export const ThreadListResultSchema = z.object({
  data: z.array(ThreadSchema),
  nextCursor: z.optional(z.nullable(z.string())),
});
export const GoalResultSchema = z.object({ goal: z.nullable(ThreadGoalSchema) });
export const ThreadResultSchema = z.object({ thread: ThreadSchema });
export const TurnsListResultSchema = z.object({ data: z.array(TurnSchema) });
/** `thread/resume` asked for `initialTurnsPage`: the thread, and a `thread/turns/list` page (null when not given). */
export const ResumeResultSchema = z.object({
  thread: ThreadSchema,
  initialTurnsPage: z.optional(z.nullable(TurnsListResultSchema)),
});
const RateLimitWindowSchema = z.object({
  usedPercent: z.catch(z.number(), 0),
  /** The window's length: tells a 5-hour window from a weekly one (the slot does not). */
  windowDurationMins: z.optional(z.nullable(z.catch(z.nullable(z.number()), null))),
  /** Unix seconds. */
  resetsAt: z.optional(z.nullable(z.number())),
});
export type RateLimitWindow = z.infer<typeof RateLimitWindowSchema>;
const RateLimitSnapshotSchema = z.object({
  limitId: z.optional(z.nullable(z.catch(z.nullable(z.string()), null))),
  primary: z.optional(z.nullable(RateLimitWindowSchema)),
  secondary: z.optional(z.nullable(RateLimitWindowSchema)),
  /** e.g. "rate_limit_reached", "workspace_owner_credits_depleted" (a string: unknown values are kept). */
  rateLimitReachedType: z.optional(z.nullable(z.catch(z.nullable(z.string()), null))),
  spendControlReached: z.optional(z.nullable(z.catch(z.nullable(z.boolean()), null))),
});
export type RateLimitSnapshot = z.infer<typeof RateLimitSnapshotSchema>;
/** `account/rateLimits/updated {rateLimits}`: one snapshot, sparse. */
export const RateLimitsUpdatedSchema = z.object({ rateLimits: RateLimitSnapshotSchema });
export const RateLimitsResultSchema = z.object({
  rateLimits: z.optional(z.nullable(RateLimitSnapshotSchema)),
  rateLimitsByLimitId: z.optional(z.nullable(z.record(z.string(), z.optional(z.nullable(RateLimitSnapshotSchema))))),
});

// Notifications.
export const GoalUpdatedSchema = z.object({
  threadId: z.string(),
  turnId: z.optional(z.nullable(z.string())),
  goal: ThreadGoalSchema,
});
export const ThreadIdSchema = z.object({ threadId: z.string() });
export const ThreadStatusChangedSchema = z.object({ threadId: z.string(), status: ThreadStatusSchema });
export const ThreadStartedSchema = z.object({ thread: ThreadSchema });
export const TurnNotificationSchema = z.object({ threadId: z.string(), turn: TurnSchema });
/** `thread/tokenUsage/updated`: a response came back whole (usage is counted only then). */
export const TokenUsageSchema = z.object({ threadId: z.string(), turnId: z.optional(z.nullable(z.string())) });
export const ErrorNotificationSchema = z.object({
  threadId: z.string(),
  turnId: z.optional(z.nullable(z.string())),
  willRetry: z.boolean(),
  error: TurnErrorSchema,
});
export const ServerRequestResolvedSchema = z.object({
  threadId: z.string(),
  requestId: z.union([z.string(), z.number()]),
});
export const ServerRequestParamsSchema = z.object({ threadId: z.string() });

/** High-volume notifications the engine never reads: the daemon is asked not to send them. */
export const OPT_OUT_NOTIFICATIONS = [
  'item/agentMessage/delta',
  'item/reasoning/textDelta',
  'item/reasoning/summaryTextDelta',
  'item/reasoning/summaryPartAdded',
  'item/commandExecution/outputDelta',
  'item/commandExecution/terminalInteraction',
  'item/fileChange/outputDelta',
  'item/fileChange/patchUpdated',
  'item/plan/delta',
  'item/mcpToolCall/progress',
  'item/started',
  'item/completed',
  'rawResponseItem/completed',
  'rawResponse/completed',
  'command/exec/outputDelta',
  'process/outputDelta',
  'turn/diff/updated',
  'turn/plan/updated',
  'thread/realtime/outputAudio/delta',
  'thread/realtime/transcript/delta',
  'thread/realtime/item/transcript/delta',
  'fuzzyFileSearch/sessionUpdated',
  'fs/changed',
] as const;

/** Server-to-client requests: they belong to the user's client and are never answered. */
export const SERVER_REQUEST_METHODS = [
  'item/commandExecution/requestApproval',
  'item/fileChange/requestApproval',
  'item/permissions/requestApproval',
  'item/tool/requestUserInput',
  'mcpServer/elicitation/request',
  'applyPatchApproval',
  'execCommandApproval',
] as const;
