// What `codex-goal-recovery status` reports: ONE shape whether it comes from the engine that
// leads (its snapshot, over the election channel) or, when no engine runs, from the state file.
// `status --json` prints it as one object; the text form is made from it. Documented in
// docs/runner.md ("status"). The keys `paused` and `watches` are those `status --json` always had: outside
// checks read them, so they keep their meaning (a superset, never a rename).
import { budgetUse } from '../model/budget';
import type { EngineSnapshot, ConnectionState } from '../model/snapshot';
import { type PersistedState, type Watch } from '../model/watch';
import { needsPerson } from '../model/queries';
import { describeState } from '../model/stateText';
import { EXIT, leaderText, type LeaderInfo } from './control';
import type { DaemonPresence } from '../protocol/daemonProbe';

/** The policy in force in the engine that leads (the snapshot's `policy`). */
export type StatusPolicy = NonNullable<EngineSnapshot['policy']>;

export interface StatusReport {
  /** Where this came from: the engine that leads, or the state file (no engine runs). */
  source: 'engine' | 'stateFile';
  /** Who leads (its welcome), or null from the state file. */
  leader: LeaderInfo | null;
  /** The daemon: the engine's target, or the one asked about when reading the file. */
  target: string;
  /** The state file read (source "stateFile"), else null: the engine keeps its own store. */
  stateFile: string | null;
  /** Why the state file was read: no engine runs, or none can be reached (null from an engine). */
  note: string | null;
  /** The leader's effective policy; null from the state file (it does not record one) or an older leader. */
  policy: StatusPolicy | null;
  /** Consecutive failed recoveries before giving up, in the leader; null from the state file. */
  maxAttempts: number | null;
  /** Automatic recoveries per goal in a rolling 24 h, in the leader; null from the state file or an older leader. */
  recoveryBudget: number | null;
  /** Auto-recovery paused for every thread (since `pausedAt`). */
  paused: boolean;
  pausedAt: number | null;
  /** The engine's connection to the daemon; null from the state file. */
  connection: ConnectionState | null;
  /** Whether the daemon runs, as `status` found it itself (a connection opened and closed): exit 4 when it does not. */
  daemon: DaemonPresence;
  /** The soonest time the engine will act; null when nothing is due, or from the state file. */
  nextDueAt: number | null;
  /** Threads whose goal waits for a person (`needsPerson`, as the view's badge counts them): status exits 1. */
  attention: string[];
  /** Every watched thread with its explicit state, as the engine keeps it. */
  watches: Watch[];
}

function attentionOf(watches: Watch[]): string[] {
  return watches.filter(needsPerson).map((w) => w.threadId);
}

/** The report from the snapshot the leading engine pushed. */
export function reportFromSnapshot(snapshot: EngineSnapshot, leader: LeaderInfo, daemon: DaemonPresence): StatusReport {
  return {
    source: 'engine',
    leader,
    target: snapshot.target,
    stateFile: null,
    note: null,
    policy: snapshot.policy ?? null,
    maxAttempts: snapshot.policy?.maxAttempts ?? snapshot.maxAttempts,
    recoveryBudget: snapshot.policy?.recoveryBudget ?? null,
    paused: snapshot.pausedAt !== null,
    pausedAt: snapshot.pausedAt,
    connection: snapshot.connection,
    daemon,
    nextDueAt: snapshot.nextDueAt,
    attention: attentionOf(snapshot.watches),
    watches: snapshot.watches,
  };
}

/** The report from the state file (`state` null: there is none yet), when no engine runs. */
export function reportFromStateFile(
  state: PersistedState | null,
  stateFile: string,
  target: string,
  note: string,
  daemon: DaemonPresence,
): StatusReport {
  const watches = state ? Object.values(state.watches) : [];
  const pausedAt = state?.pausedAt ?? null;
  return {
    source: 'stateFile',
    leader: null,
    target,
    stateFile,
    note,
    policy: null,
    maxAttempts: null,
    recoveryBudget: null,
    paused: pausedAt !== null,
    pausedAt,
    connection: null,
    daemon,
    nextDueAt: null,
    attention: attentionOf(watches),
    watches,
  };
}

/** 4 when the daemon is not running; else 1 when a goal waits for a person (`needsPerson`), else 0. */
export function statusExitCode(report: StatusReport): number {
  if (report.daemon.kind === 'stopped') return EXIT.daemonStopped;
  return report.attention.length > 0 ? EXIT.attention : EXIT.ok;
}

