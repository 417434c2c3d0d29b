// The status-bar item: the soonest retry as a live countdown, "recovery paused", the
// warning background while a thread needs attention, failed threads the daemon has not loaded,
// a summary tooltip; a click shows the tree.
import * as vscode from 'vscode';
import type { EngineSnapshot } from '../model/snapshot';
import { formatDuration, isScheduled, needsAttention, waitsForLoad } from '../model/watch';

export const STATUS_ITEM_ID = 'codex-goal-recovery.status';

/** The policy in force (the leading engine's, machine-wide), in words. */
export function policyLine(p: NonNullable<EngineSnapshot['policy']>): string {
  const s = (ms: number) => (ms >= 60_000 ? `${Math.round(ms / 6_000) / 10} min` : `${Math.round(ms / 100) / 10} s`);
  return [
    `Policy (machine-wide): retry after ${s(p.baseDelayMs)}, doubling up to ${s(p.maxDelayMs)}, at most ${p.maxAttempts} tries`,
    `adopt new goals ${p.autoArm ? 'on' : 'off'}`,
    `resume after usage limits ${p.recoverUsageLimited ? 'on' : 'off'}`,
  ].join('; ');
}

export class RecoveryStatusBar {
  private readonly item: vscode.StatusBarItem;

  constructor(focusCommand: string) {
    this.item = vscode.window.createStatusBarItem(STATUS_ITEM_ID, vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'Codex Goal Recovery';
    this.item.command = focusCommand;
  }

  /** Renders the snapshot; returns whether a countdown is shown (the caller ticks only then). */
  render(snap: EngineSnapshot, now = Date.now()): boolean {
    const attention = snap.watches.filter((w) => needsAttention(w.state)).length;
    const scheduled = snap.watches.filter((w) => isScheduled(w.state)).length;
    const held = snap.watches.filter((w) => w.state.kind === 'waitingSlot').length;
    const running = snap.watches.filter((w) => w.state.kind === 'running' || w.state.kind === 'recovering').length;
    const unloaded = snap.watches.filter(waitsForLoad).length;
    const elsewhere = snap.watches.filter((w) => w.state.kind === 'elsewhere');
    const stoppedElsewhere = elsewhere.filter((w) => w.state.kind === 'elsewhere' && w.state.goal !== 'active').length;
    const version = snap.connection.kind === 'connected' ? (snap.connection.versionWarning ?? null) : null;
    let countdown = false;
    if (snap.connection.kind !== 'connected') {
      this.item.text =
        snap.connection.kind === 'connecting' ? '$(loading~spin) Codex' : '$(debug-disconnect) Codex: no daemon';
    } else if (snap.pausedAt !== null) {
      this.item.text = '$(debug-pause) recovery paused';
    } else if (snap.nextDueAt !== null) {
      // Due, but the global limiter holds it: the next action is the next recovery slot.
      this.item.text =
        held > 0
          ? `$(watch) recovery slot in ${formatDuration(snap.nextDueAt - now)}`
          : `$(history) retry in ${formatDuration(snap.nextDueAt - now)}`;
      countdown = true;
    } else if (attention > 0) {
      this.item.text = `$(warning) ${attention} need${attention === 1 ? 's' : ''} attention`;
    } else if (unloaded > 0) {
      this.item.text = `$(cloud-offline) ${unloaded} not loaded`;
    } else if (stoppedElsewhere > 0) {
      this.item.text = `$(link-external) ${stoppedElsewhere} stopped in another app`;
    } else {
      this.item.text = `$(pass) ${snap.watches.filter((w) => w.state.kind !== 'notAdopted').length} watched`;
    }
    this.item.backgroundColor = attention > 0 ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    const lines = [
      'Codex Goal Recovery',
      snap.connection.kind === 'connected'
        ? `Connected: ${snap.connection.detail}`
        : `Not connected (${snap.connection.detail}); daemon: ${snap.target}`,
      snap.pausedAt !== null ? 'Auto-recovery is paused.' : 'Auto-recovery is on.',
      `${running} running · ${scheduled} waiting to retry · ${attention} needing attention`,
      ...(held > 0 ? [`${held} due, waiting for a recovery slot (at most a few recoveries at once)`] : []),
      ...(unloaded > 0 ? [`${unloaded} blocked on a thread the daemon has not loaded: Retry now loads it`] : []),
      ...(elsewhere.length > 0
        ? [
            `${elsewhere.length} in other Codex apps (${stoppedElsewhere} stopped there): shown, recovered only by Retry now`,
          ]
        : []),
      ...(version ? [`Warning: ${version}`] : []),
      ...(snap.policy ? [policyLine(snap.policy)] : []),
    ];
    this.item.tooltip = lines.join('\n');
    this.item.accessibilityInformation = {
      label: `${this.item.text.replace(/\$\([^)]*\)\s*/g, '')}. ${lines.slice(1).join('. ')}`,
    };
    this.item.show();
    return countdown;
  }

  /** What the item shows now (tests, diagnostics). */
  shown(): { text: string; tooltip: string } {
    const tooltip = this.item.tooltip;
    return { text: this.item.text, tooltip: typeof tooltip === 'string' ? tooltip : (tooltip?.value ?? '') };
  }

  dispose(): void {
    this.item.dispose();
  }
}
