// Every decision the engine makes, as data: the runner prints them (one JSON object
// per line with --json), the extension logs them and refreshes its views.

import type { GoalStatus } from './watch';

export type Decision =
  | { type: 'armed'; threadId: string; title: string }
  | {
      type: 'backoff';
      threadId: string;
      attempt: number;
      failedTurnId: string;
      dueAt: number;
      delayMs: number;
      error: string;
    }
  | { type: 'recovering'; threadId: string; attempt: number; failedTurnId: string }
  | { type: 'recovered'; threadId: string; attempt: number; failedTurnId: string; how: string }
  | { type: 'skipped'; threadId: string; reason: string; detail?: string }
  | { type: 'disarmed'; threadId: string; reason: string }
  | { type: 'rearmed'; threadId: string; reason: string }
  | { type: 'loaded'; threadId: string; reason: string }
  | { type: 'gave-up'; threadId: string; attempts: number; failedTurnId: string }
  | { type: 'attention'; threadId: string; reason: string }
  /** A goal in a thread another Codex app holds: found, or stopped there (shown, never set). */
  | { type: 'elsewhere'; threadId: string; status: GoalStatus; reason: string }
  | { type: 'connection'; state: 'connecting' | 'connected' | 'disconnected' | 'error'; detail: string }
  | { type: 'warning'; message: string; threadId?: string };

export type DecisionType = Decision['type'];
