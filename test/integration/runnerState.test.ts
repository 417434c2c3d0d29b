// One state file per daemon, with real runner processes (dist/cli.js) and two real Codex daemons
// (the pinned @openai/codex, each in a private CODEX_HOME, with the project's mock model):
//  - two runners on two Codex homes with the default state keep two files; a pause on one is not
//    seen on the other; `status` reads the file of the daemon it names;
//  - the file every daemon shared before 0.4.0 is taken over by each daemon's first runner, for its
//    own threads, without loss, said once; a runner of a third home takes nothing from it, and says so;
//  - an explicit --state another daemon's engine keeps is refused (exit 2), and so is a --codex-home
//    that is not a directory.
// Shipped defaults throughout. XDG_STATE_HOME is the test's own (where the default files go).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { electionFor } from '../../src/leader/naming';
import { emptyState, type PersistedState } from '../../src/model/watch';
import { JsonFileStore, readStateFile } from '../../src/store/jsonFileStore';
import { readHead } from '../../src/store/snapshotHead';
import type { StatusReport } from '../../src/runner/statusReport';
import { DaemonLab } from '../support/daemonLab';
import { RunnerProcess, runCli } from '../support/runnerProcess';
import { tempDir, until } from '../support/wait';

const T = 60_000;

let a: DaemonLab;
let b: DaemonLab;
let stateHome: string;
const runners: RunnerProcess[] = [];

before(async () => {
  [a, b] = await Promise.all([DaemonLab.start(), DaemonLab.start()]);
  stateHome = tempDir('cgr-state-home-');
});
after(async () => {
  for (const r of runners) await r.kill();
  await a?.close();
  await b?.close();
});

const stateDir = () => path.join(stateHome, 'codex-goal-recovery');
const ENV = () => ({ XDG_STATE_HOME: stateHome, CODEX_HOME: '' });

function runner(home: string, extra: string[] = []): RunnerProcess {
  const r = new RunnerProcess(['--codex-home', home, ...extra], ENV());
  runners.push(r);
  return r;
}

async function status(home: string): Promise<{ code: number | null; report: StatusReport }> {
  const r = await runCli(['status', '--json', '--codex-home', home], ENV());
  return { code: r.status, report: JSON.parse(r.stdout) as StatusReport };
}

/** A runner on `home` with an explicit --state that arms a new goal, stopped: its watch, as saved. */
async function armedWatch(lab: DaemonLab, file: string) {
  const r = runner(lab.home.dir, ['--state', file]);
  await r.connected(T);
  const t = await lab.goal(`a goal of ${path.basename(lab.home.dir)}`);
  await r.waitFor((d) => d.type === 'armed' && d.threadId === t.threadId, T, 'the arming');
  assert.equal(await r.stop(), 0, r.transcript());
  const stored = await readStateFile(file);
  assert.ok(stored.kind === 'state');
  const w = stored.state.watches[t.threadId];
  assert.ok(w?.rolloutPath?.startsWith(lab.home.dir), `its rollout is under its home: ${w?.rolloutPath}`);
  return w;
}

