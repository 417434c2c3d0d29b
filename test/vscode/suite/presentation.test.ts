/// <reference types="mocha" />
// How a watched thread shows in the real VS Code: the tree row's actions (context value), its
// tooltip, and the status-bar item, for a failed goal on a thread the daemon has not loaded.
import * as assert from 'node:assert/strict';
import { emptySnapshot, type EngineSnapshot } from '../../../src/model/snapshot';
import { newWatch, withRecovered, type WatchedThread, type WatchState } from '../../../src/model/watch';
import { contextValue, tooltip } from '../../../src/views/presentation';
import { RecoveryStatusBar } from '../../../src/views/statusBar';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

function watch(
  id: string,
  state: WatchState,
  goal: 'active' | 'blocked' | 'complete',
  failedTurnId: string | null,
): WatchedThread {
  const w = newWatch(id, NOW - 60_000);
  w.state = state;
  w.goal = {
    status: goal,
    objective: `objective of ${id}`,
    tokensUsed: 1200,
    tokenBudget: null,
    updatedAt: NOW - 1000,
  };
  if (failedTurnId) {
    w.failures = 1;
    w.lastFailure = {
      turnId: failedTurnId,
      message: 'stream disconnected',
      code: 'other',
      httpStatus: null,
      at: NOW - 30_000,
      dueAt: NOW + 30_000,
    };
  }
  return w;
}

function connected(watches: WatchedThread[]): EngineSnapshot {
  return {
    ...emptySnapshot('/tmp/codex/app-server.sock', NOW),
    connection: { kind: 'connected', detail: 'test daemon' },
    watches,
  };
}

suite('presentation of a thread the daemon has not loaded', () => {
  const stranded = watch('t-stranded', { kind: 'unloaded' }, 'blocked', 'turn-1');
  const recovered = watch('t-recovered', { kind: 'unloaded' }, 'blocked', 'turn-1');
  recovered.recovered = withRecovered(recovered.recovered, 'turn-1');
  const healthy = watch('t-healthy', { kind: 'unloaded' }, 'active', null);

  test('Retry now is offered on a failed goal not recovered yet, and only there', () => {
    assert.match(contextValue(stranded), /\bretry\b/);
    assert.doesNotMatch(contextValue(recovered), /\bretry\b/);
    assert.doesNotMatch(contextValue(healthy), /\bretry\b/);
  });

  test('the tooltip says how the next try comes', () => {
    assert.match(
      tooltip(stranded, NOW, 6).value,
      /Next try: when a client opens the thread, or Retry now \\\(loads it\\\)/,
    );
    assert.doesNotMatch(tooltip(healthy, NOW, 6).value, /Next try/);
  });

  test('the status bar counts failed goals on unloaded threads, below retries and attention', () => {
    const bar = new RecoveryStatusBar('codexGoalRecovery.watchedGoals.focus');
    try {
      bar.render(connected([stranded, recovered, healthy]), NOW);
      assert.equal(bar.shown().text, '$(cloud-offline) 1 not loaded');
      assert.match(bar.shown().tooltip, /^1 blocked on a thread the daemon has not loaded: Retry now loads it$/m);
      bar.render(connected([recovered, healthy]), NOW);
      assert.equal(bar.shown().text, '$(pass) 2 watched');
      assert.doesNotMatch(bar.shown().tooltip, /not loaded/);
      const due = watch('t-due', { kind: 'backoff', attempt: 1, failedTurnId: 'turn-9' }, 'blocked', 'turn-9');
      bar.render({ ...connected([stranded, due]), nextDueAt: NOW + 42_000 }, NOW);
      assert.equal(bar.shown().text, '$(history) retry in 0:42');
    } finally {
      bar.dispose();
    }
  });
});

suite('presentation of goals in other Codex apps, and of the daemon’s Codex version', () => {
  const elsewhere = (id: string, goal: 'active' | 'blocked', retryable: boolean): WatchedThread => {
    const w = watch(id, { kind: 'elsewhere', since: NOW - 90_000, goal, seenActive: false, retryable }, goal, null);
    if (goal === 'blocked')
      w.lastFailure = {
        turnId: `${id}-turn`,
        message: 'We’re currently experiencing high demand',
        code: 'internalServerError',
        httpStatus: null,
        at: NOW - 12 * 60_000,
        dueAt: null,
      };
    return w;
  };
  const stopped = elsewhere('t-stopped', 'blocked', true);
  const running = elsewhere('t-running', 'active', false);
  const permanent = elsewhere('t-permanent', 'blocked', false);

  test('the row offers Retry now only on a goal stopped there by a failure a retry can get past', () => {
    assert.match(contextValue(stopped), /\bretry\b/);
    assert.doesNotMatch(contextValue(running), /\bretry\b/);
    assert.doesNotMatch(contextValue(permanent), /\bretry\b/);
  });

  test('the tooltip says where it runs, its error and age, and what the person can do', () => {
    const text = tooltip(stopped, NOW, 6).value;
    assert.match(text, /blocked in another Codex app · server error, 12 min ago/);
    assert.match(text, /Where: another Codex app \\\(the Codex VS Code extension/);
    assert.match(text, /What you can do: continue it in that app, or close the thread there and use Retry now/);
    assert.match(tooltip(running, NOW, 6).value, /What you can do: nothing: it runs there/);
  });

  test('the status bar counts the goals stopped there, and warns of an untested Codex version', () => {
    const bar = new RecoveryStatusBar('codexGoalRecovery.watchedGoals.focus');
    try {
      bar.render(connected([stopped, running]), NOW);
      assert.equal(bar.shown().text, '$(link-external) 1 stopped in another app');
      assert.match(
        bar.shown().tooltip,
        /^2 in other Codex apps \(1 stopped there\): shown, recovered only by Retry now$/m,
      );
      const snap = connected([running]);
      bar.render(
        {
          ...snap,
          connection: {
            kind: 'connected',
            detail: 'test daemon · Codex 0.180.0',
            codexVersion: '0.180.0',
            versionWarning: 'Codex 0.180.0 is newer than the tested 0.169.0–0.171.0',
          },
        },
        NOW,
      );
      assert.match(bar.shown().tooltip, /^Connected: test daemon · Codex 0\.180\.0$/m);
      assert.match(bar.shown().tooltip, /^Warning: Codex 0\.180\.0 is newer than the tested/m);
    } finally {
      bar.dispose();
    }
  });
});
