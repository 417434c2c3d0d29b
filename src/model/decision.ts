// Every decision the engine makes, as data: the runner prints them (one JSON object per line with
// --json), the extension logs them, and the leader streams them to every engine that follows it
// (src/leader/messages.ts), checked against the zod schema on arrival; the type is inferred.
import * as z from '../util/zod';
import { GoalStatusSchema } from './watch';

const thread = { threadId: z.string() };
const attempt = { attempt: z.number(), failedTurnId: z.string() };

export const DecisionSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('armed'), ...thread, title: z.string() }),
  z.object({
    type: z.literal('backoff'),
    ...thread,
    ...attempt,
    dueAt: z.number(),
    delayMs: z.number(),
    error: z.string(),
  }),
  z.object({ type: z.literal('recovering'), ...thread, ...attempt }),
  z.object({ type: z.literal('recovered'), ...thread, ...attempt, how: z.string() }),
  z.object({ type: z.literal('skipped'), ...thread, reason: z.string(), detail: z.optional(z.string()) }),
  z.object({ type: z.literal('disarmed'), ...thread, reason: z.string() }),
  z.object({ type: z.literal('rearmed'), ...thread, reason: z.string() }),
  z.object({ type: z.literal('loaded'), ...thread, reason: z.string() }),
  /** One outage, one probe: this goal's recovery goes first; `others` of its `group` wait for its verdict. */
  z.object({ type: z.literal('probe'), ...thread, group: z.string(), others: z.number() }),
  /** The provider answered on goal `by`: this goal's recovery is due now, not at its backoff. */
  z.object({ type: z.literal('released'), ...thread, by: z.string(), reason: z.string() }),
  z.object({ type: z.literal('gave-up'), ...thread, attempts: z.number(), failedTurnId: z.string() }),
  z.object({ type: z.literal('attention'), ...thread, reason: z.string() }),
  /** A goal in a thread another Codex app holds: found, or stopped there (shown, never set). */
  z.object({ type: z.literal('elsewhere'), ...thread, status: GoalStatusSchema, reason: z.string() }),
  z.object({
    type: z.literal('connection'),
    state: z.enum(['connecting', 'connected', 'disconnected', 'error']),
    detail: z.string(),
    /**
     * Lost (`disconnected`, `error`): the tries that failed since the daemon was last there, this one
     * counted (1: just gone, or not there at the start). `connected`: the tries that failed before it.
     */
    tries: z.optional(z.number()),
  }),
  z.object({ type: z.literal('warning'), message: z.string(), threadId: z.optional(z.string()) }),
]);

export type Decision = z.infer<typeof DecisionSchema>;

export type DecisionType = Decision['type'];

/** Every decision type, in the schema's order (docs/runner.md's `--json` table is checked against it). */
export const DECISION_TYPES: readonly DecisionType[] = DecisionSchema.def.options.map(
  (o) => o.shape.type.def.values[0],
);
