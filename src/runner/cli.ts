// The headless runner: the engine's public face for tests and servers.
import { Engine } from '../core/engine';
import { systemClock } from '../core/clock';
import { DEFAULT_OPTIONS, type EngineOptions } from '../core/options';
import { describeState, type PersistedState } from '../model/watch';
import { connectDaemon } from '../protocol/client';
import { electionDir, electionFor } from '../leader/naming';
import { HandoverStore } from '../leader/handover';
import type { TransportTarget } from '../protocol/transport';
import { JsonFileStore, readStateFile } from '../store/jsonFileStore';
import { describeDropped } from '../store/store';
import { VERSION } from '../version';
import { parseCli, UsageError, USAGE, type StatusArgs, type WatchArgs } from './args';
import { decisionJson, decisionLine } from '../model/decisionText';
import { roleJson, roleLine, RunnerRole } from './role';
import { errorText } from '../util/errorText';

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
  // The global limiter's refill interval (3 recoveries at once, then one per 10 s by default).
  const limiter = Number(env.CODEX_GOAL_RECOVERY_LIMITER_INTERVAL_S);
  if (Number.isFinite(limiter) && limiter > 0) options.limiterIntervalMs = Math.round(limiter * 1000);
  return options;
}

async function watch(args: WatchArgs, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const target = describeTarget(args.target);
  const options = engineOptions(args, env);
  const election = electionFor(args.target);
  const role = new RunnerRole({
    election: election ? { dir: electionDir(env), name: election.name } : null,
    makeEngine: (seed, onChange, onDecision) =>
      new Engine(options, {
        connect: (listener) =>
          connectDaemon(args.target, listener, {
            clientVersion: VERSION,
            onStderr: (line) =>
              out(
                args.json
                  ? JSON.stringify({ ts: new Date().toISOString(), type: 'daemon-stderr', line })
                  : `codex: ${line}`,
              ),
          }),
        target,
        store: new HandoverStore(new JsonFileStore(args.statePath), seed, (taken) =>
          out(
            args.json
              ? JSON.stringify({ ts: new Date().toISOString(), type: 'handover', threads: taken })
              : `${new Date().toISOString()} handover: ${taken.length} watched thread(s) taken from the previous leader's last state`,
          ),
        ),
        clock: systemClock,
        random: Math.random,
        onDecision: (d) => {
          onDecision(d);
          onChange();
        },
        onChange,
      }),
    onDecision: (d) => out(args.json ? decisionJson(d, Date.now()) : decisionLine(d, Date.now())),
    onRole: (event) => {
      out(args.json ? roleJson(event, target, Date.now()) : roleLine(event, target, Date.now()));
      if (!args.json && event.role === 'leader')
        out(`${new Date().toISOString()} watching (state in ${args.statePath}); Ctrl-C to stop`);
    },
    onWarning: (message) =>
      out(
        args.json
          ? decisionJson({ type: 'warning', message }, Date.now())
          : decisionLine({ type: 'warning', message }, Date.now()),
      ),
  });
  // Listening from the start: a signal while the runner is still starting stops it cleanly too.
  const signalled = new Promise<{ signal: NodeJS.Signals }>((resolve) => {
    process.once('SIGINT', () => resolve({ signal: 'SIGINT' }));
    process.once('SIGTERM', () => resolve({ signal: 'SIGTERM' }));
    // A closed terminal or SSH session (and a service manager's hang-up): stopped as by SIGTERM.
    process.once('SIGHUP', () => resolve({ signal: 'SIGHUP' }));
  });
  try {
    await role.start();
  } catch (error) {
    await role.stop().catch(() => undefined);
    process.stderr.write(`codex-goal-recovery: ${errorText(error)}\n`);
    return 1;
  }
  if (!args.json && !election) out(`${new Date().toISOString()} watching (state in ${args.statePath}); Ctrl-C to stop`);
  // The engine's timers do not hold the process open (they are unref'd for the extension host).
  const keepAlive = setInterval(() => undefined, 1 << 30);
  const ended = await Promise.race([
    signalled,
    role.fatal.catch((error: unknown) => ({ error: error instanceof Error ? error : new Error(String(error)) })),
  ]);
  clearInterval(keepAlive);
  const leading = role.runningEngine !== null;
  await role.stop();
  if ('error' in ended) {
    process.stderr.write(`codex-goal-recovery: ${ended.error.message}\n`);
    return 1;
  }
  out(
    args.json
      ? JSON.stringify({ ts: new Date().toISOString(), type: 'stopped', signal: ended.signal })
      : `${new Date().toISOString()} stopped on ${ended.signal}${leading ? `; state saved to ${args.statePath}` : ''}`,
  );
  return 0;
}

/** Where the engine connects, for messages and the snapshot the followers show. */
export function describeTarget(target: TransportTarget): string {
  switch (target.kind) {
    case 'socket':
      return target.path;
    case 'url':
      return target.url;
    case 'stdio':
      return [target.command, ...target.args].join(' ');
  }
}

async function status(args: StatusArgs): Promise<number> {
  let stored;
  try {
    stored = await readStateFile(args.statePath);
  } catch (error) {
    process.stderr.write(`codex-goal-recovery: ${(error as Error).message}\n`);
    return 1;
  }
  if (stored.kind === 'missing') {
    process.stdout.write(args.json ? '{"watches":[]}\n' : `no state at ${args.statePath}: nothing watched yet\n`);
    return 0;
  }
  if (stored.kind === 'unusable') {
    process.stderr.write(
      `codex-goal-recovery: ${args.statePath}: ${stored.reason}; the runner keeps it aside and starts clean\n`,
    );
    return 1;
  }
  if (stored.dropped.length > 0) {
    process.stderr.write(
      `codex-goal-recovery: ${args.statePath}: ${describeDropped(stored.dropped)}; not shown (the runner keeps them aside and loads the rest)\n`,
    );
  }
  const journal = stored.journal;
  if (journal && 'unusable' in journal) {
    process.stderr.write(
      `codex-goal-recovery: ${args.statePath}.journal: ${journal.unusable}; its changes are not shown (the runner keeps it aside)\n`,
    );
  } else if (journal && journal.dropped.length > 0) {
    process.stderr.write(
      `codex-goal-recovery: ${args.statePath}.journal: ${describeDropped(journal.dropped)}; not shown (the runner keeps them aside and loads the rest)\n`,
    );
  }
  process.stdout.write(
    args.json ? `${JSON.stringify(statusJson(stored.state))}\n` : statusText(stored.state, Date.now()),
  );
  return 0;
}

function statusJson(state: PersistedState) {
  return { paused: state.pausedAt !== null, watches: Object.values(state.watches) };
}

export function statusText(state: PersistedState, now: number): string {
  const watches = Object.values(state.watches);
  const lines = [
    state.pausedAt !== null
      ? `auto-recovery paused since ${new Date(state.pausedAt).toISOString()}`
      : 'auto-recovery on',
  ];
  if (watches.length === 0) lines.push('no watched threads');
  for (const w of watches) {
    const failures = w.failures > 0 ? ` · ${w.failures} consecutive failure${w.failures === 1 ? '' : 's'}` : '';
    const recovered = w.recovered.length > 0 ? ` · recovered ${w.recovered.length}×` : '';
    lines.push(
      `${w.threadId}  ${describeState(w, now, DEFAULT_OPTIONS.maxAttempts)}${failures}${recovered}  "${w.title}"`,
    );
  }
  return `${lines.join('\n')}\n`;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(
        `codex-goal-recovery: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exit(1);
    },
  );
}
