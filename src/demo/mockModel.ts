/**
 * The project's own mock of the OpenAI Responses API on 127.0.0.1, for driving a real
 * `codex app-server` (0.169.0) into every case the recovery engine cares about. Point a
 * CODEX_HOME at it with `makeCodexHome(mock.url)`. `GET /v1/models` answers an empty list
 * (Codex asks; empty is fine); `POST /v1/responses` answers by mode (`mockModes.ts`).
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseJson } from '../rollout/markerLines';
import type { MockMode, MockModel, MockModeOptions, MockRequestRecord } from './mockModes';
import {
  functionCallItem,
  lastInputType,
  messageItem,
  readBody,
  sendJson,
  sse,
  startResponse,
  streamItem,
} from './responsesWire';

/** Modes answering with a function call: after its output they answer a plain message (see mockModes.ts). */
const FUNCTION_CALL_MODES = new Set<string>(['goalComplete', 'goalBlocked', 'approval', 'healthyThenComplete']);

/** The JSON error bodies of the failing HTTP modes: status, error type, code and message. */
const HTTP_ERRORS = new Map<string, [number, string, string, string]>([
  ['http500', [500, 'server_error', 'server_error', 'mock: internal server error']],
  ['http400', [400, 'invalid_request_error', 'invalid_request', 'mock: bad request']],
  ['http429', [429, 'rate_limit_exceeded', 'rate_limit_exceeded', 'mock: rate limit reached']],
]);

export async function startMockModel(): Promise<MockModel> {
  let mode: MockMode = 'healthy';
  let modeOpts: MockModeOptions = {};
  const threadModes = new Map<string, { mode: MockMode; opts: MockModeOptions }>();
  let queue: MockMode[] = [];
  let sinceModeSet = 0;
  const requestLog: MockRequestRecord[] = [];
  /** `waitForRequests` calls under way: each resolves itself once enough requests came. */
  const waiters = new Set<() => void>();
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
    const body = parseJson(await readBody(req));
    const last = lastInputType(body);
    // Codex sends the thread's id as the request's `prompt_cache_key` (0.169.0, 0.171.0).
    const key = (body as { prompt_cache_key?: unknown } | undefined)?.prompt_cache_key;
    const threadId = typeof key === 'string' ? key : undefined;
    const own = threadId !== undefined ? threadModes.get(threadId) : undefined;
    const fromQueue = !own && queue.length > 0;
    const effective = own?.mode ?? (fromQueue ? queue.shift() : undefined) ?? mode;
    const opts = own?.opts ?? modeOpts;
    if (!own && !fromQueue) sinceModeSet += 1;
    let answered: string = effective;
    if (last === 'function_call_output' && FUNCTION_CALL_MODES.has(effective)) answered = 'message';
    else if (effective === 'healthyThenComplete')
      answered = fromQueue || sinceModeSet <= 1 ? 'healthy' : 'goalComplete';
    requestLog.push({
      at: Date.now(),
      mode: effective,
      answered,
      ...(last !== undefined ? { lastInputType: last } : {}),
      ...(threadId !== undefined ? { threadId } : {}),
    });
    for (const w of [...waiters]) w();
    const text = opts.text ?? 'ok';
    const httpError = HTTP_ERRORS.get(answered);
    if (httpError) {
      const [status, type, code, message] = httpError;
      sendJson(res, status, { error: { type, code, message } }, status === 429 ? { 'retry-after': '1' } : {});
      return;
    }
    switch (answered) {
      case 'message':
      case 'healthy':
        streamItem(res, messageItem(answered === 'message' ? 'done' : text));
        return;
      case 'goalComplete':
      case 'goalBlocked':
        streamItem(
          res,
          functionCallItem('update_goal', { status: answered === 'goalComplete' ? 'complete' : 'blocked' }),
        );
        return;
      case 'approval':
        streamItem(res, functionCallItem('exec_command', { cmd: `touch ${opts.file ?? '/tmp/codex-mock-approval'}` }));
        return;
      case 'slow': {
        const id = startResponse(res);
        const open = () => !res.writableEnded && !res.destroyed;
        const tick = setInterval(() => {
          if (open()) res.write(sse({ type: 'response.in_progress', response: { id, status: 'in_progress' } }));
        }, 500);
        const stop = () => {
          clearInterval(tick);
          clearTimeout(done);
          timers.delete(done);
          slowAnswers.delete(finish);
        };
        const finish = () => {
          stop();
          if (open()) streamItem(res, messageItem(text), id);
        };
        const done = later(opts.delayMs ?? 10_000, finish);
        slowAnswers.add(finish);
        res.on('close', stop);
        return;
      }
      case 'usageLimit': {
        const resets_at = opts.resetsAt ?? Math.floor(Date.now() / 1000) + 60;
        const error = { type: 'usage_limit_reached', message: 'mock: You have hit your usage limit.' };
        sendJson(res, 429, { error: { ...error, plan_type: 'plus', resets_at } }, { ...opts.rateLimitHeaders });
        return;
      }
      case 'dropStream':
        startResponse(res, () => later(20, () => res.socket?.destroy()));
        return;
      case 'responseFailed':
      case 'contextOverflow': {
        const id = startResponse(res);
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    get requests() {
      return requestLog.length;
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
      if (requestLog.length >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`mock: timed out waiting for ${n} requests (have ${requestLog.length})`));
        }, timeoutMs);
        const check = () => {
          if (requestLog.length < n) return;
          waiters.delete(check);
          clearTimeout(t);
          resolve();
        };
        waiters.add(check);
      });
    },
    close() {
      queue = [];
      for (const t of timers) clearTimeout(t);
      timers.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