describe('the runner’s state: one file per daemon', () => {
  it(
    'the shared file from before 0.4.0 is taken over by each home’s first runner, its own threads only, once; two homes then keep two files and their own pauses',
    { timeout: 6 * T },
    async () => {
      const scratch = tempDir('cgr-state-scratch-');
      const [wa, wb] = [
        await armedWatch(a, path.join(scratch, 'a.json')),
        await armedWatch(b, path.join(scratch, 'b.json')),
      ];
      // The old default file, as a 0.3 runner of home A left it: both homes' threads (two leaders
      // wrote it in turn), a pause of every recovery, and the term of A's election in its snapshot.
      const shared: PersistedState = emptyState();
      shared.watches[wa.threadId] = wa;
      shared.watches[wb.threadId] = wb;
      shared.pausedAt = Date.now() - 60_000;
      const sharedFile = path.join(stateDir(), 'state.json');
      const electionA = electionFor({ kind: 'socket', path: a.socket })!.name;
      const old = new JsonFileStore(sharedFile, {
        guard: { fence: () => null, term: () => ({ n: 3, of: electionA }) },
      });
      await old.load();
      await old.save(shared);
      await old.compact();
      await old.close();
      const sharedBytes = fs.readFileSync(sharedFile, 'utf8');

      const ra = runner(a.home.dir);
      const rb = runner(b.home.dir);
      const none = tempDir('cgr-home-c-'); // a third home: no daemon, no thread in the shared file
      const rc = runner(none);
      for (const r of [ra, rb, rc]) await r.waitFor((d) => d.type === 'takeover', T, 'the takeover line');
      const took = (r: RunnerProcess) => {
        const [t] = r.of('takeover');
        return { threads: t.threads, left: t.left, paused: t.paused, level: t.level };
      };
      assert.deepEqual(took(ra), { threads: [wa.threadId], left: 1, paused: true, level: 'notice' });
      assert.deepEqual(took(rb), { threads: [wb.threadId], left: 1, paused: true, level: 'notice' });
      assert.deepEqual(took(rc), { threads: [], left: 2, paused: false, level: 'notice' });

      // Each engine reports its own threads; a pause lifted on one home stays on the other.
      await ra.connected(T);
      await rb.connected(T);
      const ids = (r: StatusReport) => r.watches.map((w) => w.threadId).sort();
      const [sa, sb, sc] = [await status(a.home.dir), await status(b.home.dir), await status(none)];
      assert.deepEqual([sa.report.source, ids(sa.report), sa.report.paused], ['engine', [wa.threadId], true]);
      assert.deepEqual([sb.report.source, ids(sb.report), sb.report.paused], ['engine', [wb.threadId], true]);
      assert.deepEqual(
        [ids(sc.report), sc.report.paused, sc.code],
        [[], false, 4],
        'C: nothing, not paused, no daemon',
      );
      const resumed = await runCli(['resume', '--codex-home', b.home.dir], ENV());
      assert.equal(resumed.status, 0, resumed.stderr);
      assert.equal((await status(b.home.dir)).report.paused, false);
      assert.equal((await status(a.home.dir)).report.paused, true, 'B’s resume is not A’s');
      // docs/runner.md's status example, as a real run prints it: its engine, policy and pause lines
      // (the example's thread lines are checked against statusText by runnerDoc.test.ts).
      const text = await runCli(['status', '--codex-home', b.home.dir], ENV());
      const example = /\n```\n\$ codex-goal-recovery status\n([\s\S]*?)```/.exec(
        fs.readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'runner.md'), 'utf8'),
      )![1];
      const shape = (t: string) =>
        t
          .split('\n')
          .slice(0, 3)
          .map((l) =>
            l
              .replace(/pid \d+/, 'pid N')
              .replace(/watching \S+/, 'watching S')
              .replace(/codex [\d.]+/, 'codex V'),
          );
      assert.deepEqual(shape(text.stdout), shape(example), text.stdout);

      for (const r of [ra, rb, rc]) assert.equal(await r.stop(), 0, r.transcript());
      const files = fs
        .readdirSync(stateDir())
        .filter((n) => n.endsWith('.json'))
        .sort();
      assert.equal(files.length, 4, files.join(' '));
      assert.ok(files.includes('state.json'));
      assert.equal(fs.readFileSync(sharedFile, 'utf8'), sharedBytes, 'the shared file is left as it was');
      // From the files now (no engine runs): each home's own, where status looks for it.
      const fa = await status(a.home.dir);
      const fb = await status(b.home.dir);
      assert.deepEqual([fa.report.source, ids(fa.report), fa.report.paused], ['stateFile', [wa.threadId], true]);
      assert.deepEqual([ids(fb.report), fb.report.paused], [[wb.threadId], false]);
      assert.notEqual(fa.report.stateFile, fb.report.stateFile);

      // Said once: a runner started again on home A finds its file and takes nothing again.
      const again = runner(a.home.dir);
      await again.connected(T);
      assert.equal(await again.stop(), 0, again.transcript());
      assert.deepEqual(again.of('takeover'), []);
    },
  );

  it(
    'an explicit --state another daemon’s engine keeps is refused, exit 2, before it runs (no election, no telemetry); so is a --codex-home that is not a directory',
    { timeout: 2 * T },
    async () => {
      const scratch = tempDir('cgr-state-refused-');
      const file = path.join(scratch, 'one.json');
      const first = runner(a.home.dir, ['--state', file]);
      await first.connected(T);
      // Stamped by its first save, which may follow the connection (a busy machine): only then is
      // the file another daemon's.
      const stamped = () => fs.existsSync(file) && readHead(fs.readFileSync(file, 'utf8')).daemon !== null;
      await until('the first runner stamped its file', stamped, T);
      // With telemetry asked for too (a loopback port nothing listens on): nothing starts before the refusal.
      const second = runner(b.home.dir, ['--state', file, '--otlp-endpoint', 'http://127.0.0.1:9']);
      await second.waitFor(() => false, 10_000).catch(() => undefined);
      assert.equal(second.running, false, second.transcript());
      assert.equal(second.exitCode, 2);
      assert.ok(
        second.stderr.some((l) =>
          l.startsWith(
            `codex-goal-recovery: state file ${file} keeps the state of another daemon (${a.socket}), not of ${b.socket}`,
          ),
        ),
        second.transcript(),
      );
      assert.deepEqual(
        second.decisions.filter((d) => d.type === 'role'),
        [],
        'it never joined an election',
      );
      assert.deepEqual(
        second.decisions.filter((d) => d.type === 'telemetry'),
        [],
        'its telemetry never started',
      );
      assert.equal(await first.stop(), 0, first.transcript());
      const stored = await readStateFile(file);
      assert.ok(stored.kind === 'state' && stored.daemon === a.socket, 'still A’s');

      const missing = path.join(scratch, 'no-such-home');
      const r = await runCli(['watch', '--codex-home', missing], ENV());
      assert.equal(r.status, 2, r.stdout + r.stderr);
      assert.match(r.stderr, new RegExp(`^codex-goal-recovery: --codex-home ${missing}: not a directory`));
      assert.equal(r.stdout, '');
    },
  );
});
