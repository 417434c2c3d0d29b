/**
 * What the user client (`userClient.ts`) records of everything it receives, and the one-line
 * rendering of an entry used in evidence and failure messages.
 */

/** `value.k1.k2…`, or undefined where a step is not an object (what `value?.k1?.k2` gives). */
export function field(value: unknown, ...path: string[]): unknown {
  let v = value;
  for (const k of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/**
 * An entry of what the client received. `J`: how a reader sees the received JSON (`unknown` in the
 * product, narrowed with `field`; the tests pick their own view).
 */
export interface LogEntry<J = unknown> {
  /** Arrival order across everything this client received (1, 2, 3...). */
  seq: number;
  /** Date.now() at arrival. */
  at: number;
  kind: 'notification' | 'serverRequest' | 'response';
  /** Notification / server-request method, or for a response the method of the request it answers. */
  method: string;
  /** JSON-RPC id (server requests and responses). */
  id?: number | string;
  params?: J;
  result?: J;
  error?: { code: number; message: string; data?: J };
}

export type Notification<J = unknown> = LogEntry<J> & { kind: 'notification' };
export type ServerRequest<J = unknown> = LogEntry<J> & { kind: 'serverRequest' };

/** One short line for a log entry: method plus the fields that matter for goal recovery. */
export function describe(e: LogEntry): string {
  const p: unknown = e.params ?? {};
  if (e.kind === 'response')
    return `#${e.seq} reply(${e.method})${e.error ? ` ERROR ${e.error.code} ${e.error.message}` : ''}`;
  if (e.kind === 'serverRequest') return `#${e.seq} request ${e.method} id=${String(e.id)}`;
  switch (e.method) {
    case 'thread/goal/updated': {
      const turnId = field(p, 'turnId');
      return `#${e.seq} thread/goal/updated(${String(field(p, 'goal', 'status'))}${turnId ? `, turn ${short(turnId)}` : ''})`;
    }
    case 'thread/status/changed': {
      const flags = field(p, 'status', 'activeFlags');
      const shown = Array.isArray(flags) && flags.length ? ':' + flags.join(',') : '';
      return `#${e.seq} thread/status/changed(${String(field(p, 'status', 'type'))}${shown})`;
    }
    case 'error':
      return `#${e.seq} error(willRetry ${String(field(p, 'willRetry'))}, ${JSON.stringify(field(p, 'error', 'codexErrorInfo'))})`;
    case 'turn/started':
      return `#${e.seq} turn/started(${short(field(p, 'turn', 'id'))})`;
    case 'turn/completed': {
      const error = field(p, 'turn', 'error');
      const shown = error ? ', ' + JSON.stringify(field(error, 'codexErrorInfo')) : '';
      return `#${e.seq} turn/completed(${String(field(p, 'turn', 'status'))}${shown})`;
    }
    case 'item/started':
    case 'item/completed':
      return `#${e.seq} ${e.method}(${String(field(p, 'item', 'type'))})`;
    default:
      return `#${e.seq} ${e.method}`;
  }
}

function short(id: unknown): string {
  return typeof id === 'string' ? id.slice(-6) : String(id);
}
