// `npm start`: a live demo against the real Codex app-server. A private CODEX_HOME, the
// project's flaky mock model on 127.0.0.1, the Codex daemon, a "user" who gives a thread a
// goal, and the headless runner watching it. The model breaks, the goal blocks, the runner
// backs off and re-activates it until the model is back and the goal completes.
// Everything it starts is stopped, everything it writes is removed, and it exits 0 on success.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { makeCodexHome, type CodexHome } from './codexHome';
import { killAllTracked, signal, waitGone } from './codexProcesses';
import { controlSocketPath, startDaemon } from './managedDaemon';
import { startMockModel } from './mockModel';
import type { MockModel } from './mockModes';
import { startThreadWithGoal, waitGoalStatus } from './goalThreads';
import { UserClient } from './userClient';
import type { Notification } from './userClientLog';
import { parseJson } from '../rollout/markerLines';
import { errorText } from '../util/errorText';

const OUTAGE_TURNS = 2;
const DEADLINE_MS = 120_000;
const started = Date.now();

function say(who: string, text: string): void {
  const t = ((Date.now() - started) / 1000).toFixed(1).padStart(5);
  process.stdout.write(`${t}s  ${who.padEnd(7)} │ ${text}\n`);
}

interface RunnerLine {
  type: string;
  attempt?: number;
  [k: string]: unknown;
}

/** The fields of the daemon's goal and turn notifications that the narration reads. */
interface NarratedParams {
  goal?: { status?: string };
  turn?: { id?: string; status?: string; error?: { codexErrorInfo?: string | Record<string, unknown> | null } | null };
}

async function main(): Promise<number> {
  let mock: MockModel | undefined;
  let home: CodexHome | undefined;
  let user: UserClient | undefined;
  let runner: ReturnType<typeof spawn> | undefined;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-demo-'));
  const runnerLines: RunnerLine[] = [];
  try {
    mock = await startMockModel();
    say('demo', `mock model listening on ${mock.url} (loopback only)`);
    home = await makeCodexHome(mock.url);
    say('demo', `private CODEX_HOME ${home.dir}`);
    await startDaemon(home.dir);
    say('demo', `Codex app-server daemon started; control socket ${controlSocketPath(home.dir)}`);

    const state = path.join(work, 'state.json');
    const args = ['watch', '--codex-home', home.dir, '--state', state, '--base-delay', '1', '--max-delay', '4'];
    say('demo', `starting the runner: codex-goal-recovery ${args.join(' ')}`);
    runner = spawn(process.execPath, [path.resolve(__dirname, 'cli.js'), ...args, '--json'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    const runnerExit = new Promise<number | null>((resolve) => runner!.once('exit', (code) => resolve(code)));
    readline.createInterface({ input: runner.stdout! }).on('line', (line) => {
      const d = parseJson(line) as RunnerLine | undefined;
      if (d === undefined) return say('runner', line);
      runnerLines.push(d);
      say('runner', RUNNER_LINES.get(d.type)?.(d) ?? `${d.type}: ${JSON.stringify(d)}`);
    });
    await until(
      () => runnerLines.some((d) => d.type === 'connection' && d.state === 'connected'),
      'the runner to connect',
    );

    user = await UserClient.overSocket(controlSocketPath(home.dir), { name: 'demo-user' });
    user.onNotification((n) => narrate(n));
    mock.setMode('http500');
    say('model', `broken: every request answers HTTP 500 (for the first ${OUTAGE_TURNS} turns)`);
    const thread = await startThreadWithGoal(user, 'Write the release notes', { timeoutMs: 30_000 });
    say('user', `gave thread ${thread.threadId.slice(0, 8)}… the goal "Write the release notes"`);

    await until(
      () => runnerLines.filter((d) => d.type === 'backoff').length >= OUTAGE_TURNS,
      `${OUTAGE_TURNS} failed turns`,
    );
    mock.setMode('goalComplete');
    say('model', 'fixed: the next turn finishes the goal');
    await waitGoalStatus(user, thread.threadId, 'complete', DEADLINE_MS);
    await until(
      () => runnerLines.some((d) => d.type === 'recovered' && d.attempt === OUTAGE_TURNS),
      'the runner to confirm the recovery',
    );

    runner.kill('SIGINT');
    const code = await runnerExit;
    runner = undefined;
    const recoveries = runnerLines.filter((d) => d.type === 'recovered').length;
    say('demo', `runner stopped (exit ${code}); ${recoveries} recover${recoveries === 1 ? 'y' : 'ies'}, goal complete`);
    await thread.cleanup();
    return code === 0 && recoveries === OUTAGE_TURNS ? 0 : 1;
  } catch (error) {
    say('demo', `FAILED: ${errorText(error)}`);
    return 1;
  } finally {
    if (runner) signal(runner.pid!, 'SIGKILL', true);
    await user?.close().catch(() => undefined);
    await home?.cleanup(); // its daemon too, killed (no drain)
    await mock?.close();
    await killAllTracked();
    fs.rmSync(work, { recursive: true, force: true });
    say('demo', 'cleaned up: daemon, mock model, runner and temporary files are gone');
  }

  function narrate(n: Notification): void {
    const p = (n.params ?? {}) as NarratedParams;
    const turn = `turn …${String(p.turn?.id).slice(-8)}`;
    const err = p.turn?.error?.codexErrorInfo;
    const why = err ? ` (${typeof err === 'string' ? err : Object.keys(err)[0]})` : '';
    if (n.method === 'thread/goal/updated') say('codex', `goal is ${p.goal?.status}`);
    else if (n.method === 'turn/started') say('codex', `${turn} started`);
    else if (n.method === 'turn/completed') say('codex', `${turn} ${p.turn?.status}${why}`);
  }
}

/** How the narration shows each kind of runner line (others: as received). */
const RUNNER_LINES = new Map<string, (d: RunnerLine) => string>([
  ['connection', (d) => `connection ${String(d.state)}: ${String(d.detail)}`],
  ['armed', (d) => `armed: watching "${String(d.title)}"`],
  ['backoff', (d) => `blocked by ${String(d.error)}; retry ${d.attempt} in ${(Number(d.delayMs) / 1000).toFixed(1)} s`],
  ['recovering', (d) => `re-activating the goal (attempt ${d.attempt})`],
  ['recovered', (d) => `goal active again (attempt ${d.attempt})`],
  ['skipped', (d) => `skipped: ${String(d.reason)}`],
  ['stopped', (d) => `stopped on ${String(d.signal)}, state saved`],
]);

async function until(check: () => boolean, what: string): Promise<void> {
  const left = started + DEADLINE_MS - Date.now();
  if (!(await waitGone(() => !check(), left))) throw new Error(`timed out waiting for ${what}`);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
