/// <reference types="mocha" />
// How the extension looks in a real VS Code: the short row texts (state first, the held state
// first while auto-recovery is paused or the daemon is away), the badge's rule, the palette's
// context keys, the status bar's Markdown tooltip and its links, and Copy Diagnostics on the
// clipboard (run as a person runs it, against the extension as activated; shipped settings).
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { CodexGoalRecoveryApi } from '../../../src/extension';
import { emptySnapshot, type EngineSnapshot } from '../../../src/model/snapshot';
import { newWatch, type WatchedThread, type WatchState } from '../../../src/model/watch';
import { maskSecrets, newIssueUrl } from '../../../src/commands/diagnostics';
import { tooltip } from '../../../src/views/presentation';
import { needsPerson } from '../../../src/model/queries';
import { attentionBadge, heldBy, rowDescription } from '../../../src/views/rowText';
import { RecoveryStatusBar } from '../../../src/views/statusBar';
import { stateKeys, threadCommandKeys, viewMessage } from '../../../src/views/viewState';

const EXTENSION_ID = 'codex-goal-recovery.codex-goal-recovery';
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

function watch(state: WatchState, goal: 'active' | 'blocked' | 'complete' = 'blocked', dueIn = 42_000): WatchedThread {
  const w = newWatch(`t-${state.kind}`, NOW - 60_000);
  w.state = state;
  w.goal = { status: goal, objective: 'an objective', tokensUsed: 1234567, tokenBudget: null, updatedAt: NOW };
  w.failures = 1;
  w.lastFailure = {
    turnId: 'turn-1',
    message: 'Service Unavailable',
    code: 'serverOverloaded',
    httpStatus: 503,
    at: NOW - 10_000,
    dueAt: NOW + dueIn,
  };
  return w;
}

function snapshot(watches: WatchedThread[], extra: Partial<EngineSnapshot> = {}): EngineSnapshot {
  return {
    ...emptySnapshot('/tmp/codex/app-server.sock', NOW),
    connection: { kind: 'connected', detail: 'test daemon' },
    watches,
    ...extra,
  };
}

const backoff = (): WatchedThread => watch({ kind: 'backoff', attempt: 2, failedTurnId: 'turn-1' });

