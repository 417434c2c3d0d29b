// What every view shows: the leader's engine state, as one serializable value, so a window
// that runs the engine and a window that follows it render exactly the same thing.
import * as z from '../util/zod';
import { WatchedThreadSchema } from './watch';

export const ConnectionStateSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('connecting'), detail: z.string() }),
  z.object({
    kind: z.literal('connected'),
    detail: z.string(),
    /** The daemon's Codex version (from `initialize`'s userAgent), and a warning when it is untested. */
    codexVersion: z.optional(z.nullable(z.string())),
    versionWarning: z.optional(z.nullable(z.string())),
  }),
  z.object({ kind: z.literal('disconnected'), detail: z.string(), retryAt: z.nullable(z.number()) }),
  /** A follower's view while the leader has not answered for a while: its last push is stale, nothing counts down. */
  z.object({ kind: z.literal('unresponsive'), detail: z.string() }),
]);
export type ConnectionState = z.infer<typeof ConnectionStateSchema>;

export const EngineSnapshotSchema = z.object({
  /** When the snapshot was taken (ms). */
  at: z.number(),
  connection: ConnectionStateSchema,
  /** Where the engine connects (a socket path, a URL, a command): shown when it cannot. */
  target: z.string(),
  /** Auto-recovery paused by the user, since when. */
  pausedAt: z.nullable(z.number()),
  maxAttempts: z.number().check(z.int(), z.positive()),
  /** The policy in force in the engine that made this snapshot (machine-wide settings): shown by every window. */
  policy: z.optional(
    z.object({
      baseDelayMs: z.number(),
      maxDelayMs: z.number(),
      maxAttempts: z.number(),
      autoArm: z.boolean(),
      recoverUsageLimited: z.boolean(),
      resyncMs: z.number(),
      /** Automatic recoveries per goal in a rolling 24 h (absent from an older leader). */
      recoveryBudget: z.optional(z.number()),
    }),
  ),
  /** The soonest time the engine will act, or null. */
  nextDueAt: z.nullable(z.number()),
  watches: z.array(WatchedThreadSchema),
});
export type EngineSnapshot = z.infer<typeof EngineSnapshotSchema>;

export function emptySnapshot(target: string, now: number): EngineSnapshot {
  return {
    at: now,
    connection: { kind: 'connecting', detail: 'starting' },
    target,
    pausedAt: null,
    maxAttempts: 6,
    nextDueAt: null,
    watches: [],
  };
}
