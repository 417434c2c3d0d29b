/**
 * The OpenAI Responses API's wire as the mock model speaks it: ids, usage, SSE events, output
 * items (a message, a function call), JSON error bodies, and reading a request.
 */
import type * as http from 'node:http';

let idCounter = 0;
export function nextId(prefix: string): string {
  idCounter += 1;
  return `${prefix}_mock_${Date.now().toString(36)}_${idCounter}`;
}

const usage = () => ({
  input_tokens: 10,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 5,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 15,
});

export function sse(event: Record<string, unknown>): string {
  return `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`;
}

export function messageItem(text: string) {
  return {
    type: 'message',
    role: 'assistant',
    id: nextId('msg'),
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [] }],
  };
}

export function functionCallItem(name: string, args: unknown) {
  return {
    type: 'function_call',
    id: nextId('fc'),
    call_id: nextId('call'),
    name,
    arguments: JSON.stringify(args),
    status: 'completed',
  };
}

export function lastInputType(body: unknown): string | undefined {
  const input = (body as { input?: unknown } | null | undefined)?.input;
  const last: unknown = Array.isArray(input) ? input[input.length - 1] : undefined;
  if (!last || typeof last !== 'object') return undefined;
  const type = (last as { type?: unknown }).type;
  if (typeof type === 'string') return type;
  // Items without a type are messages in the Responses API.
  return 'role' in last ? 'message' : undefined;
}

export async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function sendJson(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

/** Starts an SSE answer with `response.created` (`flushed`: called once written); returns its id. */
export function startResponse(res: http.ServerResponse, flushed?: () => void): string {
  const id = nextId('resp');
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.write(sse({ type: 'response.created', response: { id, status: 'in_progress' } }), flushed);
  return id;
}

/** Stream one complete response holding `item` (in the started response `id`, else a new one). */
export function streamItem(res: http.ServerResponse, item: Record<string, unknown>, id = startResponse(res)): void {
  res.write(sse({ type: 'response.output_item.added', output_index: 0, item }));
  res.write(sse({ type: 'response.output_item.done', output_index: 0, item }));
  res.end(sse({ type: 'response.completed', response: { id, status: 'completed', output: [item], usage: usage() } }));
}
