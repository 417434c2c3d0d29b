// The headless runner: the engine's public face for tests and servers.
import { promises as fs } from 'node:fs';
import { Engine } from '../core/engine';
import { systemClock } from '../core/clock';
import { DEFAULT_OPTIONS, type EngineOptions } from '../core/options';
import { describeState, type PersistedState } from '../model/watch';
import { connectDaemon } from '../protocol/client';
import { JsonFileStore } from '../store/jsonFileStore';
import { describeDropped, parsePersisted } from '../store/store';
import { VERSION } from '../version';
import { parseCli, UsageError, USAGE, type StatusArgs, type WatchArgs } from './args';
import { decisionJson, decisionLine } from '../model/decisionText';

export async function main(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseCli(argv);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`codex-goal-recovery: ${error.message}\n\n${USAGE}\n`);
      return 2;
    }
    throw error;
  }
  switch (args.command) {
    case 'help':
      process.stdout.write(`${USAGE}\n`);
      return 0;
    case 'version':
      process.stdout.write(`codex-goal-recovery ${VERSION}\n`);
      return 0;
    case 'status':
      return status(args);
    case 'watch':
      return watch(args);
  }
}

export function engineOptions(args: WatchArgs, env: NodeJS.ProcessEnv = process.env): EngineOptions {
  const options: EngineOptions = { ...DEFAULT_OPTIONS };
  if (args.baseDelayMs !== undefined) options.baseDelayMs = args.baseDelayMs;
  if (args.maxDelayMs !== undefined) options.maxDelayMs = args.maxDelayMs;
  if (args.maxAttempts !== undefined) options.maxAttempts = args.maxAttempts;
  if (options.maxDelayMs < options.baseDelayMs) options.maxDelayMs = options.baseDelayMs;
  // Not flags (the command line is a fixed contract): tuning for tests and demos.
  const resync = Number(env.CODEX_GOAL_RECOVERY_RESYNC_S);
  if (Number.isFinite(resync) && resync > 0) options.resyncMs = Math.round(resync * 1000);
  return options;
}

async function watch(args: WatchArgs): Promise<number> {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const store = new JsonFileStore(args.statePath);
  const engine = new Engine(engineOptions(args), {
    connect: (listener) => connectDaemon(args.target, listener, {
      clientVersion: VERSION,
      onStderr: (line) => out(args.json ? JSON.stringify({ ts: new Date().toISOString(), type: 'daemon-stderr', line }) : `codex: ${line}`),
    }),
    store,
    clock: systemClock,
    random: Math.random,
    onDecision: (d) => out(args.json ? decisionJson(d, Date.now()) : decisionLine(d, Date.now())),
  });
  try {
    await engine.start();
  } catch (error) {
    process.stderr.write(`codex-goal-recovery: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  if (!args.json) out(`${new Date().toISOString()} watching (state in ${store.location}); Ctrl-C to stop`);
  // The engine's timers do not hold the process open (they are unref'd for the extension host).
  const keepAlive = setInterval(() => undefined, 1 << 30);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  clearInterval(keepAlive);
  await engine.stop();
  out(args.json
    ? JSON.stringify({ ts: new Date().toISOString(), type: 'stopped', signal })
    : `${new Date().toISOString()} stopped on ${signal}; state saved to ${store.location}`);
  return 0;
}

async function status(args: StatusArgs): Promise<number> {
  let text: string;
  try {
    text = await fs.readFile(args.statePath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      process.stdout.write(args.json ? '{"watches":[]}\n' : `no state at ${args.statePath}: nothing watched yet\n`);
      return 0;
    }
    process.stderr.write(`codex-goal-recovery: cannot read ${args.statePath}: ${(error as Error).message}\n`);
    return 1;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    process.stderr.write(`codex-goal-recovery: ${args.statePath} is not valid JSON (${(error as Error).message}); the runner keeps it aside and starts clean\n`);
    return 1;
  }
  const parsed = parsePersisted(raw);
  if ('error' in parsed) {
    process.stderr.write(`codex-goal-recovery: ${args.statePath}: ${parsed.error}\n`);
    return 1;
  }
  if (parsed.dropped.length > 0) {
    process.stderr.write(`codex-goal-recovery: ${args.statePath}: ${describeDropped(parsed.dropped)}; not shown (the runner keeps them aside and loads the rest)\n`);
  }
  process.stdout.write(args.json ? `${JSON.stringify(statusJson(parsed.state))}\n` : statusText(parsed.state, Date.now()));
  return 0;
}

function statusJson(state: PersistedState) {
  return { paused: state.pausedAt !== null, watches: Object.values(state.watches) };
}

export function statusText(state: PersistedState, now: number): string {
  const watches = Object.values(state.watches);
  const lines = [state.pausedAt !== null ? `auto-recovery paused since ${new Date(state.pausedAt).toISOString()}` : 'auto-recovery on'];
  if (watches.length === 0) lines.push('no watched threads');
  for (const w of watches) {
    const failures = w.failures > 0 ? ` · ${w.failures} consecutive failure${w.failures === 1 ? '' : 's'}` : '';
    const recovered = w.recovered.length > 0 ? ` · recovered ${w.recovered.length}×` : '';
    lines.push(`${w.threadId}  ${describeState(w.state, now, DEFAULT_OPTIONS.maxAttempts)}${failures}${recovered}  "${w.title}"`);
  }
  return `${lines.join('\n')}\n`;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`codex-goal-recovery: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
