/**
 * The project's own mock of the OpenAI Responses API, for driving a real
 * `codex app-server` (0.169.0) into every case the recovery engine cares about.
 *
 * Listens on 127.0.0.1:0. Point a CODEX_HOME at it with `makeCodexHome(mock.url)`
 * (see ./codexHome.ts). Answers:
 *   - `GET  /v1/models`    → `{"object":"list","data":[],"models":[]}` (Codex asks; empty is fine)
 *   - `POST /v1/responses` → depends on the current mode (below)
 *   - anything else        → 404
 *
 * The modes (switch at run time with `setMode`, or queue with `script`) and what they answer
 * are listed in `mockModes.ts`.
 */
import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  FUNCTION_CALL_MODES,
  type MockMode,
  type MockModel,
  type MockModeOptions,
  type MockRequestRecord,
} from './mockModes';
import {
  functionCallItem,
  lastInputType,
  messageItem,
  nextId,
  readBody,
  sendJson,
  sse,
  startSse,
  streamItem,
} from './responsesWire';

export async function startMockModel(): Promise<MockModel> {
  let mode: MockMode = 'healthy';
  let modeOpts: MockModeOptions = {};
  const threadModes = new Map<string, { mode: MockMode; opts: MockModeOptions }>();
  let queue: MockMode[] = [];
  let sinceModeSet = 0;
  let requests = 0;
  const requestLog: MockRequestRecord[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  /** Slow answers under way: each ends its answer now (`answerSlowNow`). */
  const slowAnswers = new Set<() => void>();

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
    // Codex sends the thread's id as the request's `prompt_cache_key` (0.169.0, 0.171.0).
    const key = (body as { prompt_cache_key?: unknown } | undefined)?.prompt_cache_key;
    const threadId = typeof key === 'string' ? key : undefined;
    const own = threadId !== undefined ? threadModes.get(threadId) : undefined;
    let effective: MockMode;
    let opts = modeOpts;
    let fromQueue = false;
    if (own) {
      effective = own.mode;
      opts = own.opts;
    } else if (queue.length > 0) {
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
      ...(threadId !== undefined ? { threadId } : {}),
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
        const stop = () => {
          clearInterval(tick);
          clearTimeout(done);
          timers.delete(done);
          slowAnswers.delete(finish);
        };
        const finish = () => {
          stop();
          if (!res.writableEnded && !res.destroyed) streamItem(res, messageItem(text), { id });
        };
        const done = later(delay, finish);
        slowAnswers.add(finish);
        res.on('close', stop);
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
        sendJson(
          res,
          429,
          {
            error: {
              type: 'usage_limit_reached',
              message: 'mock: You have hit your usage limit.',
              plan_type: 'plus',
              resets_at: opts.resetsAt ?? Math.floor(Date.now() / 1000) + 60,
            },
          },
          { ...opts.rateLimitHeaders },
        );
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
      modeOpts = o ?? {};
      sinceModeSet = 0;
    },
    setThreadMode(threadId: string, m: MockMode | null, o?: MockModeOptions) {
      if (m === null) threadModes.delete(threadId);
      else threadModes.set(threadId, { mode: m, opts: o ?? {} });
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
    answerSlowNow() {
      const now = [...slowAnswers];
      for (const finish of now) finish();
      return now.length;
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
