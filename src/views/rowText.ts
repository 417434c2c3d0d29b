// A tree row's description: the state first, and short enough for a 300 px sidebar ("retry 0:42",
// "paused · retry 14:05", "needs attention"). The details (error, times, attempts, what a person
// can do) are in the row's tooltip (presentation.ts). The runner keeps its longer words
// (describeState in src/model/stateText.ts).
import * as vscode from 'vscode';
import type { EngineSnapshot } from '../model/snapshot';
import { formatDuration, type Watch } from '../model/watch';
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
  switch (s.kind) {
    case 'running':
      return vscode.l10n.t('running');
    case 'idle':
      return vscode.l10n.t('idle');
    case 'waitingApproval':
      return vscode.l10n.t('needs approval');
    case 'codexRetrying':
      return vscode.l10n.t('Codex retrying');
    case 'backoff': {
      const due = dueAt(w) ?? now;
      return due > now ? vscode.l10n.t('retry {0}', formatDuration(due - now)) : vscode.l10n.t('retry due');
    }
    case 'waitingSlot':
      return vscode.l10n.t('queued · {0}', formatDuration(Math.max(0, s.slotAt - now)));
    case 'waitingProbe':
      return vscode.l10n.t('waiting for the probe · {0}', formatDuration(Math.max(0, now - (dueAt(w) ?? now))));
    case 'turnEnding':
      return w.goal?.status === 'usageLimited'
        ? vscode.l10n.t('usage limit · turn ending')
        : vscode.l10n.t('blocked · turn ending');
    case 'recovering':
      return vscode.l10n.t('recovering…');
    case 'usageLimited':
      return vscode.l10n.t('usage limit · {0}', clockTime(dueAt(w) ?? now, now));
    case 'userIntent':
      return s.requested === 'paused' ? vscode.l10n.t('paused by you') : vscode.l10n.t('disarmed by you');
    case 'disarmed':
      return vscode.l10n.t('disarmed');
    case 'paused':
      return vscode.l10n.t('paused');
    case 'complete':
      return vscode.l10n.t('complete');
    case 'budgetLimited':
      return vscode.l10n.t('budget limit');
    case 'modelBlocked':
      return vscode.l10n.t('model blocked');
    case 'interrupted':
      return vscode.l10n.t('interrupted');
    case 'needsAttention':
      return vscode.l10n.t('needs attention');
    case 'gaveUp':
      return vscode.l10n.t('gave up · {0} tries', s.attempts);
    case 'budgetSpent':
      return vscode.l10n.t('budget spent');
    case 'notAdopted':
      return vscode.l10n.t('not adopted');
    case 'failedBeforeArming':
      return vscode.l10n.t('blocked earlier');
    case 'unloaded':
      return waitsForLoad(w) ? vscode.l10n.t('blocked · not loaded') : vscode.l10n.t('not loaded');
    case 'elsewhere':
      if (s.goal === 'active') return vscode.l10n.t('running · other app');
      return s.goal === 'usageLimited'
        ? vscode.l10n.t('usage limit · other app')
        : vscode.l10n.t('blocked · other app');
  }
}

/** The view's badge: how many goals wait for a person; none when none do. */
export function attentionBadge(snap: EngineSnapshot): vscode.ViewBadge | undefined {
  const n = snap.watches.filter(needsPerson).length;
  if (n === 0) return undefined;
  return {
    value: n,
    tooltip: n === 1 ? vscode.l10n.t('1 goal needs attention') : vscode.l10n.t('{0} goals need attention', n),
  };
}
