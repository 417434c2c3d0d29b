// The rate limits Codex writes into a thread's rollout: an `event_msg` `token_count` line whose
// `rate_limits` are the values `account/rateLimits/updated` sends, snake_case (all null without
// the provider's headers): docs/daemon-behaviour.md (r). Read as the protocol's
// `RateLimitSnapshot`; unknown fields are ignored, a malformed line is no snapshot.
import { RateLimitsUpdatedSchema, type RateLimitSnapshot } from '../protocol/schema';
import { isRecord } from '../model/watch';
import { parseActivationBytes, parseJson } from './markerLines';

const TOKEN_COUNT = 'token_count';
const TASK_STARTED = 'task_started';

/** What a line going back through a turn says: its rate limits, or where to stop looking. */
export type TurnLimitLine = { snapshot: RateLimitSnapshot } | { stop: 'turnStart' | 'activation' };

/** The snapshot a `token_count` line carries, or null (another line, no `rate_limits`, malformed). */
export function parseRateLimitLine(line: string): RateLimitSnapshot | null {
  if (!line.includes(TOKEN_COUNT)) return null;
  const payload = eventPayload(line);
  if (payload === null || payload.type !== TOKEN_COUNT) return null;
  const r = payload.rate_limits;
  if (!isRecord(r)) return null;
  const parsed = RateLimitsUpdatedSchema.safeParse({
    rateLimits: {
      limitId: r.limit_id,
      primary: windowOf(r.primary),
      secondary: windowOf(r.secondary),
      rateLimitReachedType: r.rate_limit_reached_type,
      spendControlReached: r.spend_control_reached,
    },
  });
  return parsed.success ? parsed.data.rateLimits : null;
}

/**
 * Going back from a rollout's end to a failed turn's rate limits: a `token_count` line with rate
 * limits is the evidence; the turn's `task_started`, or the goal's activation, ends the search.
 */
export function parseTurnLimitBytes(line: Buffer): TurnLimitLine | null {
  if (line.indexOf(TOKEN_COUNT) >= 0) {
    const snapshot = parseRateLimitLine(line.toString('utf8'));
    return snapshot && { snapshot };
  }
  if (line.indexOf(TASK_STARTED) >= 0 && eventPayload(line.toString('utf8'))?.type === TASK_STARTED)
    return { stop: 'turnStart' };
  return parseActivationBytes(line) && { stop: 'activation' };
}

function windowOf(w: unknown): unknown {
  if (!isRecord(w)) return w;
  return { usedPercent: w.used_percent, windowDurationMins: w.window_minutes, resetsAt: w.resets_at };
}

function eventPayload(line: string): Record<string, unknown> | null {
  const obj = parseJson(line);
  return isRecord(obj) && obj.type === 'event_msg' && isRecord(obj.payload) ? obj.payload : null;
}
