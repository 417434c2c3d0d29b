// Words for a `codexErrorInfo` label (and the engine's own codes): the tree, the tooltip, the runner.
const WORDS: Readonly<Record<string, string>> = {
  contextWindowExceeded: 'context window full',
  recoveredOnce: 'stopped again after its recovery',
  usageLimitExceeded: 'usage limit',
  unauthorized: 'not signed in',
  badRequest: 'request rejected',
  sessionBudgetExceeded: 'session budget exceeded',
  modelNotFound: 'model not found',
  internalServerError: 'server error',
  serverOverloaded: 'server overloaded',
  other: 'error',
};

export function describeErrorCode(code: string): string {
  if (Object.hasOwn(WORDS, code)) return WORDS[code];
  // Any other (creditsDepleted, spendCapReached, unknownUsageLimit: src/core/rateLimits.ts) in words.
  return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}
