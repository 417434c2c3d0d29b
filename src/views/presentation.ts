// How a watched thread looks: its icon, its context value (which actions apply), its tooltip.
import * as vscode from 'vscode';
import {
  canPauseGoal,
  canRetryNow,
  describeErrorCode,
  describeState,
  dueAt,
  formatClock,
  waitsForLoad,
  type WatchedThread,
  type WatchStateKind,
} from '../model/watch';

const ICONS: Record<WatchStateKind, [string, string?]> = {
  running: ['sync~spin', 'charts.green'],
  idle: ['circle-outline'],
  waitingApproval: ['bell', 'charts.yellow'],
  codexRetrying: ['sync', 'charts.blue'],
  backoff: ['history', 'charts.orange'],
  waitingSlot: ['watch', 'charts.orange'],
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
export function contextValue(w: WatchedThread): string {
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

export function tooltip(w: WatchedThread, now: number, maxAttempts: number): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**${escape(w.title)}**\n\n`);
  md.appendMarkdown(
    `$(${ICONS[w.state.kind][0].replace('~spin', '')}) ${escape(describeState(w, now, maxAttempts))}\n\n`,
  );
  const rows: [string, string][] = [];
  if (w.goal) {
    rows.push(['Objective', w.goal.objective]);
    rows.push(['Goal status', w.goal.status]);
    rows.push([
      'Tokens used',
      w.goal.tokenBudget
        ? `${w.goal.tokensUsed.toLocaleString('en-US')} of ${w.goal.tokenBudget.toLocaleString('en-US')}`
        : w.goal.tokensUsed.toLocaleString('en-US'),
    ]);
  }
  if (w.lastFailure)
    rows.push([
      'Last error',
      `${describeErrorCode(w.lastFailure.code)}${w.lastFailure.httpStatus ? ` (HTTP ${w.lastFailure.httpStatus})` : ''}: ${w.lastFailure.message}`,
    ]);
  const due = dueAt(w);
  if (w.state.kind === 'waitingSlot') rows.push(['Next try', `its recovery slot, ${formatClock(w.state.slotAt, now)}`]);
  else if (due !== null) rows.push(['Next try', formatClock(due, now)]);
  else if (waitsForLoad(w)) rows.push(['Next try', 'when a client opens the thread, or Retry now (loads it)']);
  if (w.state.kind === 'elsewhere') {
    rows.push(['Where', ELSEWHERE_WHERE]);
    rows.push(['What you can do', elsewhereTodo(w.state)]);
  }
  if (w.state.kind === 'notAdopted') rows.push(['What you can do', NOT_ADOPTED_TODO]);
  if (w.state.kind === 'failedBeforeArming') {
    rows.push(['Last error', `${describeErrorCode(w.state.code)}: ${w.state.message}`]);
    rows.push(['What you can do', BEFORE_ARMING_TODO]);
  }
  if (w.failures > 0) rows.push(['Consecutive failures', `${w.failures} (gives up after ${maxAttempts})`]);
  rows.push(['Thread', w.threadId]);
  md.appendMarkdown(rows.map(([k, v]) => `${k}: ${escape(v)}`).join('  \n'));
  return md;
}

const NOT_ADOPTED_TODO =
  'Watch this goal: the engine watches it from now on and recovers a transient failure that comes after now, never one from before';

const BEFORE_ARMING_TODO =
  'resume the goal in Codex: a transient failure after that is recovered; this one, older than the arming, is not';

const ELSEWHERE_WHERE =
  'another Codex app (the Codex VS Code extension, the desktop app, or a TUI run with -c or --profile), not the daemon';

/** What a person can do about a goal in another Codex app (docs/architecture.md, "Goals in other Codex apps"). */
function elsewhereTodo(state: Extract<WatchedThread['state'], { kind: 'elsewhere' }>): string {
  if (state.goal === 'active') return 'nothing: it runs there; it is shown here, never recovered from here';
  if (state.retryable)
    return 'continue it in that app, or close the thread there and use Retry now: the daemon then loads it and recovers it once (it runs in the daemon from then on)';
  return 'look at it in that app: this failure is not one a retry gets past';
}

function escape(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
