// How a watched thread looks: its icon, its context value (which actions apply), its tooltip.
import { budgetUse } from '../model/budget';
import * as vscode from 'vscode';
import { describeErrorCode, type Watch, type WatchStateKind } from '../model/watch';
import { canPauseGoal, canRetryNow, dueAt, waitsForLoad } from '../model/queries';
import { describeState } from '../model/stateText';
import { clockTime, count } from './locale';
import { rowDescription, type Held } from './rowText';
import { escapeMarkdown as escape } from './statusBar';

const ICONS: Record<WatchStateKind, [string, string?]> = {
  running: ['sync~spin', 'charts.green'],
  idle: ['circle-outline'],
  waitingApproval: ['bell', 'charts.yellow'],
  codexRetrying: ['sync', 'charts.blue'],
  backoff: ['history', 'charts.orange'],
  waitingSlot: ['watch', 'charts.orange'],
  waitingProbe: ['beaker', 'charts.orange'],
  turnEnding: ['loading~spin', 'charts.orange'],
  recovering: ['debug-restart', 'charts.blue'],
  usageLimited: ['watch', 'charts.yellow'],
  userIntent: ['debug-pause'],
  disarmed: ['circle-slash'],
  paused: ['debug-pause'],
  complete: ['pass', 'charts.green'],
  budgetLimited: ['credit-card'],
  modelBlocked: ['stop-circle'],
  interrupted: ['debug-stop'],
  needsAttention: ['warning', 'list.warningForeground'],
  gaveUp: ['error', 'list.errorForeground'],
  budgetSpent: ['dashboard', 'list.warningForeground'],
  notAdopted: ['circle-large-outline'],
  failedBeforeArming: ['eye', 'charts.yellow'],
  unloaded: ['cloud-offline'],
  elsewhere: ['link-external', 'charts.purple'],
};

export function stateIcon(kind: WatchStateKind): vscode.ThemeIcon {
  const [id, color] = ICONS[kind];
  return new vscode.ThemeIcon(id, color ? new vscode.ThemeColor(color) : undefined);
}

/**
 * `thread` plus one word per action that applies, matched by the menus' `when` clauses
 * (`viewItem =~ /\bretry\b/` and so on).
 */
export function contextValue(w: Watch): string {
  const k = w.state.kind;
  const words = ['thread', k];
  if (k === 'notAdopted') words.push('watch');
  if (canRetryNow(w)) words.push('retry');
  if (canPauseGoal(w)) words.push('pausable');
  if (k === 'disarmed' || k === 'userIntent') words.push('rearm');
  else words.push('disarm');
  if (w.rolloutPath) words.push('rollout');
  return words.join(' ');
}

/**
 * The row's tooltip: the state in full words (the runner's, describeState), then the details the
 * short row leaves out: the goal, the last error, the next try and what holds it, the attempts,
 * what a person can do.
 */
