// The status-bar item: the soonest retry as a live countdown, "recovery paused", the
// warning background while a thread needs attention, failed threads the daemon has not loaded,
// a summary tooltip (Markdown, with Pause/Resume, Show log and Settings links); a click shows the tree.
import * as vscode from 'vscode';
import type { EngineSnapshot } from '../model/snapshot';
import { formatDuration } from '../model/watch';
import { isScheduled, personWait } from '../model/queries';

export const STATUS_ITEM_ID = 'codex-goal-recovery.status';

/** The commands the status-bar tooltip may run through its links: ours, and no other. */
export const TOOLTIP_COMMANDS = [
  'codexGoalRecovery.pauseAutoRecovery',
  'codexGoalRecovery.resumeAutoRecovery',
  'codexGoalRecovery.showLog',
  'codexGoalRecovery.openSettings',
] as const;

/** The policy in force (the leading engine's, machine-wide), in words. */
export function policyLine(p: NonNullable<EngineSnapshot['policy']>): string {
  const s = (ms: number) => (ms >= 60_000 ? `${Math.round(ms / 6_000) / 10} min` : `${Math.round(ms / 100) / 10} s`);
  const onOff = (on: boolean) => (on ? vscode.l10n.t('on') : vscode.l10n.t('off'));
  return vscode.l10n.t(
    'Policy (machine-wide): retry after {0}, doubling up to {1}, at most {2} tries; adopt new goals {3}; resume after usage limits {4}',
    s(p.baseDelayMs),
    s(p.maxDelayMs),
    p.maxAttempts,
    onOff(p.autoArm),
    onOff(p.recoverUsageLimited),
  );
}

export class RecoveryStatusBar {
  private readonly item: vscode.StatusBarItem;
  /** The tooltip's lines as plain text (tests, diagnostics, the accessible label). */
  private plain = '';

