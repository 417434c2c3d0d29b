/**
 * What a frame from the Codex app-server must be (the shape check and the size cap): a JSON-RPC
 * 2.0 shaped object WITHOUT the `jsonrpc` field, one per line on stdio (`lineFraming.ts`) or per
 * WebSocket frame (`webSocketFraming.ts`). Readers never throw and never stop on malformed input:
 * each bad frame fires `onError` with a short excerpt, bumps `malformedCount`, and reading goes on.
 */
import type { Message } from 'vscode-jsonrpc/node';
import { isRecord } from '../model/watch';

/** Default cap for one line / one frame: 64 MiB. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export type ValidationResult = { ok: true; message: Message } | { ok: false; reason: string };

/**
 * Checks that a parsed JSON value is a request, a response or a notification, and returns a copy
 * with `jsonrpc: "2.0"` added. Extra top-level fields (e.g. `emittedAtMs`) are kept.
 */
export function validateMessage(value: unknown): ValidationResult {
  if (!isRecord(value)) {
    const kind = value === null || Array.isArray(value) ? describeType(value) : `a ${typeof value}`;
    return { ok: false, reason: `JSON-RPC message must be an object, got ${kind}` };
  }
  const hasId = Object.prototype.hasOwnProperty.call(value, 'id') && value.id !== undefined;
  const id = value.id;
  const params = value.params;
  if (params !== undefined && params !== null && typeof params !== 'object') {
    return { ok: false, reason: `"params" must be an object or array, got ${typeof params}` };
  }
  if (Object.prototype.hasOwnProperty.call(value, 'method')) {
    if (typeof value.method !== 'string' || value.method.length === 0) {
      return { ok: false, reason: `"method" must be a non-empty string, got ${describeType(value.method)}` };
    }
    if (hasId && typeof id !== 'string' && typeof id !== 'number') {
      return { ok: false, reason: `request "id" must be a string or number, got ${describeType(id)}` };
    }
    return { ok: true, message: { ...value, jsonrpc: '2.0' } };
  }
  // No method: must be a response.
  if (!hasId) {
    return { ok: false, reason: 'object is neither a request, a response nor a notification (no "method", no "id")' };
  }
  if (typeof id !== 'string' && typeof id !== 'number' && id !== null) {
    return { ok: false, reason: `response "id" must be a string, number or null, got ${describeType(id)}` };
  }
  const hasResult = Object.prototype.hasOwnProperty.call(value, 'result') && value.result !== undefined;
  const hasError = value.error !== undefined && value.error !== null;
  if (!hasResult && !hasError) return { ok: false, reason: 'response has neither "result" nor "error"' };
  const err = value.error;
  if (hasError && (!isRecord(err) || typeof err.code !== 'number' || typeof err.message !== 'string')) {
    return { ok: false, reason: 'response "error" must be an object with a numeric "code" and a string "message"' };
  }
  return { ok: true, message: { ...value, jsonrpc: '2.0' } };
}

function describeType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v;
}
