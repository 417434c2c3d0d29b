/**
 * The project's own mock of the OpenAI Responses API, for driving a real
 * `codex app-server` (0.169.0) into every case the recovery engine cares about.
 *
 * Listens on 127.0.0.1:0. Point a CODEX_HOME at it with `makeCodexHome(mock.url)`
 * (see ./codex.ts). Answers:
 *   - `GET  /v1/models`    → `{"object":"list","data":[],"models":[]}` (Codex asks; empty is fine)
 *   - `POST /v1/responses` → depends on the current mode (below)
 *   - anything else        → 404
 *
 * Modes (switch at run time with `setMode`, or queue with `script`):
 *   healthy             200 SSE: one assistant `message` ("ok"), response.completed with usage.
 *                       NB: on an active goal Codex then starts continuation turns back to back,
 *                       each of which asks the model again: in `healthy` a goal spins until the
 *                       test switches mode (to goalComplete / goalBlocked) or pauses the goal.
 *   healthyThenComplete The first request after the mode is set answers like `healthy`; every
 *                       later one answers like `goalComplete`. A goal set active in this mode
 *                       runs one healthy turn, then its continuation turn completes the goal.
 *   goalComplete        200 SSE: function_call `update_goal` {"status":"complete"}.
 *   goalBlocked         200 SSE: function_call `update_goal` {"status":"blocked"} (model-set block:
 *                       the turn completes without error).
 *   approval            200 SSE: function_call `exec_command` {"cmd":"touch <opts.file>"}; with
 *                       approvalPolicy "untrusted" the server asks the client for approval.
 *   slow                Like healthy, but sends response.created at once and the message only
 *                       after opts.delayMs (default 10 000 ms), emitting a `response.in_progress`
 *                       event every 500 ms so Codex's stream idle timeout never fires. Keeps a turn
 *                       running (e.g. to test turn/interrupt). Aborts quietly if Codex hangs up.
 *   http500             HTTP 500 JSON `{"error":{"type":"server_error",…}}`.
 *   http400             HTTP 400 JSON `{"error":{"type":"invalid_request_error",…}}`.
 *   http429             Plain rate limit: HTTP 429 `rate_limit_exceeded`, header retry-after: 1.
 *   usageLimit          HTTP 429 `{"error":{"type":"usage_limit_reached","resets_at":<unix s>}}`,
 *                       resets_at = opts.resetsAt (unix seconds) or now + 60 s.
 *   dropStream          200 + `response.created`, then the socket is destroyed (no completion).
 *   responseFailed      200 + `response.created`, then `response.failed` with
 *                       error {code:"server_error"}.
 *   contextOverflow     200 + `response.created`, then `response.failed` with
 *                       error {code:"context_length_exceeded"}.
 *
 * Whatever the mode: when the request's last input item is a `function_call_output` (Codex
 * reporting a tool result back in the same turn) and the mode is one that answers with a
 * function call (goalComplete, goalBlocked, approval, healthyThenComplete), the answer is a
 * plain assistant message, or the turn would loop on the tool. Failure modes keep failing.
 */
import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type MockMode =
  | 'healthy'
  | 'healthyThenComplete'
  | 'goalComplete'
  | 'goalBlocked'
  | 'approval'
  | 'slow'
  | 'http500'
  | 'http400'
  | 'http429'
  | 'usageLimit'
  | 'dropStream'
  | 'responseFailed'
  | 'contextOverflow';

export const ALL_MOCK_MODES: readonly MockMode[] = [
  'healthy',
  'healthyThenComplete',
  'goalComplete',
  'goalBlocked',
  'approval',
  'slow',
  'http500',
  'http400',
  'http429',
  'usageLimit',
  'dropStream',
  'responseFailed',
  'contextOverflow',
];

export interface MockModeOptions {
  /** usageLimit: unix seconds of the reset (default now + 60). */
  resetsAt?: number;
  /** approval: file the exec_command touches (default /tmp/codex-mock-approval). */
  file?: string;
  /** slow: milliseconds before the answer (default 10 000). */
  delayMs?: number;
  /** healthy/slow: assistant text (default "ok"). */
  text?: string;
}

export interface MockRequestRecord {
  /** Date.now() when the request arrived. */
  at: number;
  /** The mode in effect for this request (scripted or current). */
  mode: MockMode;
  /** What was actually sent: a mode name, or "message" for the function_call_output rule. */
  answered: string;
  /** `type` of the last item of the request's `input` array, if any. */
  lastInputType?: string;
}

