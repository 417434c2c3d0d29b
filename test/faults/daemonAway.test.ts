// The daemon away for five minutes, as an operator's runner meets it: one real daemon (the pinned
// @openai/codex, a private CODEX_HOME, the project's mock model) stopped with `codex app-server
// daemon stop` under a runner (dist/cli.js --json) and started again five minutes later
// (`daemon start`). With the shipped reconnect backoff (0.5 s doubling to 30 s) that is about
// fifteen failed tries. The runner must say it once, as a `warning` (what `journalctl -p warning`
// shows), keep its tries quiet (debug: printed only with --verbose), and say once, as a `notice`,
// that the daemon is back; meanwhile `status` says the daemon is not running and exits 4, and once
// it is back, exits 0 again. A goal armed before keeps being watched. Shipped defaults throughout.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startDaemon, stopDaemon } from '../../src/demo/managedDaemon';
import type { StatusReport } from '../../src/runner/statusReport';
import { DaemonLab } from '../support/daemonLab';
import { RunnerProcess, runCli } from '../support/runnerProcess';
import { sleep, tempDir } from '../support/wait';

/** How long the daemon stays away: the five minutes. */
const AWAY_MS = 5 * 60_000;
const T = 60_000;

let lab: DaemonLab;
let runner: RunnerProcess;
/** The runner's default state file goes under the test's own XDG_STATE_HOME. */
const ENV = { XDG_STATE_HOME: tempDir('cgr-away-state-') };

before(async () => {
  lab = await DaemonLab.start();
});
after(async () => {
  await runner?.kill();
  await lab?.close();
});

async function status(): Promise<{ code: number | null; report: StatusReport; text: string }> {
  const json = await runCli(['status', '--json', '--codex-home', lab.home.dir], ENV);
  const text = await runCli(['status', '--codex-home', lab.home.dir], ENV);
  assert.equal(text.status, json.status);
  return { code: json.status, report: JSON.parse(json.stdout) as StatusReport, text: text.stdout };
}

describe('the daemon away for five minutes', () => {
  it(
    'one warning when it goes, quiet tries, one notice when it is back; status exits 4 meanwhile',
    { timeout: AWAY_MS + 5 * T },
    async () => {
      runner = new RunnerProcess(['--codex-home', lab.home.dir], ENV);
      await runner.connected(T);
      const t = await lab.goal('a goal watched across the daemon’s absence');
      await runner.waitFor((d) => d.type === 'armed' && d.threadId === t.threadId, T, 'the arming');
      assert.equal((await status()).code, 0);

      await stopDaemon(lab.home.dir);
      const gone = Date.now();
      await runner.waitFor((d) => d.type === 'connection' && d.state !== 'connected', T, 'the loss');
      const down = await status();
      assert.equal(down.code, 4, down.text);
      assert.equal(down.report.daemon.kind, 'stopped');
      assert.match(down.text, /^daemon: not running \(/m);
      await sleep(AWAY_MS - (Date.now() - gone));
      await startDaemon(lab.home.dir);
      const back = await runner.waitFor(
        (d) => d.type === 'connection' && d.state === 'connected' && Number(d.tries) > 0,
        2 * T,
        'the return',
      );

      const lines = runner.decisions.filter((d) => d.type === 'connection');
      const said = lines.map((d) => `${String(d.level)} ${String(d.state)}`);
      assert.deepEqual(said, ['info connected', 'warning disconnected', 'notice connected'], runner.transcript());
      // The tries were made (quietly): the return counts them, about fifteen in five minutes.
      assert.ok(Number(back.tries) >= 10, `back after ${String(back.tries)} tries`);
      assert.equal(runner.decisions.filter((d) => d.level === 'warning').length, 1, runner.transcript());
      assert.equal((await status()).code, 0);
      assert.equal(await runner.stop(), 0, runner.transcript());
      assert.ok(
        runner.decisions.every((d) => d.type !== 'attention' && d.type !== 'gave-up'),
        'nothing of the goal’s was touched by the daemon’s absence',
      );
    },
  );
});