export function tooltip(
  w: Watch,
  now: number,
  maxAttempts: number,
  held: Held = null,
  recoveryBudget: number | null = null,
): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**${escape(w.title)}**\n\n`);
  // Held (paused, or the daemon away), the state in full would count down: say what holds it instead.
  const headline =
    held === null
      ? `$(${ICONS[w.state.kind][0].replace('~spin', '')}) ${escape(describeState(w, now, maxAttempts))}`
      : `$(${held === 'paused' ? 'debug-pause' : 'debug-disconnect'}) ${escape(rowDescription(w, held, now))}`;
  md.appendMarkdown(`${headline}\n\n`);
  const rows: [string, string][] = [];
  if (w.goal) {
    rows.push(
      [vscode.l10n.t('Objective'), w.goal.objective],
      [vscode.l10n.t('Goal status'), w.goal.status],
      [
        vscode.l10n.t('Tokens used'),
        w.goal.tokenBudget
          ? vscode.l10n.t('{0} of {1}', count(w.goal.tokensUsed), count(w.goal.tokenBudget))
          : count(w.goal.tokensUsed),
      ],
    );
  }
  if (w.lastFailure)
    rows.push([
      vscode.l10n.t('Last error'),
      `${describeErrorCode(w.lastFailure.code)}${w.lastFailure.httpStatus ? ` (HTTP ${w.lastFailure.httpStatus})` : ''}: ${w.lastFailure.message}`,
    ]);
  const due = dueAt(w);
  if (w.state.kind === 'waitingSlot')
    rows.push([vscode.l10n.t('Next try'), vscode.l10n.t('its recovery slot, {0}', clockTime(w.state.slotAt, now))]);
  else if (w.state.kind === 'waitingProbe')
    rows.push([
      vscode.l10n.t('Next try'),
      vscode.l10n.t(
        'once the probe of this outage (another goal on the same provider, tried first) gets an answer; if it fails again, at its next step',
      ),
    ]);
  else if (due !== null) rows.push([vscode.l10n.t('Next try'), clockTime(due, now)]);
  else if (waitsForLoad(w))
    rows.push([vscode.l10n.t('Next try'), vscode.l10n.t('when a client opens the thread, or Retry now (loads it)')]);
  if (held)
    rows.push([
      vscode.l10n.t('Held'),
      held === 'paused'
        ? vscode.l10n.t('auto-recovery is paused: nothing is retried until you resume it (Resume auto-recovery)')
        : held === 'noDaemon'
          ? vscode.l10n.t('the daemon is not connected: it goes out once it is')
          : vscode.l10n.t('the engine that leads is not answering: another takes its place once its lease runs out'),
    ]);
  if (w.state.kind === 'elsewhere')
    rows.push([
      vscode.l10n.t('Where'),
      vscode.l10n.t(
        'another Codex app (the Codex VS Code extension, the desktop app, or a TUI run with -c or --profile), not the daemon',
      ),
    ]);
  if (w.state.kind === 'failedBeforeArming' || (w.state.kind === 'needsAttention' && !w.lastFailure))
    rows.push([vscode.l10n.t('Last error'), `${describeErrorCode(w.state.code)}: ${w.state.message}`]);
  const todo = whatYouCanDo(w);
  if (todo) rows.push([vscode.l10n.t('What you can do'), todo]);
  if (w.failures > 0)
    rows.push([
      vscode.l10n.t('Consecutive failures'),
      vscode.l10n.t('{0} (gives up after {1})', w.failures, maxAttempts),
    ]);
  const budget = budgetRow(w, now, recoveryBudget);
  if (budget) rows.push([vscode.l10n.t('Recoveries in 24 h'), budget]);
  rows.push([vscode.l10n.t('Thread'), w.threadId]);
  md.appendMarkdown(rows.map(([k, v]) => `${k}: ${escape(v)}`).join('  \n'));
  return md;
}

/**
 * The recovery budget, once the goal was recovered automatically in the last 24 h: "3 of 12", and
 * when it is spent, when the next is allowed ("12 of 12 · next allowed at 14:05").
 */
function budgetRow(w: Watch, now: number, limit: number | null): string | null {
  const s = w.state;
  if (s.kind === 'budgetSpent')
    return vscode.l10n.t('{0} of {1} · next allowed at {2}', s.used, s.limit, clockTime(s.until, now));
  const { used } = budgetUse(w, now);
  if (used === 0) return null;
  return limit !== null ? vscode.l10n.t('{0} of {1}', used, limit) : String(used);
}

/** What a person can do about a state the short row only names. */
function whatYouCanDo(w: Watch): string | null {
  switch (w.state.kind) {
    case 'notAdopted':
      return vscode.l10n.t(
        'Watch this goal: the engine watches it from now on and recovers a transient failure that comes after now, never one from before',
      );
    case 'failedBeforeArming':
      return vscode.l10n.t(
        'resume the goal in Codex: a transient failure after that is recovered; this one, older than the arming, is not',
      );
    case 'needsAttention':
      if (w.state.code === 'creditsDepleted')
        return vscode.l10n.t('add credits to the account or workspace, then resume the goal in Codex');
      if (w.state.code === 'spendCapReached')
        return vscode.l10n.t('raise the spend cap (or ask the workspace owner), then resume the goal in Codex');
      return vscode.l10n.t('look at the error in Codex and fix its cause, then resume the goal there');
    case 'gaveUp':
      return vscode.l10n.t('Retry now tries once more; or look at the error in Codex');
    case 'budgetSpent':
      return vscode.l10n.t(
        'Retry now recovers it once more, past the budget; Disarm then Re-arm starts its budget afresh; or look at why it keeps failing in Codex',
      );
    case 'userIntent':
    case 'disarmed':
      return vscode.l10n.t('Re-arm thread: the engine watches it again');
    case 'elsewhere': // docs/architecture.md, "Goals in other Codex apps"
      if (w.state.goal === 'active')
        return vscode.l10n.t('nothing: it runs there; it is shown here, never recovered from here');
      if (w.state.retryable)
        return vscode.l10n.t(
          'continue it in that app, or close the thread there and use Retry now: the daemon then loads it and recovers it once (it runs in the daemon from then on)',
        );
      return vscode.l10n.t('look at it in that app: this failure is not one a retry gets past');
    default:
      return null;
  }
}