/** The report in words, for a person (one line per thread, as `status` always printed). */
export function statusText(report: StatusReport, now: number): string {
  const lines: string[] = [];
  if (report.source === 'engine' && report.leader) {
    const connection = report.connection ? ` · ${connectionText(report.connection)}` : '';
    lines.push(`engine: ${leaderText(report.leader)}, watching ${report.target}${connection}`);
    if (report.policy) lines.push(`policy: ${policyText(report.policy)}`);
  } else {
    lines.push(`${report.note ?? 'no engine runs'}: showing the state file ${report.stateFile ?? ''} as last saved`);
  }
  lines.push(...daemonLines(report));
  lines.push(
    report.pausedAt !== null
      ? `auto-recovery paused since ${new Date(report.pausedAt).toISOString()}`
      : 'auto-recovery on',
  );
  if (report.watches.length === 0) lines.push('no watched threads');
  for (const w of report.watches) {
    const failures = w.failures > 0 ? ` · ${w.failures} consecutive failure${w.failures === 1 ? '' : 's'}` : '';
    const recovered = w.recovered.length > 0 ? ` · recovered ${w.recovered.length}×` : '';
    const budget = budgetText(w, now, report.recoveryBudget);
    lines.push(`${w.threadId}  ${stateText(w, now, report.maxAttempts)}${failures}${recovered}${budget}  "${w.title}"`);
  }
  return `${lines.join('\n')}\n`;
}

/** "daemon: not running (…)" when it is not known to run; nothing when it runs. */
export function daemonLines(report: StatusReport): string[] {
  const d = report.daemon;
  return d.kind === 'running' ? [] : [`daemon: ${d.kind === 'stopped' ? 'not running' : 'cannot tell'} (${d.detail})`];
}

/**
 * A thread's state in words, attempts out of the leader's maxAttempts. From the state file no
 * policy is known (the file does not record the one the runner ran with): the attempt alone.
 */
function stateText(w: Watch, now: number, maxAttempts: number | null): string {
  if (maxAttempts !== null) return describeState(w, now, maxAttempts);
  const text = describeState(w, now, 0);
  return w.state.kind === 'backoff'
    ? text.replace(` · attempt ${w.state.attempt}/0`, ` · attempt ${w.state.attempt}`)
    : text;
}

/** " · budget 3/12 used" for a goal recovered automatically in the last 24 h (the limit, when known). */
function budgetText(w: Watch, now: number, limit: number | null): string {
  const { used } = budgetUse(w, now);
  if (used === 0) return '';
  const of = limit ?? (w.state.kind === 'budgetSpent' ? w.state.limit : null);
  return of !== null ? ` · budget ${used}/${of} used` : ` · ${used} automatic recoveries in 24 h`;
}

/** How each connection state but `connected` reads, with its detail (a new kind does not compile without one). */
const NOT_CONNECTED: Record<Exclude<ConnectionState['kind'], 'connected'>, string> = {
  connecting: 'connecting',
  disconnected: 'disconnected',
  unresponsive: 'no answer',
};

function connectionText(c: ConnectionState): string {
  if (c.kind === 'connected')
    return `connected${c.codexVersion ? ` (codex ${c.codexVersion})` : ''}${c.versionWarning ? ` · ${c.versionWarning}` : ''}`;
  return `${NOT_CONNECTED[c.kind]} (${c.detail})`;
}

function seconds(ms: number): string {
  const s = ms / 1000;
  return s >= 60 && s % 60 === 0 ? `${s / 60} min` : `${s} s`;
}

/** The policy in one line: backoff, attempts, what is armed and recovered, the resync. */
export function policyText(p: StatusPolicy): string {
  return [
    `backoff ${seconds(p.baseDelayMs)} to ${seconds(p.maxDelayMs)}`,
    `gives up after ${p.maxAttempts} failed recoveries`,
    ...(p.recoveryBudget !== undefined ? [`at most ${p.recoveryBudget} automatic recoveries per goal in 24 h`] : []),
    p.autoArm ? 'arms active goals by itself' : 'arms only goals you arm (autoArm off)',
    p.recoverUsageLimited ? 'resumes usage-limited goals at their reset' : 'leaves usage-limited goals alone',
    `resync every ${seconds(p.resyncMs)}`,
  ].join(' · ');
}
