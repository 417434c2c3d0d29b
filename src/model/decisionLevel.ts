// How much a decision matters to an operator, as a syslog severity: the runner's lines carry it
// (src/runner/lines.ts: `level` under --json, the journal's priority) and the OpenTelemetry export
// maps it to a log record's severity (src/telemetry/otlp.ts). One mapping for both.
import type { Decision } from './decision';
import { asksForPerson } from './notice';

/** The syslog severities the runner uses (RFC 5424 names, as journald shows them). */
export type Level = 'error' | 'warning' | 'notice' | 'info' | 'debug';

/**
 * A goal given up on is an error (its recovery failed for good), one that needs a person or a
 * warning is a warning, what the engine did to a goal a notice, the rest (a recovery held for
 * later, a connection made) info. A daemon that goes away is one warning (the first failed try),
 * its further tries debug, and its return a notice: an operator's `-p warning` sees it once.
 */
export function decisionLevel(d: Decision): Level {
  if (d.type === 'gave-up') return 'error';
  if (asksForPerson(d) || d.type === 'warning') return 'warning';
  if (d.type === 'connection') {
    if (d.state === 'disconnected' || d.state === 'error') return (d.tries ?? 1) > 1 ? 'debug' : 'warning';
    return (d.tries ?? 0) > 0 ? 'notice' : 'info';
  }
  return d.type === 'skipped' || d.type === 'loaded' ? 'info' : 'notice';
}
