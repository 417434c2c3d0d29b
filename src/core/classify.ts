// Which failed turns a re-activation can fix. Only transient provider or transport
// failures are recovered; everything else needs a person.

export type FailureClass =
  | { kind: 'transient'; code: string; httpStatus: number | null }
  | { kind: 'usageLimit'; code: string; httpStatus: number | null }
  | { kind: 'permanent'; code: string; httpStatus: number | null };

/**
 * The one table of the failures a later attempt can get past, each with the kind of outage it
 * tells of (failures of one kind on one provider share their cause: outage.ts groups them).
 * `codexErrorInfo` strings:
 */
const TRANSIENT_CODES = new Map([
  ['internalServerError', 'server error'],
  ['serverOverloaded', 'server error'],
  ['rateLimitExceeded', 'rate limit'],
]);
/** Variants with an `httpStatusCode`: transient unless the status says the request itself is wrong. */
const TRANSIENT_VARIANTS = new Map([
  ['responseStreamDisconnected', 'connection'],
  ['responseTooManyFailedAttempts', 'server error'],
  ['httpConnectionFailed', 'connection'],
  ['responseStreamConnectionFailed', 'connection'],
]);
/**
 * `other` covers a dropped stream and `response.failed` (transient), but also a plain HTTP 400
 * (not): measured with 0.169.0, only the message tells them apart.
 */
const TRANSIENT_OTHER_MESSAGE =
  /stream disconnected|network error|connection (reset|closed|refused)|timed out|timeout|temporarily unavailable|overloaded|high demand/i;
const USAGE_CODES = new Set(['usageLimitExceeded']);

/** Short label and HTTP status of a `codexErrorInfo` value (a string or a one-key object). */
export function describeErrorInfo(info: unknown): { code: string; httpStatus: number | null } {
  if (typeof info === 'string') return { code: info, httpStatus: null };
  if (info && !Array.isArray(info)) {
    const [key] = Object.keys(info);
    if (key !== undefined) {
      const status = (info as Record<string, { httpStatusCode?: unknown } | null | undefined>)[key]?.httpStatusCode;
      return { code: key, httpStatus: typeof status === 'number' ? status : null };
    }
  }
  return { code: 'unknown', httpStatus: null };
}

export function classifyFailure(info: unknown, message: string): FailureClass {
  const { code, httpStatus } = describeErrorInfo(info);
  if (USAGE_CODES.has(code)) return { kind: 'usageLimit', code, httpStatus };
  if (TRANSIENT_CODES.has(code)) return { kind: 'transient', code, httpStatus };
  if (code === 'other') {
    return TRANSIENT_OTHER_MESSAGE.test(message)
      ? { kind: 'transient', code, httpStatus }
      : { kind: 'permanent', code, httpStatus };
  }
  if (TRANSIENT_VARIANTS.has(code)) {
    return isClientErrorStatus(httpStatus)
      ? { kind: 'permanent', code, httpStatus }
      : { kind: 'transient', code, httpStatus };
  }
  return { kind: 'permanent', code, httpStatus };
}

/** 4xx other than 408 (timeout) and 429 (too many requests): the request itself is refused. No status (0) is not. */
function isClientErrorStatus(status: number | null): boolean {
  const s = Number(status);
  return s >= 400 && s < 500 && s !== 408 && s !== 429;
}

/**
 * The kind of outage a failure's code tells of, from the table above: `other` (a dropped stream
 * when transient) is a connection's. Null: not a provider's failure (a usage limit, a refusal, a
 * rejected set), never grouped.
 */
export function outageKind(code: string): string | null {
  return TRANSIENT_CODES.get(code) ?? TRANSIENT_VARIANTS.get(code) ?? (code === 'other' ? 'connection' : null);
}
