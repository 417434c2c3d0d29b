// Realistic Codex rollout lines (JSON lines, as `thread.path` holds them) for the marker tests,
// the engine tests and the rollout benchmark, and a writer that streams them to a file in
// bounded memory (a 512 MB rollout is never built in memory).
import * as fs from 'node:fs';
import type { GoalStatus } from '../../src/model/watch';

let clock = Date.parse('2025-06-01T10:00:00Z');
/** A timestamp a little later than the previous one. */
export function ts(): string {
  clock += 137;
  return new Date(clock).toISOString();
}

/** A marker line as Codex writes it (wrapper, turn id, provenance). */
export function realMarker(
  status: GoalStatus | null,
  opts: { objective?: string; omitted?: boolean; pad?: number } = {},
): string {
  let body = '\n';
  if (opts.omitted) body += 'User set the goal: [objective omitted; exceeds the evidence limit].\n';
  else if (opts.objective !== undefined) body += `User set the goal: ${JSON.stringify(opts.objective)}\n`;
  if (status) body += `User set goal status: ${JSON.stringify(status)}.\n`;
  const line: Record<string, unknown> = {
    timestamp: ts(),
    type: 'response_item',
    payload: {
      type: 'message',
      role: 'user',
      content: [
        { type: 'input_text', text: `<codex_internal_context source="user_goal">${body}</codex_internal_context>` },
      ],
      internal_chat_message_metadata_passthrough: {
        turn_id: 'auto-compact-2',
        content_item_kinds: [opts.omitted ? 'user.goal.omitted' : 'user.goal'],
        content_item_metadata: [{ provenance: { type: 'harness', hook: false } }],
      },
    },
    metadata: { client_authored: false },
  };
  if (opts.pad) line.padding = 'p'.repeat(opts.pad);
  return JSON.stringify(line);
}

/** The seed spec's simpler marker. */
export function seedMarker(status: string): string {
  return JSON.stringify({
    type: 'response_item',
    payload: {
      type: 'message',
      role: 'user',
      content: [{ type: 'input_text', text: `\nUser set goal status: "${status}".\n` }],
      internal_chat_message_metadata_passthrough: { content_item_kinds: ['user.goal'] },
    },
  });
}

/** Codex's `thread_goal_updated` event (written for every thread/goal/set); `active` is an activation. */
export function goalEvent(status: GoalStatus, objective = 'Keep the build green'): string {
  return JSON.stringify({
    timestamp: ts(),
    type: 'event_msg',
    payload: { type: 'thread_goal_updated', goal: { status, objective } },
  });
}

/** Codex's `task_started` event: a turn began (the daemon judge reads which turn an activation follows). */
export function taskStarted(turnId: string): string {
  return JSON.stringify({ timestamp: ts(), type: 'event_msg', payload: { type: 'task_started', turn_id: turnId } });
}

/**
 * Codex's `token_count` event with the rate limits of a response or a 429 (docs/daemon-behaviour.md
 * (r)): `snapshot` as `account/rateLimits/updated` sends it (camelCase), written snake_case.
 */
export function tokenCount(snapshot: Record<string, unknown>): string {
  const windowOf = (w: unknown) => {
    if (typeof w !== 'object' || w === null) return w;
    const { usedPercent, windowDurationMins, resetsAt } = w as Record<string, unknown>;
    return { used_percent: usedPercent, window_minutes: windowDurationMins, resets_at: resetsAt };
  };
  const snake = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  const rateLimits = Object.fromEntries(
    Object.entries(snapshot).map(([k, v]) => [snake(k), k === 'primary' || k === 'secondary' ? windowOf(v) : v]),
  );
  return JSON.stringify({
    timestamp: ts(),
    type: 'event_msg',
    payload: { type: 'token_count', info: null, rate_limits: rateLimits },
  });
}