  constructor(focusCommand: string) {
    this.item = vscode.window.createStatusBarItem(STATUS_ITEM_ID, vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'Codex Goal Recovery';
    this.item.command = focusCommand;
  }

  /** Renders the snapshot; returns whether a countdown is shown (the caller ticks only then). */
  render(snap: EngineSnapshot, now = Date.now()): boolean {
    const waits = snap.watches.map(personWait);
    const attention = waits.filter((r) => r === 'attention' || r === 'beforeArming').length;
    const scheduled = snap.watches.filter((w) => isScheduled(w.state)).length;
    const held = snap.watches.filter((w) => w.state.kind === 'waitingSlot').length;
    const waitingProbe = snap.watches.filter((w) => w.state.kind === 'waitingProbe').length;
    const running = snap.watches.filter((w) => w.state.kind === 'running' || w.state.kind === 'recovering').length;
    const unloaded = waits.filter((r) => r === 'load').length;
    const elsewhere = snap.watches.filter((w) => w.state.kind === 'elsewhere');
    const stoppedElsewhere = waits.filter((r) => r === 'elsewhere').length;
    const version = snap.connection.kind === 'connected' ? (snap.connection.versionWarning ?? null) : null;
    const paused = snap.pausedAt !== null;
    let countdown = false;
    if (snap.connection.kind !== 'connected') {
      this.item.text =
        snap.connection.kind === 'connecting'
          ? '$(loading~spin) Codex'
          : snap.connection.kind === 'unresponsive'
            ? `$(warning) ${vscode.l10n.t('Codex: engine not answering')}`
            : `$(debug-disconnect) ${vscode.l10n.t('Codex: no daemon')}`;
    } else if (paused) {
      this.item.text = `$(debug-pause) ${vscode.l10n.t('recovery paused')}`;
    } else if (waitingProbe > 0 && waitingProbe === scheduled) {
      // Every recovery waits for its outage's probe: no time to count down to, the verdict decides.
      this.item.text = `$(beaker) ${vscode.l10n.t('{0} waiting for the probe', waitingProbe)}`;
    } else if (snap.nextDueAt !== null) {
      // Due, but the global limiter holds it: the next action is the next recovery slot.
      const left = formatDuration(snap.nextDueAt - now);
      this.item.text =
        held > 0
          ? `$(watch) ${vscode.l10n.t('recovery slot in {0}', left)}`
          : `$(history) ${vscode.l10n.t('retry in {0}', left)}`;
      countdown = true;
    } else if (attention > 0) {
      this.item.text = `$(warning) ${
        attention === 1 ? vscode.l10n.t('1 needs attention') : vscode.l10n.t('{0} need attention', attention)
      }`;
    } else if (unloaded > 0) {
      this.item.text = `$(cloud-offline) ${vscode.l10n.t('{0} not loaded', unloaded)}`;
    } else if (stoppedElsewhere > 0) {
      this.item.text = `$(link-external) ${vscode.l10n.t('{0} stopped in another app', stoppedElsewhere)}`;
    } else {
      this.item.text = `$(pass) ${vscode.l10n.t('{0} watched', snap.watches.filter((w) => w.state.kind !== 'notAdopted').length)}`;
    }
    this.item.backgroundColor = attention > 0 ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    const lines = [
      snap.connection.kind === 'connected'
        ? vscode.l10n.t('Connected: {0}', snap.connection.detail)
        : vscode.l10n.t('Not connected ({0}); daemon: {1}', snap.connection.detail, snap.target),
      paused ? vscode.l10n.t('Auto-recovery is paused.') : vscode.l10n.t('Auto-recovery is on.'),
      vscode.l10n.t('{0} running · {1} waiting to retry · {2} needing attention', running, scheduled, attention),
      held > 0 && vscode.l10n.t('{0} due, waiting for a recovery slot (at most a few recoveries at once)', held),
      waitingProbe > 0 &&
        vscode.l10n.t(
          '{0} due, waiting for the probe of their outage (one goal on the same provider tried first)',
          waitingProbe,
        ),
      unloaded > 0 && vscode.l10n.t('{0} blocked on a thread the daemon has not loaded: Retry now loads it', unloaded),
      elsewhere.length > 0 &&
        vscode.l10n.t(
          '{0} in other Codex apps ({1} stopped there): shown, recovered only by Retry now',
          elsewhere.length,
          stoppedElsewhere,
        ),
      !!version && vscode.l10n.t('Warning: {0}', version),
      snap.policy && policyLine(snap.policy),
    ].filter((line) => typeof line === 'string');
    this.plain = ['Codex Goal Recovery', ...lines].join('\n');
    const md = new vscode.MarkdownString(undefined, true);
    md.isTrusted = { enabledCommands: [...TOOLTIP_COMMANDS] };
    md.appendMarkdown('**Codex Goal Recovery**\n\n');
    md.appendMarkdown(lines.map(escapeMarkdown).join('  \n'));
    const link = (icon: string, title: string, command: (typeof TOOLTIP_COMMANDS)[number]) =>
      `[$(${icon}) ${escapeMarkdown(title)}](command:${command})`;
    md.appendMarkdown('\n\n---\n\n');
    md.appendMarkdown(
      [
        paused
          ? link('debug-start', vscode.l10n.t('Resume auto-recovery'), 'codexGoalRecovery.resumeAutoRecovery')
          : link('debug-pause', vscode.l10n.t('Pause auto-recovery'), 'codexGoalRecovery.pauseAutoRecovery'),
        link('output', vscode.l10n.t('Show log'), 'codexGoalRecovery.showLog'),
        link('gear', vscode.l10n.t('Settings'), 'codexGoalRecovery.openSettings'),
      ].join(' · '),
    );
    this.item.tooltip = md;
    this.item.accessibilityInformation = {
      label: `${this.item.text.replace(/\$\([^)]*\)\s*/g, '')}. ${lines.join('. ')}`,
    };
    this.item.show();
    return countdown;
  }

  /** What the item shows now: its text, the tooltip as plain lines, and the tooltip's Markdown (tests, diagnostics). */
  shown(): { text: string; tooltip: string; markdown: string } {
    const tooltip = this.item.tooltip;
    return {
      text: this.item.text,
      tooltip: this.plain,
      markdown: typeof tooltip === 'string' ? tooltip : (tooltip?.value ?? ''),
    };
  }

  dispose(): void {
    this.item.dispose();
  }
}

export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