suite('row texts: the state first, short enough for a 300 px sidebar', () => {
  test('each state reads short; the details are in the tooltip', () => {
    const cases: [WatchedThread, string][] = [
      [watch({ kind: 'running' }, 'active'), 'running'],
      [backoff(), 'retry 0:42'],
      [watch({ kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' }, 'blocked', -1_000), 'retry due'],
      [
        watch({ kind: 'waitingSlot', slotAt: NOW + 8_000, held: { kind: 'backoff', attempt: 1, failedTurnId: 't' } }),
        'queued · 0:08',
      ],
      [watch({ kind: 'needsAttention', code: 'contextWindowExceeded', message: 'full' }), 'needs attention'],
      [watch({ kind: 'gaveUp', attempts: 6 }), 'gave up · 6 tries'],
      [watch({ kind: 'userIntent', requested: 'paused', at: NOW }), 'paused by you'],
      [watch({ kind: 'modelBlocked' }), 'model blocked'],
      [watch({ kind: 'notAdopted', status: 'blocked' }), 'not adopted'],
      [watch({ kind: 'unloaded' }), 'blocked · not loaded'],
      [
        watch({ kind: 'elsewhere', since: NOW, goal: 'blocked', seenActive: true, retryable: true }),
        'blocked · other app',
      ],
    ];
    for (const [w, text] of cases) {
      const shown = rowDescription(w, heldBy(w, snapshot([w])), NOW);
      assert.equal(shown, text, w.state.kind);
      assert.ok(shown.length <= 22, `"${shown}" is too long for a 300 px sidebar`);
    }
    const t = tooltip(backoff(), NOW, 6).value;
    assert.match(t, /retry in 0:42 · attempt 2\/6/);
    assert.match(t, /Last error: server overloaded \\\(HTTP 503\\\): Service Unavailable/);
    assert.match(t, /Consecutive failures: 1 \\\(gives up after 6\\\)/);
    const attention = watch({ kind: 'needsAttention', code: 'badRequest', message: 'mock: bad request' });
    attention.lastFailure = null;
    assert.match(tooltip(attention, NOW, 6).value, /Last error: request rejected: mock: bad request/);
    assert.match(tooltip(attention, NOW, 6).value, /What you can do: look at the error in Codex/);
  });

  test('while auto-recovery is paused, a row that would count down says paused first', () => {
    const w = backoff();
    const snap = snapshot([w], { pausedAt: NOW - 5_000 });
    assert.equal(heldBy(w, snap), 'paused');
    const shown = rowDescription(w, heldBy(w, snap), NOW);
    assert.match(shown, /^paused · retry \S/);
    assert.doesNotMatch(shown, /retry in/);
    const past = watch({ kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' }, 'blocked', -5_000);
    assert.equal(rowDescription(past, 'paused', NOW), 'paused · retry due');
    assert.equal(
      rowDescription(watch({ kind: 'usageLimited', resetsAt: null }), 'paused', NOW),
      'paused · usage limit',
    );
    const held = tooltip(w, NOW, 6, 'paused').value;
    assert.match(held, /Held: auto\\-recovery is paused/);
    assert.doesNotMatch(held, /retry in/);
    // Not scheduled: a pause holds nothing there, and the row keeps its own state.
    const done = watch({ kind: 'complete' }, 'complete');
    assert.equal(heldBy(done, snap), null);
    assert.equal(rowDescription(done, heldBy(done, snap), NOW), 'complete');
    // The daemon away holds it too, and says so first.
    const away = snapshot([w], { connection: { kind: 'disconnected', detail: 'gone', retryAt: null } });
    assert.match(rowDescription(w, heldBy(w, away), NOW), /^no daemon · retry /);
  });
});

suite('the badge: goals that wait for a person', () => {
  test('counts needs attention, gave up, stopped before arming, failed and not loaded, stopped in another app', () => {
    const waiting = [
      watch({ kind: 'needsAttention', code: 'unauthorized', message: '401' }),
      watch({ kind: 'gaveUp', attempts: 6 }),
      watch({ kind: 'failedBeforeArming', code: 'other', message: 'x' }),
      watch({ kind: 'unloaded' }),
      watch({ kind: 'elsewhere', since: NOW, goal: 'blocked', seenActive: false, retryable: false }),
    ];
    const notWaiting = [
      backoff(),
      watch({ kind: 'running' }, 'active'),
      watch({ kind: 'complete' }, 'complete'),
      watch({ kind: 'elsewhere', since: NOW, goal: 'active', seenActive: true, retryable: false }, 'active'),
      watch({ kind: 'notAdopted', status: 'complete' }, 'complete'),
    ];
    for (const w of waiting) assert.ok(needsPerson(w), w.state.kind);
    for (const w of notWaiting) assert.ok(!needsPerson(w), w.state.kind);
    assert.deepEqual(attentionBadge(snapshot([...waiting, ...notWaiting])), {
      value: 5,
      tooltip: '5 goals need attention',
    });
    assert.deepEqual(attentionBadge(snapshot([waiting[0]])), { value: 1, tooltip: '1 goal needs attention' });
    assert.equal(attentionBadge(snapshot(notWaiting)), undefined);
  });

  test('the palette shows a thread command only when some row offers it', () => {
    assert.deepEqual(threadCommandKeys(snapshot([])), {
      'codexGoalRecovery.canRetry': false,
      'codexGoalRecovery.canPauseGoal': false,
      'codexGoalRecovery.canWatch': false,
      'codexGoalRecovery.canDisarm': false,
      'codexGoalRecovery.canRearm': false,
      'codexGoalRecovery.hasRollout': false,
    });
    const keys = threadCommandKeys(snapshot([backoff()]));
    assert.equal(keys['codexGoalRecovery.canRetry'], true);
    assert.equal(keys['codexGoalRecovery.canRearm'], false);
    assert.equal(keys['codexGoalRecovery.canWatch'], false);
  });

  test('Pause or Resume, and Start Codex daemon, follow the pause and the connection; the view says why nothing is retried', () => {
    const connected = snapshot([backoff()]);
    assert.deepEqual(stateKeys(connected), {
      'codexGoalRecovery.paused': false,
      'codexGoalRecovery.connected': true,
      'codexGoalRecovery.noDaemon': false,
      'codexGoalRecovery.observing': false,
      'codexGoalRecovery.watchModeChosen': true,
    });
    assert.equal(viewMessage(connected), undefined);
    const paused = snapshot([backoff()], { pausedAt: NOW });
    assert.equal(stateKeys(paused)['codexGoalRecovery.paused'], true);
    assert.equal(viewMessage(paused), 'Auto-recovery is paused: nothing is retried until you resume it.');
    const gone = snapshot([], {
      connection: { kind: 'disconnected', detail: 'no socket at /tmp/x.sock', retryAt: NOW },
    });
    assert.deepEqual(stateKeys(gone), {
      'codexGoalRecovery.paused': false,
      'codexGoalRecovery.connected': false,
      'codexGoalRecovery.noDaemon': true,
      'codexGoalRecovery.observing': false,
      'codexGoalRecovery.watchModeChosen': true,
    });
    // Not connected says so first, paused or not.
    assert.equal(viewMessage({ ...gone, pausedAt: NOW }), 'Not connected: no socket at /tmp/x.sock');
    const connecting = snapshot([], { connection: { kind: 'connecting', detail: 'connecting' } });
    assert.deepEqual(
      [stateKeys(connecting)['codexGoalRecovery.connected'], stateKeys(connecting)['codexGoalRecovery.noDaemon']],
      [false, false],
    );
  });

  test('the first run, observing until the person chooses which goals to watch, says so (docs/first-run.md)', () => {
    const policy = (autoArm: boolean): EngineSnapshot['policy'] => ({
      baseDelayMs: 30_000,
      maxDelayMs: 1_800_000,
      maxAttempts: 6,
      autoArm,
      recoverUsageLimited: true,
      resyncMs: 60_000,
    });
    const observing = snapshot([watch({ kind: 'notAdopted', status: 'active' })], { policy: policy(false) });
    assert.equal(stateKeys(observing, true)['codexGoalRecovery.observing'], true);
    assert.equal(stateKeys(observing, true)['codexGoalRecovery.watchModeChosen'], false);
    assert.match(viewMessage(observing, true) ?? '', /^Observing: no goal is watched until you choose/);
    // Chosen ("Watch only the goals I pick" leaves autoArm off too): nothing said.
    assert.equal(viewMessage(observing, false), undefined);
    assert.equal(stateKeys(observing, false)['codexGoalRecovery.observing'], false);
    assert.equal(stateKeys(observing, false)['codexGoalRecovery.watchModeChosen'], true);
    // The engine that leads arms by itself (a runner whose operator chose by its flags): not observing.
    const armed = { ...observing, policy: policy(true) };
    assert.equal(viewMessage(armed, true), undefined);
    assert.equal(stateKeys(armed, true)['codexGoalRecovery.observing'], false);
    // The pause and a missing daemon come first.
    assert.match(viewMessage({ ...observing, pausedAt: NOW }, true) ?? '', /paused/);
  });
});

suite('the status bar’s tooltip', () => {
  test('is Markdown with Pause or Resume, Show log and Settings links, trusted for our commands only', () => {
    const bar = new RecoveryStatusBar('codexGoalRecovery.watchedGoals.focus');
    try {
      bar.render(snapshot([backoff()], { nextDueAt: NOW + 42_000 }), NOW);
      const on = bar.shown().markdown;
      assert.match(on, /\]\(command:codexGoalRecovery\.pauseAutoRecovery\)/);
      assert.doesNotMatch(on, /resumeAutoRecovery/);
      assert.match(on, /\]\(command:codexGoalRecovery\.showLog\)/);
      assert.match(on, /\]\(command:codexGoalRecovery\.openSettings\)/);
      bar.render(snapshot([backoff()], { pausedAt: NOW }), NOW);
      const paused = bar.shown().markdown;
      assert.match(paused, /\]\(command:codexGoalRecovery\.resumeAutoRecovery\)/);
      assert.doesNotMatch(paused, /pauseAutoRecovery/);
      assert.match(bar.shown().tooltip, /^Auto-recovery is paused\.$/m);
      // Every command: link in it is one of ours.
      for (const m of paused.matchAll(/\(command:([^)?]+)/g)) assert.match(m[1], /^codexGoalRecovery\./);
    } finally {
      bar.dispose();
    }
  });
});

suite('Copy Diagnostics', function () {
  this.timeout(30_000);

  test('puts a report with every section on the clipboard, and no environment', async () => {
    const api = await vscode.extensions.getExtension<CodexGoalRecoveryApi>(EXTENSION_ID)!.activate();
    await vscode.env.clipboard.writeText('');
    await vscode.commands.executeCommand('codexGoalRecovery.copyDiagnostics');
    const text = await vscode.env.clipboard.readText();
    for (const heading of [
      /^## Codex Goal Recovery diagnostics$/m,
      /^- Extension: \d+\.\d+\.\d+/m,
      /^- VS Code: \d+\.\d+/m,
      /^- OS: \w+ /m,
      /^- Role: (leader|follower)/m,
      /^- Leader: \S/m,
      /^- Target: \//m,
      /^- Socket check: (ok|missing|refused)/m,
      /^- Daemon Codex: .*tested 0\.169\.0–0\.171\.0/m,
      /^- Policy( \(machine-wide\): retry after |: not known yet)/m,
      /^### Goals \(\d+\)$/m,
      /^### Recent log \(last \d+ lines\)$/m,
      /\[info\] \S+ activated in /,
    ])
      assert.match(text, heading);
    assert.match(text, new RegExp(`^- Target: ${api.snapshot().target.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    // No environment dump: not even HOME or PATH.
    assert.ok(!text.includes(process.env.PATH ?? '\u0000'), 'PATH is in the report');
    assert.doesNotMatch(text, /\bPATH=|\bHOME=/);
  });
});

suite("Copy Diagnostics' Report an Issue link", () => {
  test("opens a new issue of the manifest's tracker, with the version and a template, never the report", () => {
    const manifest = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as {
      version: string;
      bugs: { url: string };
    };
    assert.match(manifest.bugs.url, /^https:\/\/github\.com\/[^/]+\/[^/]+\/issues$/);
    const url = new URL(newIssueUrl(manifest)!);
    assert.equal(`${url.origin}${url.pathname}`, `${manifest.bugs.url}/new`);
    const body = url.searchParams.get('body') ?? '';
    assert.match(body, new RegExp(`^Codex Goal Recovery ${manifest.version.replace(/\./g, '\\.')}\n`));
    assert.match(body, /paste them here/);
    assert.doesNotMatch(body, /## Codex Goal Recovery diagnostics|Target:/, 'the report itself is not sent');
    assert.equal(url.searchParams.get('labels'), 'bug');
  });

  test('no link without an https tracker', () => {
    assert.equal(newIssueUrl({ version: '1.0.0' }), null);
    assert.equal(newIssueUrl({ version: '1.0.0', bugs: { url: 'http://example.com/issues' } }), null);
    assert.equal(newIssueUrl({ version: '1.0.0', bugs: 'https://example.com/issues' }), null);
    assert.equal(newIssueUrl(undefined), null);
    assert.ok(
      newIssueUrl({ version: '1.0.0', bugs: { url: 'https://example.com/issues/' } })!.startsWith(
        'https://example.com/issues/new?',
      ),
    );
  });
});

suite('Copy Diagnostics masks what looks like a credential in a log line', () => {
  test('bearer tokens, API keys, token= and sk- keys', () => {
    assert.equal(maskSecrets('Authorization: Bearer abc.def-123'), 'Authorization: Bearer ***');
    assert.equal(maskSecrets('OPENAI_API_KEY=sk-proj-abcdefgh1234'), 'OPENAI_API_KEY=***');
    assert.equal(maskSecrets('{"token": "xyz987"} then'), '{"token": "***"} then');
    assert.equal(maskSecrets('key sk-abcdefghijkl in text'), 'key sk-*** in text');
    assert.equal(
      maskSecrets('armed t-1: watching "Rotate the signing keys"'),
      'armed t-1: watching "Rotate the signing keys"',
    );
  });
});
