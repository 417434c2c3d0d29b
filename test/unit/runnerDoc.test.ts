// docs/runner.md and the README say what the runner does: these tests keep them true by
// construction. The `--json` type table has one row per line type the runner can write (every
// decision's, and the runner's own: src/runner/lines.ts), and no other; the flag table lists
// exactly the flags `watch` takes; the exit-code table the codes the runner uses; every example
// command line in either page parses; and the `status` example is what `status` prints for the
// state it shows (made here from a snapshot of that state, as the leading engine pushes it).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DECISION_TYPES } from '../../src/model/decision';
import type { EngineSnapshot } from '../../src/model/snapshot';
import { newWatch } from '../../src/model/watch';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import { parseCli, UsageError, WATCH_OPTIONS } from '../../src/runner/args';
import { EXIT } from '../../src/runner/control';
import { RUNNER_LINE_TYPES } from '../../src/runner/lines';
import { reportFromSnapshot, statusText } from '../../src/runner/statusReport';
import { ROOT } from '../support/layers';

const runnerDoc = fs.readFileSync(path.join(ROOT, 'docs', 'runner.md'), 'utf8');
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The section of a page under `heading` (to the next heading of its level). */
function section(page: string, heading: string): string {
  const start = page.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `no section "${heading}"`);
  const level = heading.split(' ')[0];
  const rest = page.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`\\n${level} `));
  return end < 0 ? rest : rest.slice(0, end);
}

/** The backquoted names in the first column of a section's table rows (not its header row). */
function firstColumn(text: string): string[] {
  const lines = text.split('\n');
  return lines
    .filter((l, i) => l.startsWith('| `') && !lines[i + 1]?.startsWith('|---'))
    .flatMap((l) => [...(l.split('|')[1] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]));
}

describe('docs/runner.md, checked against the runner', () => {
  it('the --json table has a row for every line type the runner writes, and for no other', () => {
    const documented = firstColumn(section(runnerDoc, '## `watch --json`: one object per line'));
    const written = [...DECISION_TYPES, ...RUNNER_LINE_TYPES];
    assert.deepEqual(
      [...new Set(documented)].sort(),
      [...new Set(written)].sort(),
      'documented (left) and written (right) differ',
    );
    assert.equal(documented.length, new Set(documented).size, 'a type documented twice');
    assert.ok(
      DECISION_TYPES.every((t) => typeof t === 'string') && DECISION_TYPES.includes('gave-up'),
      `the decision types, as read from the schema: ${DECISION_TYPES.join(' ')}`,
    );
  });

  it('the flag table lists exactly the flags watch takes', () => {
    const rows = runnerDoc.split('\n').filter((l) => /^\| `--[a-z-]+/.test(l));
    const documented = rows.map((l) => /^\| `(--[a-z-]+)/.exec(l)![1]);
    const taken = Object.keys(WATCH_OPTIONS)
      .filter((k) => k !== 'help')
      .map((k) => `--${k}`);
    assert.deepEqual([...documented].sort(), [...taken].sort());
  });

  it('the exit-code table has each code the runner uses, once', () => {
    const codes = section(runnerDoc, '## Exit codes')
      .split('\n')
      .flatMap((l) => /^\| (\d) \|/.exec(l)?.[1] ?? []);
    assert.deepEqual(codes.map(Number), [...new Set(Object.values(EXIT))].sort());
  });

  it('every example command line in docs/runner.md and the README parses', () => {
    const examples = [runnerDoc, readme].flatMap((page) =>
      [...page.matchAll(/```[a-z]*\n([\s\S]*?)```/g)]
        .flatMap((m) => m[1].split('\n'))
        .concat([...page.matchAll(/`((?:npx )?codex-goal-recovery [^`]+)`/g)].map((m) => m[1]))
        .map((l) =>
          l
            .replace(/^\$ /, '')
            .replace(/^npx /, '')
            .replace(/\s+#.*$/, '')
            .trim(),
        )
        .filter((l) => l.startsWith('codex-goal-recovery ') && !/[[|…<]/.test(l) && !l.includes(' ...')),
    );
    assert.ok(examples.length >= 8, `only ${examples.length} examples found`);
    for (const line of examples) {
      const argv = line
        .split(/\s+/)
        .slice(1)
        .map((w) => w.replace(/^~/, '/home/me'));
      try {
        parseCli(argv, { HOME: '/home/me' }, () => true);
      } catch (error) {
        if (error instanceof UsageError) assert.fail(`"${line}": ${error.message}`);
        throw error;
      }
    }
  });

  it('the Node the runner needs, as the README and docs/runner.md say it, is the package’s engines.node', () => {
    const engines = (
      JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }
    ).engines.node;
    const major = /^>=(\d+)$/.exec(engines)?.[1];
    assert.ok(major, `engines.node is ">=N": ${engines}`);
    assert.match(readme, new RegExp(`Node ${major} or later for the runner`));
    assert.match(runnerDoc, new RegExp(`only Node ${major} or later`));
  });

  it('the status example is what status prints for the state it shows', () => {
    const block = /\n```\n\$ codex-goal-recovery status\n([\s\S]*?)```/.exec(runnerDoc);
    assert.ok(block, 'no status example');
    const now = Date.UTC(2026, 11, 5, 9, 30);
    const failing = newWatch('019a…', now - 600_000);
    failing.title = 'fix the flaky test';
    failing.failures = 1;
    failing.state = { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' };
    failing.lastFailure = {
      turnId: 'turn-1',
      message: 'stream disconnected before completion',
      code: 'responseStreamDisconnected',
      httpStatus: null,
      at: now - 9_000,
      dueAt: now + 21_000,
    };
    failing.recoveries = [now - 3_600_000];
    const done = newWatch('019b…', now - 7_200_000);
    done.title = 'write the release notes';
    done.state = { kind: 'complete' };
    const policy = { ...DEFAULT_OPTIONS };
    const snapshot: EngineSnapshot = {
      at: now,
      connection: { kind: 'connected', detail: 'ok', codexVersion: '0.171.0' },
      target: '/home/me/.codex/app-server-control/app-server-control.sock',
      pausedAt: null,
      maxAttempts: policy.maxAttempts,
      policy: {
        baseDelayMs: policy.baseDelayMs,
        maxDelayMs: policy.maxDelayMs,
        maxAttempts: policy.maxAttempts,
        autoArm: policy.autoArm,
        recoverUsageLimited: policy.recoverUsageLimited,
        resyncMs: policy.resyncMs,
        recoveryBudget: policy.recoveryBudget,
      },
      nextDueAt: now + 21_000,
      watches: [failing, done],
    };
    const report = reportFromSnapshot(snapshot, { who: 'runner', pid: 777 }, { kind: 'running', detail: 'ok' });
    assert.equal(block[1], statusText(report, now));
  });
});
