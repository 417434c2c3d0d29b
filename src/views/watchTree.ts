// The "Watched goals" tree: a row per watched thread, its recovery history as children.
import * as vscode from 'vscode';
import type { EngineSnapshot } from '../model/snapshot';
import {
  describeErrorCode,
  describeState,
  isScheduled,
  needsAttention,
  type HistoryEntry,
  type WatchedThread,
} from '../model/watch';
import { contextValue, stateIcon, tooltip } from './presentation';

export type TreeNode = { kind: 'thread'; threadId: string } | { kind: 'history'; threadId: string; index: number };

/** Threads that need a person first, then those with a countdown, then the rest; newest first. */
export function sortWatches(watches: readonly WatchedThread[]): WatchedThread[] {
  const rank = (w: WatchedThread) =>
    needsAttention(w.state)
      ? 0
      : isScheduled(w.state) || w.state.kind === 'recovering'
        ? 1
        : w.state.kind === 'notAdopted'
          ? 3
          : 2;
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
    const item = new vscode.TreeItem(
      w.title,
      w.history.length > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
    );
    item.id = `thread:${w.threadId}`;
    // What holds a scheduled recovery back, said on its row: the user's pause, the daemon away.
    const held = !isScheduled(w.state)
      ? ''
      : snap.pausedAt !== null
        ? ' · recovery paused'
        : snap.connection.kind !== 'connected'
          ? ' · waiting for the daemon'
          : '';
    item.description = describeState(w, now, snap.maxAttempts) + held;
    item.iconPath = stateIcon(w.state.kind);
    item.tooltip = tooltip(w, now, snap.maxAttempts);
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

function historyItem(w: WatchedThread, h: HistoryEntry): vscode.TreeItem {
  const when = new Date(h.at).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  const item = new vscode.TreeItem(`${when} · ${h.outcome}`);
  item.id = `history:${w.threadId}:${h.at}:${h.failedTurnId}:${h.outcome}`;
  item.description = `attempt ${h.attempt} · ${describeErrorCode(h.error)}`;
  item.tooltip = `${new Date(h.at).toLocaleString()}\nfailed turn ${h.failedTurnId}\nerror: ${describeErrorCode(h.error)}\noutcome: ${h.outcome}${h.detail ? ` (${h.detail})` : ''}`;
  item.iconPath = new vscode.ThemeIcon(
    h.outcome === 'recovered'
      ? 'check'
      : h.outcome === 'failed-again'
        ? 'close'
        : h.outcome === 'gave-up'
          ? 'error'
          : 'dash',
  );
  item.contextValue = 'history';
  return item;
}
