// The service files in docs/service (docs/runner.md, "Run it as a service") run the runner as it
// says: the same install path, a `watch` command line the runner accepts (its command line is a
// public contract), JSON lines for the journal or the log file, and Node started with the runner
// bin's runtime flags (its shebang, scripts/build.mjs; test/integration/runnerBin.test.ts checks
// the built file): they keep the runner's memory flat (docs/performance.md, "Soak").
// `.ci/verify-service.sh` has systemd itself check the unit (`systemd-analyze --user verify`), and
// a plist parser read the launchd agent (`.ci/verify-launchd.py`, Python's plistlib).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { parseCli } from '../../src/runner/args';

const root = path.resolve(__dirname, '../../..');
const INSTALLED = '.local/lib/node_modules/codex-goal-recovery/dist/cli.js';
/** What the runner's Node must be started with (docs/performance.md, "Soak"). */
const NODE_FLAGS = '--single-threaded --optimize-for-size';

/** The words after the installed cli.js in a command line. */
function runnerArgs(commandLine: string): string[] {
  const at = commandLine.indexOf(INSTALLED);
  assert.ok(at >= 0, `the command line does not run ${INSTALLED}: ${commandLine}`);
  const rest = commandLine.slice(at + INSTALLED.length).replace(/^"/, '');
  return rest
    .split(/\s+/)
    .filter(Boolean)
    .filter((w, i, all) => !w.startsWith('>') && !all.slice(0, i).some((x) => x.startsWith('>')));
}

test('the systemd user unit runs `watch --json` from the documented install path, stopped by SIGTERM', () => {
  const unit = fs.readFileSync(path.join(root, 'docs/service/codex-goal-recovery.service'), 'utf8');
  const exec = /^ExecStart=(.*)$/m.exec(unit)?.[1];
  assert.ok(exec, 'no ExecStart');
  assert.ok(exec.startsWith(`/usr/bin/env node ${NODE_FLAGS} %h/`), exec);
  const args = parseCli(runnerArgs(exec), {});
  assert.equal(args.command, 'watch');
  assert.equal(args.command === 'watch' && args.json, true, 'not JSON lines for the journal');
  assert.match(unit, /^KillSignal=SIGTERM$/m);
  assert.match(unit, /^StandardOutput=journal$/m);
  assert.match(unit, /^Restart=on-failure$/m, 'a clean stop (exit 0) must not be restarted; a crash must');
});

test('the launchd agent runs the same command line, its JSON lines to a log file', () => {
  const plist = fs.readFileSync(path.join(root, 'docs/service/com.codex-goal-recovery.plist'), 'utf8');
  const strings = [...plist.replace(/<!--[\s\S]*?-->/g, '').matchAll(/<string>([^<]*)<\/string>/g)].map((m) =>
    m[1].replace(/&amp;/g, '&'),
  );
  assert.deepEqual(strings.slice(1, 3), ['/bin/sh', '-c'], 'not run through a shell that expands $HOME');
  const command = strings[3];
  assert.ok(command.startsWith(`exec node ${NODE_FLAGS} "$HOME/${INSTALLED}" `), command);
  const args = parseCli(runnerArgs(command), {});
  assert.equal(args.command, 'watch');
  assert.equal(args.command === 'watch' && args.json, true);
  assert.match(command, />>"\$HOME\/Library\/Logs\/codex-goal-recovery\.jsonl" 2>&1$/);
});
