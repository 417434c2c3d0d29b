// The last lines of the extension's log, kept in memory (a bounded ring) for Copy Diagnostics:
// the log channel as the rest of the extension uses it, with each info, warning and error line
// also kept here, timestamped. Nothing is read back from the log's file.
import type * as vscode from 'vscode';

export const RECENT_LINES = 200;

const rings = new WeakMap<object, string[]>();

const LEVELS = { info: 'info', warn: 'warning', error: 'error' } as const;

/** `channel`, with its info, warning and error lines also kept in a ring of `limit` lines. */
export function keepRecentLines(channel: vscode.LogOutputChannel, limit = RECENT_LINES): vscode.LogOutputChannel {
  const ring: string[] = [];
  const keep = (level: string, message: unknown) => {
    const text = message instanceof Error ? message.message : String(message);
    // A decision's line starts with its own time already.
    const stamped = /^\d{4}-\d\d-\d\dT/.test(text) ? text : `${new Date().toISOString()} ${text}`;
    ring.push(`[${level}] ${stamped}`);
    if (ring.length > limit) ring.splice(0, ring.length - limit);
  };
  const recorded = new Proxy(channel, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (typeof property === 'string' && property in LEVELS)
        return (message: unknown, ...args: unknown[]) => {
          keep(LEVELS[property as keyof typeof LEVELS], message);
          return fn.call(target, message, ...args);
        };
      return fn.bind(target);
    },
  });
  rings.set(recorded, ring);
  return recorded;
}

/** The lines kept for `channel` (made by keepRecentLines), oldest first; none for another channel. */
export function recentLines(channel: vscode.LogOutputChannel, last = RECENT_LINES): string[] {
  return (rings.get(channel) ?? []).slice(-last);
}
