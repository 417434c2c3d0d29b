/**
 * What the user client (`userClient.ts`) records of everything it receives, and the one-line
 * rendering of an entry used in evidence and failure messages.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
export type Json = any;

export interface LogEntry {
  /** Arrival order across everything this client received (1, 2, 3...). */
  seq: number;
  /** Date.now() at arrival. */
  at: number;
  kind: 'notification' | 'serverRequest' | 'response';
  /** Notification / server-request method, or for a response the method of the request it answers. */
  method: string;
  /** JSON-RPC id (server requests and responses). */
  id?: number | string;
  params?: Json;
  result?: Json;
  error?: { code: number; message: string; data?: Json };
}

export type Notification = LogEntry & { kind: 'notification' };
export type ServerRequest = LogEntry & { kind: 'serverRequest' };

/** One short line for a log entry: method plus the fields that matter for goal recovery. */
export function describe(e: LogEntry): string {
  const p = e.params ?? {};
  switch (e.kind) {
    case 'response':
      return `#${e.seq} reply(${e.method})${e.error ? ` ERROR ${e.error.code} ${e.error.message}` : ''}`;
    case 'serverRequest':
      return `#${e.seq} request ${e.method} id=${String(e.id)}`;
    default:
      break;
  }
  switch (e.method) {
    case 'thread/goal/updated':
      return `#${e.seq} thread/goal/updated(${p.goal?.status}${p.turnId ? `, turn ${short(p.turnId)}` : ''})`;
    case 'thread/status/changed':
      return `#${e.seq} thread/status/changed(${p.status?.type}${p.status?.activeFlags?.length ? ':' + p.status.activeFlags.join(',') : ''})`;
    case 'error':
      return `#${e.seq} error(willRetry ${p.willRetry}, ${JSON.stringify(p.error?.codexErrorInfo)})`;
    case 'turn/started':
      return `#${e.seq} turn/started(${short(p.turn?.id)})`;
    case 'turn/completed':
      return `#${e.seq} turn/completed(${p.turn?.status}${p.turn?.error ? ', ' + JSON.stringify(p.turn.error.codexErrorInfo) : ''})`;
    case 'item/started':
    case 'item/completed':
      return `#${e.seq} ${e.method}(${p.item?.type})`;
    default:
      return `#${e.seq} ${e.method}`;
  }
}

function short(id: unknown): string {
  return typeof id === 'string' ? id.slice(-6) : String(id);
}
