// Copy Diagnostics: what a bug report needs, as Markdown for the clipboard. Versions, the
// window's role and the engine that leads, where it connects and whether that socket passes the
// safety check, the daemon's Codex version against the tested range, how many goals are in each
// state, the policy, and the last lines of the log. No secrets: no environment, no settings
// beyond the target, no tokens (anything that looks like one in a log line is masked).
import * as os from 'node:os';
import * as vscode from 'vscode';
import type { Settings } from '../config/settings';
import { leaderOf, socketCheck } from '../host/probe';
import type { RecoveryService } from '../host/service';
import { TESTED_CODEX } from '../model/codexVersion';
import type { EngineSnapshot } from '../model/snapshot';
import { recentLines } from '../views/recentLog';
import { needsPerson } from '../model/queries';
import { policyLine } from '../views/statusBar';

export const EXTENSION_ID = 'codex-goal-recovery.codex-goal-recovery';
/** How many of the kept log lines go into the report. */
export const DIAGNOSTIC_LOG_LINES = 60;

/** The report, in Markdown. Never throws: what could not be found out says why. */
export async function diagnostics(service: RecoveryService, settings: Settings, log: vscode.LogOutputChannel) {
  const snap = service.snapshot();
  const version = (vscode.extensions.getExtension(EXTENSION_ID)?.packageJSON as { version?: unknown } | undefined)
    ?.version;
  const socket = await socketCheck(settings.socketPath);
  const lines = [
    '## Codex Goal Recovery diagnostics',
    '',
    `- Generated: ${new Date().toISOString()}`,
    `- Extension: ${typeof version === 'string' ? version : 'unknown'}`,
    `- VS Code: ${vscode.version} (${vscode.env.appName}, ${vscode.env.appHost}, UI language ${vscode.env.language})`,
    `- OS: ${os.platform()} ${os.release()} (${os.arch()}); Node ${process.versions.node}`,
    '',
    '### Engine',
    '',
    `- Role: ${service.role === 'leader' ? 'leader (this window runs the engine)' : 'follower'}`,
    `- Leader: ${leaderOf(service)}`,
    `- Target: ${snap.target}`,
    `- Socket check: ${socket}`,
    `- Connection: ${connectionText(snap)}`,
    `- Daemon Codex: ${daemonVersion(snap)}`,
    `- Auto-recovery: ${snap.pausedAt === null ? 'on' : `paused since ${new Date(snap.pausedAt).toISOString()}`}`,
    `- ${snap.policy ? policyLine(snap.policy) : `Policy: not known yet (this window's settings: ${policyLine(settings.options)})`}`,
    '',
    `### Goals (${snap.watches.length})`,
    '',
    ...countsByState(snap),
    '',
    `### Recent log (last ${DIAGNOSTIC_LOG_LINES} lines)`,
    '',
    '```',
    ...recentLines(log, DIAGNOSTIC_LOG_LINES).map(maskSecrets),
    '```',
  ];
  return lines.join('\n');
}

function connectionText(snap: EngineSnapshot): string {
  const c = snap.connection;
  if (c.kind === 'disconnected')
    return `disconnected (${c.detail})${c.retryAt ? `, next try ${new Date(c.retryAt).toISOString()}` : ''}`;
  return `${c.kind} (${c.detail})`;
}

function daemonVersion(snap: EngineSnapshot): string {
  const tested = `tested ${TESTED_CODEX.oldest}–${TESTED_CODEX.newest}`;
  const c = snap.connection;
  if (c.kind !== 'connected') return `unknown (not connected; ${tested})`;
  const warning = c.versionWarning ? `; warning: ${c.versionWarning}` : '';
  return `${c.codexVersion ?? 'unknown'} (${tested}${warning})`;
}

/** `- backoff: 2` per state, most first, and how many wait for a person (the view's badge). */
function countsByState(snap: EngineSnapshot): string[] {
  const counts = new Map<string, number>();
  for (const w of snap.watches) counts.set(w.state.kind, (counts.get(w.state.kind) ?? 0) + 1);
  const rows = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([k, n]) => `- ${k}: ${n}`);
  return [
    ...(rows.length ? rows : ['- none']),
    `- waiting for a person (the badge): ${snap.watches.filter(needsPerson).length}`,
  ];
}

/**
 * Where a report goes: a new issue of the tracker the manifest's `bugs.url` names, with a short
 * template to fill in. The report itself stays on the clipboard, to be looked over and pasted: a
 * URL carries a few kilobytes at most, and nothing leaves the machine unless the person sends it.
 * The version is the manifest's. Null when the manifest names no https tracker.
 */
export function newIssueUrl(manifest: unknown): string | null {
  const m = manifest as { bugs?: { url?: unknown }; version?: unknown } | undefined;
  const bugs = m?.bugs?.url;
  if (typeof bugs !== 'string' || !/^https:\/\/[^\s?#]+$/.test(bugs)) return null;
  const version = typeof m?.version === 'string' ? m.version : 'unknown';
  const body = [
    `Codex Goal Recovery ${version}`,
    '',
    '**What happened, and what you expected**',
    '',
    '',
    '**Diagnostics** (Copy Diagnostics put them on your clipboard: look them over, then paste them here)',
    '',
    '',
  ].join('\n');
  const query = new URLSearchParams({ title: '', body, labels: 'bug' });
  return `${bugs.replace(/\/+$/, '')}/new?${query.toString()}`;
}

/** Masks what looks like a credential (a bearer token, an API key, `token=…`) in a log line. */
export function maskSecrets(line: string): string {
  return line
    .replace(/\b(bearer\s+)[^\s"']+/gi, '$1***')
    .replace(/((?:api[_-]?key|token|secret|password)["']?\s*[=:]\s*["']?)[^\s"',;]+/gi, '$1***')
    .replace(/\bsk-[A-Za-z0-9_-]{8,}/g, 'sk-***');
}
