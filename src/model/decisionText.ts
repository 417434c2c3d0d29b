// How the runner prints the engine's decisions: a readable line, or one JSON object per line.
import type { Decision } from './decision';
import { formatDuration } from './watch';

/** A decision as the runner's `--json` object: its time first, and a due time also in ISO form. */
export function decisionObject(
  decision: Decision,
  now: number,
): { ts: string; type: Decision['type'] } & Record<string, unknown> {
  const extra = 'dueAt' in decision ? { dueAtIso: new Date(decision.dueAt).toISOString() } : {};
  return { ts: new Date(now).toISOString(), ...decision, ...extra };
}

export function decisionLine(d: Decision, now: number): string {
  const ts = new Date(now).toISOString();
  const t = 'threadId' in d && d.threadId ? ` ${d.threadId}` : '';
  switch (d.type) {
    case 'armed':
      return `${ts} armed${t}: watching "${d.title}"`;
    case 'backoff':
      return `${ts} backoff${t}: ${d.error} on turn ${d.failedTurnId}; attempt ${d.attempt} in ${formatDuration(d.delayMs)} (at ${new Date(d.dueAt).toISOString()})`;
    case 'recovering':
      return `${ts} recovering${t}: re-activating the goal (attempt ${d.attempt}, failed turn ${d.failedTurnId})`;
    case 'recovered':
      return `${ts} recovered${t}: goal active again (attempt ${d.attempt}; ${d.how})`;
    case 'skipped':
      return `${ts} skipped${t}: ${d.reason}${d.detail ? ` (${d.detail})` : ''}`;
    case 'disarmed':
    case 'loaded':
    case 'elsewhere':
      return `${ts} ${d.type}${t}: ${d.reason}`;
    case 'rearmed':
      return `${ts} re-armed${t}: ${d.reason}`;
    case 'probe':
      return `${ts} probe${t}: tried first for its outage (${d.group}); ${d.others} other goal(s) wait for its verdict`;
    case 'released':
      return `${ts} released${t}: ${d.reason} (${d.by})`;
    case 'gave-up':
      return `${ts} gave up${t}: ${d.attempts} recoveries failed again (last failed turn ${d.failedTurnId}); needs attention`;
    case 'attention':
      return `${ts} needs attention${t}: ${d.reason}`;
    case 'connection':
      return `${ts} connection ${d.state}: ${d.detail}${connectionTries(d.state, d.tries)}`;
    case 'warning':
      return `${ts} warning${t}: ${d.message}`;
  }
}

/** " (try 3)" for a lost connection's later tries, " (back after 5 failed tries)" when it is made again. */
function connectionTries(state: string, tries: number | undefined): string {
  if (tries === undefined) return '';
  if (state === 'connected') return tries > 0 ? ` (back after ${tries} failed ${tries === 1 ? 'try' : 'tries'})` : '';
  return tries > 1 ? ` (try ${tries})` : '';
}