export interface MockModel {
  /** Base URL for `base_url` in config.toml: http://127.0.0.1:PORT/v1 */
  readonly url: string;
  readonly port: number;
  /** Current fallback mode. */
  readonly mode: MockMode;
  /** Number of POST /v1/responses received. */
  readonly requests: number;
  /** One record per POST /v1/responses, in arrival order. */
  readonly requestLog: MockRequestRecord[];
  /** Switch mode (clears any pending healthyThenComplete state). Options replace the previous ones. */
  setMode(mode: MockMode, opts?: MockModeOptions): void;
  /** Queue modes consumed one per request, before falling back to the current mode. */
  script(modes: MockMode[]): void;
  /** Scripted modes not consumed yet. */
  readonly scripted: number;
  /** Drop the scripted modes not consumed yet. */
  clearScript(): void;
  /** Resolves once `requests` reaches n (or rejects after timeoutMs). */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const FUNCTION_CALL_MODES: ReadonlySet<MockMode> = new Set<MockMode>([
  'goalComplete',
  'goalBlocked',
  'approval',
  'healthyThenComplete',
]);

let idCounter = 0;
function nextId(prefix: string): string {
  idCounter += 1;
  return `${prefix}_mock_${Date.now().toString(36)}_${idCounter}`;
}

function usage() {
  return {
    input_tokens: 10,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 15,
  };
}

function sse(event: Record<string, unknown>): string {
  return `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`;
}

function messageItem(text: string) {
  return {
    type: 'message',
    role: 'assistant',
    id: nextId('msg'),
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [] }],
  };
}

function functionCallItem(name: string, args: unknown) {
  return {
    type: 'function_call',
    id: nextId('fc'),
    call_id: nextId('call'),
    name,
    arguments: JSON.stringify(args),
    status: 'completed',
  };
}

