// A tree row's description: the state first, and short enough for a 300 px sidebar ("retry 0:42",
// "paused · retry 14:05", "needs attention"). The details (error, times, attempts, what a person
// can do) are in the row's tooltip (presentation.ts). The runner keeps its longer words
// (describeState in src/model/stateText.ts).
import * as vscode from 'vscode';
import type { EngineSnapshot } from '../model/snapshot';
import { formatDuration, type Watch, type WatchState, type WatchStateKind } from '../model/watch';
import { dueAt, isScheduled, needsPerson, waitsForLoad } from '../model/queries';
import { clockTime } from './locale';

/** What holds a scheduled recovery back: the user's global pause, the daemon away, or a silent engine. */
export type Held = 'paused' | 'noDaemon' | 'silentEngine' | null;

export function heldBy(w: Watch, snap: Pick<EngineSnapshot, 'pausedAt' | 'connection'>): Held {
  if (!isScheduled(w.state)) return null;
  if (snap.pausedAt !== null) return 'paused';
  if (snap.connection.kind === 'unresponsive') return 'silentEngine';
  return snap.connection.kind === 'connected' ? null : 'noDaemon';
}

/**
 * The short description (`probeFor`: how many goals wait for this one as their outage's probe).
 * A held recovery says what holds it first and when it was due as a time
 * of day (nothing counts down while it is held: the status bar ticks only for a live countdown).
 */
export function rowDescription(w: Watch, held: Held, now: number, probeFor = 0): string {
  const text = stateText(w, held, now);
  // The probe of an outage: the goals that wait for its verdict say so too.
  return probeFor > 0 ? vscode.l10n.t('{0} · probe for {1}', text, probeFor) : text;
}

function stateText(w: Watch, held: Held, now: number): string {
  const s = w.state;
  if (held !== null) {
    const what =
      held === 'paused'
        ? vscode.l10n.t('paused')
        : held === 'silentEngine'
          ? vscode.l10n.t('engine silent')
          : vscode.l10n.t('no daemon');
    if (s.kind === 'usageLimited' || (s.kind === 'waitingSlot' && s.held.kind === 'usageLimited'))
      return vscode.l10n.t('{0} · usage limit', what);
    const due = dueAt(w);
    return due !== null && due > now
      ? vscode.l10n.t('{0} · retry {1}', what, clockTime(due, now))
      : vscode.l10n.t('{0} · retry due', what);
  }
  return (STATE_TEXT[s.kind] as (s: WatchState, w: Watch, now: number) => string)(s, w, now);
}

/** A state's short words, when nothing holds its recovery. */
const STATE_TEXT: { [K in WatchStateKind]: (s: Extract<WatchState, { kind: K }>, w: Watch, now: number) => string } = {
  running: () => vscode.l10n.t('running'),
  idle: () => vscode.l10n.t('idle'),
  waitingApproval: () => vscode.l10n.t('needs approval'),
  codexRetrying: () => vscode.l10n.t('Codex retrying'),
  backoff: (_, w, now) => {
    const due = dueAt(w) ?? now;
    return due > now ? vscode.l10n.t('retry {0}', formatDuration(due - now)) : vscode.l10n.t('retry due');
  },
  waitingSlot: (s, _, now) => vscode.l10n.t('queued · {0}', formatDuration(Math.max(0, s.slotAt - now))),
  waitingProbe: (_, w, now) =>
    vscode.l10n.t('waiting for the probe · {0}', formatDuration(Math.max(0, now - (dueAt(w) ?? now)))),
  turnEnding: (_, w) =>
    w.goal?.status === 'usageLimited'
      ? vscode.l10n.t('usage limit · turn ending')
      : vscode.l10n.t('blocked · turn ending'),
  recovering: () => vscode.l10n.t('recovering…'),
  usageLimited: (_, w, now) => vscode.l10n.t('usage limit · {0}', clockTime(dueAt(w) ?? now, now)),
  userIntent: (s) => (s.requested === 'paused' ? vscode.l10n.t('paused by you') : vscode.l10n.t('disarmed by you')),
  disarmed: () => vscode.l10n.t('disarmed'),
  paused: () => vscode.l10n.t('paused'),
  complete: () => vscode.l10n.t('complete'),
  budgetLimited: () => vscode.l10n.t('budget limit'),
  modelBlocked: () => vscode.l10n.t('model blocked'),
  interrupted: () => vscode.l10n.t('interrupted'),
  needsAttention: () => vscode.l10n.t('needs attention'),
  gaveUp: (s) => vscode.l10n.t('gave up · {0} tries', s.attempts),
  budgetSpent: () => vscode.l10n.t('budget spent'),
  notAdopted: () => vscode.l10n.t('not adopted'),
  failedBeforeArming: () => vscode.l10n.t('blocked earlier'),
  unloaded: (_, w) => (waitsForLoad(w) ? vscode.l10n.t('blocked · not loaded') : vscode.l10n.t('not loaded')),
  elsewhere: (s) =>
    s.goal === 'active'
      ? vscode.l10n.t('running · other app')
      : s.goal === 'usageLimited'
        ? vscode.l10n.t('usage limit · other app')
        : vscode.l10n.t('blocked · other app'),
};

/** The view's badge: how many goals wait for a person; none when none do. */
export function attentionBadge(snap: EngineSnapshot): vscode.ViewBadge | undefined {
  const n = snap.watches.filter(needsPerson).length;
  if (n === 0) return undefined;
  return {
    value: n,
    tooltip: n === 1 ? vscode.l10n.t('1 goal needs attention') : vscode.l10n.t('{0} goals need attention', n),
  };
}
