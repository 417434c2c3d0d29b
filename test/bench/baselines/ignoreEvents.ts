// A daemon listener that ignores every event: the polling baseline learns only by asking.
import type { DaemonListener } from '../../../src/protocol/daemon';

export const IGNORE_EVENTS: DaemonListener = {
  goalUpdated: () => undefined,
  goalCleared: () => undefined,
  threadStatus: () => undefined,
  threadStarted: () => undefined,
  threadClosed: () => undefined,
  turnStarted: () => undefined,
  turnCompleted: () => undefined,
  error: () => undefined,
  serverRequest: () => undefined,
  serverRequestResolved: () => undefined,
  rateLimitsUpdated: () => undefined,
  responseCompleted: () => undefined,
  protocolProblem: () => undefined,
  closed: () => undefined,
};
