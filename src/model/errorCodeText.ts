// Words for a `codexErrorInfo` label (and the engine's own codes): the tree, the tooltip, the runner.
/** Words for a `codexErrorInfo` label. */
export function describeErrorCode(code: string): string {
  switch (code) {
    case 'contextWindowExceeded':
      return 'context window full';
    case 'recoveredOnce':
      return 'stopped again after its recovery';
    case 'usageLimitExceeded':
      return 'usage limit';
    case 'unauthorized':
      return 'not signed in';
    case 'badRequest':
      return 'request rejected';
    case 'sessionBudgetExceeded':
      return 'session budget exceeded';
    case 'modelNotFound':
      return 'model not found';
    case 'internalServerError':
      return 'server error';
    case 'serverOverloaded':
      return 'server overloaded';
    case 'other':
      return 'error';
    default: // e.g. creditsDepleted, spendCapReached, unknownUsageLimit (src/core/rateLimits.ts)
      return code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
  }
}
