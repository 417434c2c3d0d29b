// Which rollout lines count: a person's goal-status marker, the model's own `update_goal` call,
// and Codex's `thread_goal_updated` event. Cheap for every other line: a substring test comes
// before JSON.parse.
import { GOAL_STATUSES, type GoalStatus, isRecord } from '../model/watch';

const PREFILTER = 'user.goal';
const MARKER_KINDS: ReadonlySet<unknown> = new Set(['user.goal', 'user.goal.omitted']);
/** Codex writes `User set goal status: "<status>".` on a line of its own, after any objective line. */
const STATUS_SENTENCE = /^User set goal status: "([A-Za-z]+)"\.[ \t\r]*$/gm;
const VALID_STATUSES: ReadonlySet<string> = new Set(GOAL_STATUSES);

/**
 * The status a person requested, if `line` is a user goal-status marker; null otherwise
 * (any other line, an objective-only marker, "User cleared the goal.", invalid JSON, an
 * unknown status). Cheap for non-markers: a substring test comes before JSON.parse.
 */
export function parseMarkerLine(line: string): GoalStatus | null {
  return line.includes(PREFILTER) ? markerStatusOf(parseJson(line)) : null;
}

/** `parseMarkerLine` on a line already parsed (`JSON.parse` of the whole line). */
export function markerStatusOf(obj: unknown): GoalStatus | null {
  const payload = isRecord(obj) && obj.type === 'response_item' ? obj.payload : undefined;
  if (!isRecord(payload) || payload.type !== 'message' || payload.role !== 'user') return null;
  const meta = payload.internal_chat_message_metadata_passthrough;
  const kinds: unknown = isRecord(meta) ? meta.content_item_kinds : undefined;
  const content = payload.content;
  if (!Array.isArray(kinds) || !kinds.some((k) => MARKER_KINDS.has(k)) || !Array.isArray(content)) return null;
  // When kinds parallel the content items, read only the goal items.
  const parallel = kinds.length === content.length;
  let status: GoalStatus | null = null;
  content.forEach((item: unknown, i) => {
    if (parallel && !MARKER_KINDS.has(kinds[i])) return;
    if (isRecord(item) && item.type === 'input_text' && typeof item.text === 'string') {
      status = statusIn(item.text) ?? status;
    }
  });
  return status;
}

/** The status in the last `User set goal status: "X".` line of a marker's text, if X is valid. */
function statusIn(text: string): GoalStatus | null {
  const last = [...text.matchAll(STATUS_SENTENCE)].at(-1)?.[1];
  return last !== undefined && VALID_STATUSES.has(last) ? (last as GoalStatus) : null;
}

/** `JSON.parse(text)`, or undefined when `text` is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const GOAL_EVENT_PREFILTER = 'thread_goal_updated';
const GOAL_LINE_PREFILTERS = ['update_goal', GOAL_EVENT_PREFILTER];

export type GoalChange = { by: 'model' | 'event'; status: GoalStatus };

/** A model `update_goal` call or a `thread_goal_updated` event with its status; null otherwise. */
export function parseGoalLine(line: string): GoalChange | null {
  return GOAL_LINE_PREFILTERS.some((p) => line.includes(p)) ? goalLineOf(parseJson(line)) : null;
}

/** `parseGoalLine` on a line already parsed (`JSON.parse` of the whole line). */
export function goalLineOf(obj: unknown): GoalChange | null {
  if (!isRecord(obj) || !isRecord(obj.payload)) return null;
  const payload = obj.payload;
  let by: GoalChange['by'];
  let goal: unknown;
  if (
    obj.type === 'response_item' &&
    payload.type === 'function_call' &&
    payload.name === 'update_goal' &&
    typeof payload.arguments === 'string'
  ) {
    [by, goal] = ['model', parseJson(payload.arguments)];
  } else if (obj.type === 'event_msg' && payload.type === 'thread_goal_updated') {
    [by, goal] = ['event', payload.goal];
  } else return null;
  const status = isRecord(goal) ? goal.status : undefined;
  return typeof status === 'string' && VALID_STATUSES.has(status) ? { by, status: status as GoalStatus } : null;
}

export function parseGoalBytes(line: Buffer): GoalChange | null {
  if (!GOAL_LINE_PREFILTERS.some((p) => line.indexOf(p) >= 0)) return null;
  return parseGoalLine(line.toString('utf8'));
}

export function parseMarkerBytes(line: Buffer): GoalStatus | null {
  if (line.indexOf(PREFILTER) < 0) return null;
  return parseMarkerLine(line.toString('utf8'));
}

/** A `thread_goal_updated` event line whose goal is active (what `findLastActivation` looks for). */
export function parseActivationBytes(line: Buffer): true | null {
  if (line.indexOf(GOAL_EVENT_PREFILTER) < 0) return null; // model calls cannot be activations
  const goal = parseGoalLine(line.toString('utf8'));
  return (goal?.by === 'event' && goal.status === 'active') || null;
}
