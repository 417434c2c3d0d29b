// The "Watched goals" tree: a row per watched thread, its recovery history as children.
import * as vscode from 'vscode';
import type { EngineSnapshot } from '../model/snapshot';
import { describeErrorCode, type HistoryEntry, type Watch } from '../model/watch';
import { isScheduled, needsPerson } from '../model/queries';
import { dateTime, timeOfDay } from './locale';
import { contextValue, stateIcon, tooltip } from './presentation';
import { heldBy, rowDescription } from './rowText';

export type TreeNode = { kind: 'thread'; threadId: string } | { kind: 'history'; threadId: string; index: number };

/** Threads that need a person first, then those with a countdown, then the rest; newest first. */
export function sortWatches(watches: readonly Watch[]): Watch[] {
  const rank = (w: Watch) => {
    if (needsPerson(w)) return 0;
    if (isScheduled(w.state) || w.state.kind === 'recovering') return 1;
    return w.state.kind === 'notAdopted' ? 3 : 2;
  };
  return [...watches].sort((a, b) => rank(a) - rank(b) || b.updatedAt - a.updatedAt);
}

export class WatchTree implements vscode.TreeDataProvider<TreeNode> {
  private readonly changed = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly snapshot: () => EngineSnapshot) {}

  /** Everything changed (a new snapshot). */
  refresh(): void {
    this.changed.fire(undefined);
  }

  getChildren(node?: TreeNode): TreeNode[] {
    const snap = this.snapshot();
    if (!node) return sortWatches(snap.watches).map((w) => ({ kind: 'thread', threadId: w.threadId }));
    if (node.kind === 'history') return [];
    const w = snap.watches.find((x) => x.threadId === node.threadId);
    if (!w) return [];
    return w.history.map((_, index) => ({ kind: 'history' as const, threadId: w.threadId, index })).reverse();
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    const snap = this.snapshot();
    const w = snap.watches.find((x) => x.threadId === node.threadId);
    if (!w) return new vscode.TreeItem('(gone)');
    const now = Date.now();
    if (node.kind === 'history') return historyItem(w, w.history[node.index]);
    // The title gives way to the state: cut, it leaves the state room in a 300 px side bar (the
    // tooltip and the accessible label say it whole).
    const item = new vscode.TreeItem(
      shortTitle(w.title),
      w.history.length > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
    );
    item.id = `thread:${w.threadId}`;
    // What holds a scheduled recovery back, said first on its row: the user's pause, the daemon away.
    const held = heldBy(w, snap);
    item.description = rowDescription(w, held, now, probeCounts(snap).get(w.threadId) ?? 0);
    item.iconPath = held === 'paused' ? stateIcon('paused') : stateIcon(w.state.kind);
    item.tooltip = tooltip(w, now, snap.maxAttempts, held, snap.policy?.recoveryBudget ?? null);
    item.contextValue = contextValue(w);
    item.accessibilityInformation = { label: `${w.title}, ${item.description}` };
    return item;
  }

  getParent(node: TreeNode): TreeNode | undefined {
    return node.kind === 'history' ? { kind: 'thread', threadId: node.threadId } : undefined;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** How many goals wait for each probe, once per snapshot (a row is drawn many times per snapshot). */
const probeCountsOf = new WeakMap<EngineSnapshot, Map<string, number>>();
function probeCounts(snap: EngineSnapshot): Map<string, number> {
  let counts = probeCountsOf.get(snap);
  if (!counts) {
    counts = new Map();
    for (const x of snap.watches)
      if (x.state.kind === 'waitingProbe') counts.set(x.state.probe, (counts.get(x.state.probe) ?? 0) + 1);
    probeCountsOf.set(snap, counts);
  }
  return counts;
}

/** Titles longer than this are cut (with "…") in the row's label. */
export const TITLE_CHARS = 18;

export function shortTitle(title: string): string {
  const chars = [...title];
  if (chars.length <= TITLE_CHARS) return title;
  const cut = chars.slice(0, TITLE_CHARS - 1).join('');
  return `${cut.trimEnd()}…`;
}

function historyItem(w: Watch, h: HistoryEntry): vscode.TreeItem {
  const [icon, text] = OUTCOMES[h.outcome];
  const outcome = text();
  const label = `${timeOfDay(h.at)} · ${outcome}`;
  const item = new vscode.TreeItem(label);
  item.id = `history:${w.threadId}:${h.at}:${h.failedTurnId}:${h.outcome}`;
  // The error, short; the attempt and the failed turn are in the tooltip.
  item.description = describeErrorCode(h.error);
  item.tooltip = [
    dateTime(h.at),
    vscode.l10n.t('attempt {0}', h.attempt),
    vscode.l10n.t('failed turn {0}', h.failedTurnId),
    vscode.l10n.t('error: {0}', describeErrorCode(h.error)),
    vscode.l10n.t('outcome: {0}', outcome) + (h.detail ? ` (${h.detail})` : ''),
  ].join('\n');
  item.iconPath = new vscode.ThemeIcon(icon);
  item.contextValue = 'history';
  item.accessibilityInformation = { label: `${label}, ${item.description}` };
  return item;
}

/** A history entry's icon and its outcome in words. */
const OUTCOMES: Record<HistoryEntry['outcome'], [icon: string, text: () => string]> = {
  recovered: ['check', () => vscode.l10n.t('recovered')],
  'failed-again': ['close', () => vscode.l10n.t('failed again')],
  skipped: ['dash', () => vscode.l10n.t('skipped')],
  'gave-up': ['error', () => vscode.l10n.t('gave up')],
  rejected: ['dash', () => vscode.l10n.t('rejected')],
};
