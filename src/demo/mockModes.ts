/**
 * What the mock model (`mockModel.ts`) can be told to answer, and what it records.
 *
 * Modes (switch at run time with `setMode`, for one thread with `setThreadMode`, or queue with `script`):
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
 *                       `answerSlowNow()` ends every slow answer under way at once.
 *   http500             HTTP 500 JSON `{"error":{"type":"server_error",…}}`.
 *   http400             HTTP 400 JSON `{"error":{"type":"invalid_request_error",…}}`.
 *   http429             Plain rate limit: HTTP 429 `rate_limit_exceeded`, header retry-after: 1.
 *   usageLimit          HTTP 429 `{"error":{"type":"usage_limit_reached","resets_at":<unix s>}}`,
 *                       resets_at = opts.resetsAt (unix seconds) or now + 60 s; with
 *                       opts.rateLimitHeaders, the provider's rate-limit headers as well
 *                       (`rateLimitHeaders()` below makes them), as ChatGPT's 429 carries them.
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

export interface MockModeOptions {
  /** usageLimit: unix seconds of the reset (default now + 60). */
  resetsAt?: number;
  /** usageLimit: headers the 429 carries besides its JSON body (none by default): `rateLimitHeaders()`. */
  rateLimitHeaders?: Readonly<Record<string, string>>;
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
  /** The request's `prompt_cache_key`: the thread's id. */
  threadId?: string;
}

export interface MockModel {
  /** Base URL for `base_url` in config.toml: http://127.0.0.1:PORT/v1 */
  readonly url: string;
  /** Number of POST /v1/responses received. */
  readonly requests: number;
  /** One record per POST /v1/responses, in arrival order. */
  readonly requestLog: MockRequestRecord[];
  /** Switch mode (clears any pending healthyThenComplete state). Options replace the previous ones. */
  setMode(mode: MockMode, opts?: MockModeOptions): void;
  /**
   * The mode (and options) of one thread's requests, over the script and the current mode (null:
   * back to them): told by the request's `prompt_cache_key`, the thread's id.
   */
  setThreadMode(threadId: string, mode: MockMode | null, opts?: MockModeOptions): void;
  /** Queue modes consumed one per request, before falling back to the current mode. */
  script(modes: MockMode[]): void;
  /** Scripted modes not consumed yet. */
  readonly scripted: number;
  clearScript(): void;
  /** Ends every `slow` answer under way now, with its message (as if its delay ran out); returns how many. */
  answerSlowNow(): number;
  /** Resolves once `requests` reaches n (or rejects after timeoutMs). */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** One rate-limit window as a provider's headers describe it. */
export interface HeaderWindow {
  usedPercent: number;
  /** The window's length (300: the 5-hour window; 10080: the weekly one). */
  windowMinutes?: number;
  /** Unix seconds of the reset. */
  resetAt?: number;
}

/**
 * The rate-limit headers ChatGPT's Codex backend sends, as the codex binary (0.169.0, 0.171.0)
 * parses them (`x-codex-{primary,secondary}-{used-percent,window-minutes,reset-at}`,
 * `x-codex-rate-limit-reached-type`, `x-codex-credits-*`).
 */
export function rateLimitHeaders(limits: {
  primary?: HeaderWindow;
  secondary?: HeaderWindow;
  reachedType?: string;
  credits?: { hasCredits: boolean; unlimited: boolean; balance?: string };
}): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const slot of ['primary', 'secondary'] as const) {
    const w = limits[slot];
    if (!w) continue;
    headers[`x-codex-${slot}-used-percent`] = String(w.usedPercent);
    if (w.windowMinutes !== undefined) headers[`x-codex-${slot}-window-minutes`] = String(w.windowMinutes);
    if (w.resetAt !== undefined) headers[`x-codex-${slot}-reset-at`] = String(w.resetAt);
  }
  if (limits.reachedType !== undefined) headers['x-codex-rate-limit-reached-type'] = limits.reachedType;
  if (limits.credits) {
    headers['x-codex-credits-has-credits'] = String(limits.credits.hasCredits);
    headers['x-codex-credits-unlimited'] = String(limits.credits.unlimited);
    if (limits.credits.balance !== undefined) headers['x-codex-credits-balance'] = limits.credits.balance;
  }
  return headers;
}
