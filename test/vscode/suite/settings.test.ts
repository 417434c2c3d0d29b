/// <reference types="mocha" />
// The engine's policy is machine-wide (issue 12): every engine setting is machine-scoped in the
// manifest, with a range, and `readSettings` takes the user's (or remote machine's) value, never a
// workspace's, whatever the workspace says and whether it is trusted. Read through a
// WorkspaceConfiguration whose `inspect` holds both values, as VS Code's does.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { readSettings } from '../../../src/config/settings';
import { POLICY_LIMITS } from '../../../src/core/options';
import { DEFAULT_OPTIONS } from '../../../src/core/options';
import { policyLine } from '../../../src/views/statusBar';

const ENGINE_SETTINGS = [
  'baseDelaySeconds',
  'maxDelaySeconds',
  'maxAttempts',
  'autoArm',
  'recoverUsageLimited',
  'resyncIntervalSeconds',
] as const;

/** A configuration with a user (global) value and a workspace value per key. */
function configuration(
  values: Record<string, { global?: unknown; workspace?: unknown }>,
): vscode.WorkspaceConfiguration {
  const effective = (key: string) => values[key]?.workspace ?? values[key]?.global;
  return {
    get: (key: string, fallback?: unknown) => effective(key) ?? fallback,
    inspect: (key: string) => ({
      key,
      globalValue: values[key]?.global,
      workspaceValue: values[key]?.workspace,
    }),
    has: (key: string) => effective(key) !== undefined,
    update: () => Promise.resolve(),
  } as unknown as vscode.WorkspaceConfiguration;
}

suite('the engine policy is machine-wide', () => {
  test('every engine setting is machine-scoped in the manifest, with the range readSettings keeps', () => {
    const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../../../package.json'), 'utf8')) as {
      contributes: {
        configuration: { properties: Record<string, { scope?: string; minimum?: number; maximum?: number }> };
      };
    };
    const props = manifest.contributes.configuration.properties;
    for (const key of ENGINE_SETTINGS) {
      const p = props[`codexGoalRecovery.${key}`];
      assert.ok(p, `${key} is not in the manifest`);
      assert.equal(p.scope, 'machine', `${key} is not machine-scoped`);
      if (key in POLICY_LIMITS) {
        const limits = POLICY_LIMITS[key as keyof typeof POLICY_LIMITS];
        assert.deepEqual([p.minimum, p.maximum], [limits.min, limits.max], `${key}: the manifest's range`);
      }
    }
  });

  test("a workspace's values are never the policy; the user's are, kept inside their range", () => {
    const s = readSettings(
      configuration({
        baseDelaySeconds: { global: 10, workspace: 0.1 },
        maxDelaySeconds: { global: 10_000_000, workspace: 1 },
        maxAttempts: { global: 3, workspace: 1_000 },
        autoArm: { global: false, workspace: true },
        recoverUsageLimited: { workspace: false },
        resyncIntervalSeconds: { global: 0, workspace: 5 },
      }),
      {},
    );
    assert.equal(s.options.baseDelayMs, 10_000);
    assert.equal(s.options.maxDelayMs, POLICY_LIMITS.maxDelaySeconds.max * 1000, 'not clamped to its maximum');
    assert.equal(s.options.maxAttempts, 3);
    assert.equal(s.options.autoArm, false, "the workspace's autoArm was taken");
    assert.equal(s.options.recoverUsageLimited, DEFAULT_OPTIONS.recoverUsageLimited);
    assert.equal(s.options.resyncMs, POLICY_LIMITS.resyncIntervalSeconds.min * 1000, 'not clamped to its minimum');
  });

  test('the policy in force reads the same in words wherever it is shown', () => {
    assert.equal(
      policyLine({
        baseDelayMs: 30_000,
        maxDelayMs: 1_800_000,
        maxAttempts: 6,
        autoArm: true,
        recoverUsageLimited: false,
        resyncMs: 60_000,
      }),
      'Policy (machine-wide): retry after 30 s, doubling up to 30 min, at most 6 tries; adopt new goals on; resume after usage limits off',
    );
  });
});
