// The fault suites' oracle for "how many times was this goal re-activated", read from the daemon's
// own record, the rollout (`thread.path`), independently of the product's rollout reader.
//
// Measured with codex 0.169.0 (docs/daemon-behaviour.md (g), and the fault suite's probes):
//  - every effective `thread/goal/set {status: "active"}` on a loaded thread writes one
//    `event_msg/thread_goal_updated` line with status "active";
//  - a user's set (origin "user") writes the `source="user_goal"` user message right before it;
//    an automatic set writes the event alone;
//  - the daemon continuing an active goal by itself (after a restart, or a client's
//    `thread/resume`) writes no goal event, only a new `task_started`;
//  - a failure-induced block and the model's own `update_goal` write no such event.
// So the automatic activations are exactly the engine's effective recoveries, which thread/turns/list
// cannot tell apart from the daemon's own continuation turns (a turn killed with the daemon lists
// as `interrupted`, and the continuation after a resume is a new turn of the same goal).
// One limit, measured: a SIGKILLed daemon can lose the rollout's last lines while the goal's new
// status is already committed to its goal store (goals_1.sqlite). An activation just before a
// kill may therefore be missing here; the daemon-kill suite reads the goal's status after the
// restart for that part (see test/faults/daemonKilled.test.ts).
import * as fs from 'node:fs';

export interface Activation {
  /** 0-based line number in the rollout. */
  line: number;
  /** Byte offset of the line's start. */
  offset: number;
  /** The turn that started last before this activation (the failed turn it re-activates), or null. */
  afterTurn: string | null;
  /**
   * When the daemon wrote it (the line's `timestamp`, ms since the epoch; NaN if it has none):
   * the daemon's clock, the machine's, so comparable with the runner's due times.
   */
  at: number;
}

export interface RolloutGoals {
  /** Activations by a person (the user_goal message right before). */
  user: Activation[];
  /** Activations with no user message: `origin: "automatic"`, the engine's. */
  automatic: Activation[];
  /** Turn ids in the order they started. */
  turns: string[];
  /** Lines that were not JSON (a line cut by a killed daemon), with their numbers. */
  unreadable: number[];
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function isUserGoalMessage(obj: Json): boolean {
  const p = obj.payload;
  if (obj.type !== 'response_item' || !isObj(p) || p.type !== 'message' || p.role !== 'user') return false;
  const meta = p.internal_chat_message_metadata_passthrough;
  if (isObj(meta) && Array.isArray(meta.content_item_kinds) && meta.content_item_kinds.includes('user.goal'))
    return true;
  return JSON.stringify(p.content ?? '').includes('source=\\"user_goal\\"');
}

export function readRolloutGoals(rolloutPath: string): RolloutGoals {
  const text = fs.readFileSync(rolloutPath, 'utf8');
  const out: RolloutGoals = { user: [], automatic: [], turns: [], unreadable: [] };
  let previous: Json | null = null;
  let lastTurn: string | null = null;
  const lines = text.split('\n');
  let offset = 0;
  lines.forEach((raw, i) => {
    const start = offset;
    offset += Buffer.byteLength(raw, 'utf8') + 1;
    if (raw.trim() === '') return;
    let obj: unknown;
    try {
      obj = JSON.parse(raw);
    } catch {
      out.unreadable.push(i);
      return;
    }
    if (!isObj(obj)) return;
    const p = obj.payload;
    if (obj.type === 'event_msg' && isObj(p)) {
      if (p.type === 'task_started' && typeof p.turn_id === 'string') {
        lastTurn = p.turn_id;
        out.turns.push(p.turn_id);
      }
      if (p.type === 'thread_goal_updated' && isObj(p.goal) && p.goal.status === 'active') {
        const activation = {
          line: i,
          offset: start,
          afterTurn: lastTurn,
          at: typeof obj.timestamp === 'string' ? Date.parse(obj.timestamp) : NaN,
        };
        if (previous !== null && isUserGoalMessage(previous)) out.user.push(activation);
        else out.automatic.push(activation);
      }
    }
    previous = obj;
  });
  return out;
}

/** The seed from `CGR_FAULT_SEED`, else a fresh one. */
export function faultSeed(env: NodeJS.ProcessEnv = process.env): number {
  const given = Number(env.CGR_FAULT_SEED);
  return Number.isSafeInteger(given) && given >= 0 ? given >>> 0 : Math.floor(Math.random() * 2 ** 32);
}