/** The model's own `update_goal` call. */
export function modelGoalCall(status: GoalStatus, callId = 'call_goal'): string {
  return JSON.stringify({
    timestamp: ts(),
    type: 'response_item',
    payload: { type: 'function_call', name: 'update_goal', arguments: JSON.stringify({ status }), call_id: callId },
  });
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
function b64(rand: () => number, n: number): string {
  const start = Math.floor(rand() * 64);
  return (B64.slice(start) + B64.repeat(Math.ceil(n / 64) + 1)).slice(0, n);
}

/** A tool output of about `bytes` bytes (a directory listing, a build log): one multi-MB line when large. */
export function toolOutput(rand: () => number, bytes: number): string {
  const row = 'drwxr-xr-x  2 root root 4096 Nov 30 08:54 src\n' + 'x'.repeat(200) + '\n';
  const out = row.repeat(Math.max(1, Math.round(bytes / row.length)));
  return JSON.stringify({
    timestamp: ts(),
    type: 'response_item',
    payload: { type: 'function_call_output', call_id: `call_${Math.floor(rand() * 1e9).toString(36)}`, output: out },
  });
}

export interface NoiseOptions {
  /**
   * Whether some lines are automatic goal activations (a `thread_goal_updated` event, status
   * active); default true. Without them, those lines are token counts instead.
   */
  activations?: boolean;
}

/** A realistic non-marker rollout line; `big` lines are tool outputs of hundreds of KB. */
export function noiseLine(rand: () => number, big = false, opts: NoiseOptions = {}): string {
  const r = rand();
  const callId = `call_${Math.floor(rand() * 1e9).toString(36)}`;
  if (big) {
    const out = ('drwxr-xr-x  2 root root 4096 Nov 30 08:54 src\n' + 'x'.repeat(200) + '\n').repeat(
      Math.floor(300 + rand() * 1500),
    );
    return JSON.stringify({
      timestamp: ts(),
      type: 'response_item',
      payload: { type: 'function_call_output', call_id: callId, output: out },
    });
  }
  if (r < 0.25) {
    return JSON.stringify({
      timestamp: ts(),
      type: 'response_item',
      payload: {
        type: 'reasoning',
        summary: [{ type: 'summary_text', text: '**Planning the fix**' }],
        content: null,
        encrypted_content: b64(rand, 2000 + Math.floor(rand() * 6000)),
      },
    });
  }
  if (r < 0.45) {
    return JSON.stringify({
      timestamp: ts(),
      type: 'response_item',
      payload: {
        type: 'function_call',
        name: 'shell',
        arguments: JSON.stringify({ command: ['bash', '-lc', 'rg -n user.goal src'], workdir: '/repo' }),
        call_id: callId,
      },
    });
  }
  if (r < 0.6) {
    // A tool output that quotes a marker line verbatim (the agent grepped a rollout): not a marker.
    return JSON.stringify({
      timestamp: ts(),
      type: 'response_item',
      payload: {
        type: 'function_call_output',
        call_id: callId,
        output: `rollout.jsonl:12:${realMarker('paused')}\n` + 'y'.repeat(Math.floor(rand() * 20000)),
      },
    });
  }
  if (r < 0.7 || (r < 0.8 && opts.activations === false)) {
    return JSON.stringify({
      timestamp: ts(),
      type: 'event_msg',
      payload: { type: 'token_count', info: { total_token_usage: { input_tokens: Math.floor(rand() * 1e6) } } },
    });
  }
  if (r < 0.8) {
    // Automatic goal change: event only, and it mentions the goal.
    return JSON.stringify({
      timestamp: ts(),
      type: 'event_msg',
      payload: { type: 'thread_goal_updated', goal: { status: 'active', objective: 'user.goal test' } },
    });
  }
  if (r < 0.9) {
    // A person typed the sentence: no user.goal kind, not a marker.
    return JSON.stringify({
      timestamp: ts(),
      type: 'response_item',
      payload: {
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: 'User set goal status: "paused". (about user.goal)' }],
      },
    });
  }
  return JSON.stringify({
    timestamp: ts(),
    type: 'response_item',
    payload: {
      type: 'message',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'Done. ' + 'z'.repeat(Math.floor(rand() * 3000)) }],
    },
  });
}

/**
 * Appends lines to a file through a small buffer, synchronously: memory is bounded by the
 * buffer plus the longest line, whatever the file grows to. `offset` is where the next line starts.
 */
export class RolloutWriter {
  private readonly fd: number;
  private pending: string[] = [];
  private pendingBytes = 0;
  offset: number;

  constructor(
    readonly path: string,
    private readonly flushBytes = 4 * 1024 * 1024,
  ) {
    this.fd = fs.openSync(path, 'a');
    this.offset = fs.fstatSync(this.fd).size;
  }

  /** Appends `line` and a "\n"; returns the offset the line starts at. */
  line(line: string): number {
    const at = this.offset;
    const bytes = Buffer.byteLength(line) + 1;
    this.pending.push(line, '\n');
    this.pendingBytes += bytes;
    this.offset += bytes;
    if (this.pendingBytes >= this.flushBytes) this.flush();
    return at;
  }

  flush(): void {
    if (this.pending.length === 0) return;
    const data = Buffer.from(this.pending.join(''));
    this.pending = [];
    this.pendingBytes = 0;
    let done = 0;
    while (done < data.length) done += fs.writeSync(this.fd, data, done);
  }

  close(): void {
    this.flush();
    fs.closeSync(this.fd);
  }
}