function lastInputType(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const input = (body as { input?: unknown }).input;
  if (!Array.isArray(input) || input.length === 0) return undefined;
  const last: unknown = input[input.length - 1];
  if (last && typeof last === 'object' && typeof (last as { type?: unknown }).type === 'string') {
    return (last as { type: string }).type;
  }
  // Items without a type are messages in the Responses API.
  if (last && typeof last === 'object' && 'role' in last) return 'message';
  return undefined;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

function startSse(res: http.ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
}

/** Stream one complete response holding `item`. */
function streamItem(res: http.ServerResponse, item: Record<string, unknown>, alreadyStarted?: { id: string }): void {
  const id = alreadyStarted?.id ?? nextId('resp');
  if (!alreadyStarted) {
    startSse(res);
    res.write(sse({ type: 'response.created', response: { id, status: 'in_progress' } }));
  }
  res.write(sse({ type: 'response.output_item.added', output_index: 0, item }));
  res.write(sse({ type: 'response.output_item.done', output_index: 0, item }));
  res.end(
    sse({
      type: 'response.completed',
      response: { id, status: 'completed', output: [item], usage: usage() },
    }),
  );
}

export async function startMockModel(): Promise<MockModel> {
  let mode: MockMode = 'healthy';
  let opts: MockModeOptions = {};
  let queue: MockMode[] = [];
  let sinceModeSet = 0;
  let requests = 0;
  const requestLog: MockRequestRecord[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const later = (ms: number, fn: () => void): NodeJS.Timeout => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
    return t;
  };

  async function handleResponses(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const raw = await readBody(req);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    const last = lastInputType(body);
    let effective: MockMode;
    let fromQueue = false;
    if (queue.length > 0) {
      effective = queue.shift() as MockMode;
      fromQueue = true;
    } else {
      effective = mode;
      sinceModeSet += 1;
    }
    let answered: string = effective;
    if (last === 'function_call_output' && FUNCTION_CALL_MODES.has(effective)) answered = 'message';
    else if (effective === 'healthyThenComplete')
      answered = fromQueue || sinceModeSet <= 1 ? 'healthy' : 'goalComplete';
    requests += 1;
    requestLog.push({
      at: Date.now(),
      mode: effective,
      answered,
      ...(last !== undefined ? { lastInputType: last } : {}),
    });
    for (const w of waiters.slice()) {
      if (requests >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
    const text = opts.text ?? 'ok';
    switch (answered) {
      case 'message':
      case 'healthy':
        streamItem(res, messageItem(answered === 'message' ? 'done' : text));
        return;
      case 'goalComplete':
        streamItem(res, functionCallItem('update_goal', { status: 'complete' }));
        return;
      case 'goalBlocked':
        streamItem(res, functionCallItem('update_goal', { status: 'blocked' }));
        return;
      case 'approval':
        streamItem(res, functionCallItem('exec_command', { cmd: `touch ${opts.file ?? '/tmp/codex-mock-approval'}` }));
        return;
      case 'slow': {
        const id = nextId('resp');
        startSse(res);
        res.write(sse({ type: 'response.created', response: { id, status: 'in_progress' } }));
        const delay = opts.delayMs ?? 10_000;
        const tick = setInterval(() => {
          if (!res.writableEnded && !res.destroyed)
            res.write(sse({ type: 'response.in_progress', response: { id, status: 'in_progress' } }));
        }, 500);
        const done = later(delay, () => {
          clearInterval(tick);
          if (!res.writableEnded && !res.destroyed) streamItem(res, messageItem(text), { id });
        });
        res.on('close', () => {
          clearInterval(tick);
          clearTimeout(done);
          timers.delete(done);
        });
        return;
      }
      case 'http500':
        sendJson(res, 500, {
          error: { type: 'server_error', code: 'server_error', message: 'mock: internal server error' },
        });
        return;
      case 'http400':
        sendJson(res, 400, {
          error: { type: 'invalid_request_error', code: 'invalid_request', message: 'mock: bad request' },
        });
        return;
      case 'http429':
        sendJson(
          res,
          429,
          { error: { type: 'rate_limit_exceeded', code: 'rate_limit_exceeded', message: 'mock: rate limit reached' } },
          { 'retry-after': '1' },
        );
        return;
      case 'usageLimit':
        sendJson(res, 429, {
          error: {
            type: 'usage_limit_reached',
            message: 'mock: You have hit your usage limit.',
            plan_type: 'plus',
            resets_at: opts.resetsAt ?? Math.floor(Date.now() / 1000) + 60,
          },
        });
        return;
      case 'dropStream': {
        startSse(res);
        res.write(sse({ type: 'response.created', response: { id: nextId('resp'), status: 'in_progress' } }), () => {
          later(20, () => res.socket?.destroy());
        });
        return;
      }
      case 'responseFailed':
      case 'contextOverflow': {
        const id = nextId('resp');
        startSse(res);
        res.write(sse({ type: 'response.created', response: { id, status: 'in_progress' } }));
        const error =
          answered === 'contextOverflow'
            ? { code: 'context_length_exceeded', message: 'mock: Your input exceeds the context window of this model.' }
            : { code: 'server_error', message: 'mock: The server had an error while processing your request.' };
        res.end(sse({ type: 'response.failed', response: { id, status: 'failed', error } }));
        return;
      }
      default:
        sendJson(res, 500, { error: { message: `mock: unknown mode ${answered}` } });
    }
  }

  const server = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && (url === '/v1/models' || url === '/models')) {
      sendJson(res, 200, { object: 'list', data: [], models: [] });
      return;
    }
    if (req.method === 'POST' && (url === '/v1/responses' || url === '/responses')) {
      handleResponses(req, res).catch((err: unknown) => {
        if (!res.headersSent) sendJson(res, 500, { error: { message: `mock: ${String(err)}` } });
        else res.destroy();
      });
      return;
    }
    req.resume();
    sendJson(res, 404, { error: { message: `mock: no route ${req.method} ${url}` } });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  const model: MockModel = {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    get mode() {
      return mode;
    },
    get requests() {
      return requests;
    },
    requestLog,
    setMode(m: MockMode, o?: MockModeOptions) {
      mode = m;
      opts = o ?? {};
      sinceModeSet = 0;
    },
    script(modes: MockMode[]) {
      queue.push(...modes);
    },
    get scripted() {
      return queue.length;
    },
    clearScript() {
      queue = [];
    },
    waitForRequests(n: number, timeoutMs = 30_000) {
      if (requests >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const w = {
          n,
          resolve: () => {
            clearTimeout(t);
            resolve();
          },
        };
        const t = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`mock: timed out waiting for ${n} requests (have ${requests})`));
        }, timeoutMs);
        waiters.push(w);
      });
    },
    close() {
      queue = [];
      for (const t of timers) clearTimeout(t);
      timers.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
      });
    },
  };
  return model;
}
