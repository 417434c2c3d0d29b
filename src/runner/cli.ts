// The headless runner: the engine's public face for tests and servers.
import * as fs from 'node:fs';
import { Engine } from '../core/engine';
import { systemClock } from '../core/clock';
import { DEFAULT_OPTIONS, type EngineOptions } from '../core/options';
import { canRetryNow } from '../model/queries';
import { describeState } from '../model/stateText';
import { connectDaemon } from '../protocol/client';
import { electionDir, electionFor } from '../leader/naming';
import { HandoverStore } from '../leader/handover';
import { readStateFile } from '../store/jsonFileStore';
import { otherDaemonProblem, runnerStore, sharedStatePath } from './stateFile';
import { probeDaemon } from '../protocol/daemonProbe';
import { describeDropped } from '../store/store';
import { VERSION } from '../version';
import {
  commandHelp,
  CONTROL_COMMANDS,
  parseCli,
  UsageError,
  USAGE,
  type ControlArgs,
  type ControlVerb,
  type StatusArgs,
  type WatchArgs,
} from './args';
import { describeTarget, EXIT, leaderSnapshot, leaderText, reachLeader } from './control';
import {
  daemonLines,
  reportFromSnapshot,
  reportFromStateFile,
  statusExitCode,
  statusText,
  type StatusReport,
} from './statusReport';
import { LeaderCommandError } from '../leader/followerConnection';
import type { Decision } from '../model/decision';
import { decisionLine, decisionObject } from '../model/decisionText';
import { decisionLevel, type Level, RunnerLines, type RunnerLineType, withPriority, writesToJournal } from './lines';
import { roleLine, roleObject, RunnerRole } from './role';
import { errorText } from '../util/errorText';
import { startTelemetry, type Telemetry } from '../telemetry/index';
import { Notifier } from './notify';

export async function main(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseCli(argv);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`codex-goal-recovery: ${error.message}\n\n${USAGE}\n`);
      return EXIT.usage;
    }
    throw error;
  }
  if (args.command === 'help') process.stdout.write(`${args.topic ? commandHelp(args.topic) : USAGE}\n`);
  else if (args.command === 'version') process.stdout.write(`codex-goal-recovery ${VERSION}\n`);
  else return args.command === 'status' ? status(args) : args.command === 'control' ? control(args) : watch(args);
  return 0;
}

export function engineOptions(args: WatchArgs, env: NodeJS.ProcessEnv = process.env): EngineOptions {
  const options: EngineOptions = { ...DEFAULT_OPTIONS };
  for (const key of ['baseDelayMs', 'maxDelayMs', 'maxAttempts', 'recoveryBudget'] as const)
    if (args[key] !== undefined) options[key] = args[key];
  options.resyncMs = tunedMs(env.CODEX_GOAL_RECOVERY_RESYNC_S) ?? options.resyncMs;
  // The global limiter's refill interval (3 recoveries at once, then one per 5 s by default).
  options.limiterIntervalMs = tunedMs(env.CODEX_GOAL_RECOVERY_LIMITER_INTERVAL_S) ?? options.limiterIntervalMs;
  return options;
}

/** Tuning for tests and demos, not a flag (the command line is a fixed contract): seconds to ms, if positive. */
function tunedMs(seconds: string | undefined): number | undefined {
  const s = Number(seconds);
  return Number.isFinite(s) && s > 0 ? Math.round(s * 1000) : undefined;
}

const complain = (message: string) => process.stderr.write(`codex-goal-recovery: ${message}\n`);

async function watch(args: WatchArgs, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const lines = new RunnerLines(args.json, writesToJournal(env), (line) => process.stdout.write(`${line}\n`));
  const now = () => new Date().toISOString();
  /** A line of the runner's own (not a decision): `type` and its fields under --json, else `text`. */
  const say = (level: Level, type: RunnerLineType, fields: Record<string, unknown>, text: string) => {
    const ts = now();
    lines.line(level, { ts, type, ...fields }, `${ts} ${text}`);
  };
  // --verbose: election diagnostics and other debug lines, typed so that --json stays one object a line.
  const debug = (message: string) => {
    if (args.verbose) say('debug', 'debug', { message }, `debug: ${message}`);
  };
  // Plain lines only (--json has the role line instead).
  const watching = () => say('info', 'watching', {}, `watching (state in ${args.statePath}); Ctrl-C to stop`);
  const target = describeTarget(args.target);
  // Refused before anything starts (no telemetry, no election): another daemon's state file.
  const otherDaemon = await otherDaemonProblem(args.statePath, args.target);
  if (otherDaemon !== null) {
    complain(otherDaemon);
    return EXIT.usage;
  }
  // --otlp-endpoint, --otlp-from-codex-config: the engine's own decisions, exported too (docs/telemetry.md),
  // said in a line (where to, or why nothing is sent). Its interval: 5 s, or
  // CODEX_GOAL_RECOVERY_OTLP_INTERVAL_S (tuning for tests, not a flag).
  let telemetry: Telemetry | null = null;
  if (args.otlp !== null) {
    const log = (level: 'warning' | 'notice', message: string) => say(level, 'telemetry', { message }, message);
    const started = startTelemetry(args.otlp, log, tunedMs(env.CODEX_GOAL_RECOVERY_OTLP_INTERVAL_S));
    log(started.level, started.message);
    telemetry = started.telemetry;
  }
  const decided = (d: Decision) => {
    const level = decisionLevel(d);
    // Debug decisions (the quiet reconnect tries while the daemon is away) only with --verbose.
    if (level !== 'debug' || args.verbose)
      lines.line(level, decisionObject(d, Date.now()), decisionLine(d, Date.now()));
    telemetry?.decided(d);
    notifier?.decided(d);
  };
  // A fatal error: on stderr as always, and under --json also as one object on stdout.
  const fatal = (message: string) => {
    if (args.json) say('error', 'fatal', { message }, message);
    const text = `codex-goal-recovery: ${message}`;
    process.stderr.write(`${writesToJournal(env, 2) ? withPriority('error', text) : text}\n`);
  };
  // --notify: a program run on a give-up, a goal that needs a person, a spent budget (notify.ts).
  // Its timeout: 10 s, or CODEX_GOAL_RECOVERY_NOTIFY_TIMEOUT_S (tuning for tests, not a flag).
  const notifier =
    args.notify &&
    new Notifier(args.notify, (level, f, m) => say(level, 'notify', { message: m, ...f }, m), {
      target,
      watchOf: (id) => role.runningEngine?.watch(id) ?? null,
      log: debug,
      timeoutMs: tunedMs(env.CODEX_GOAL_RECOVERY_NOTIFY_TIMEOUT_S),
    });
  const options = engineOptions(args, env);
  const election = electionFor(args.target);
  debug(
    `options ${JSON.stringify(options)}; ${election ? `election ${election.name} in ${electionDir(env)} for ${election.key}` : 'no election (a private stdio daemon)'}`,
  );
  const role = new RunnerRole({
    election: election ? { dir: electionDir(env), name: election.name } : null,
    makeEngine: (seed, onChange, onDecision, guard) =>
      new Engine(options, {
        fence: () => guard.fence(),
        connect: (listener) =>
          connectDaemon(args.target, listener, {
            clientVersion: VERSION,
            onStderr: (line) => lines.line('info', { ts: now(), type: 'daemon-stderr', line }, `codex: ${line}`),
          }),
        target,
        store: new HandoverStore(
          runnerStore({
            statePath: args.statePath,
            defaultPath: args.defaultState,
            target: args.target,
            guard,
            onTakeover: (text, t) =>
              say(
                'notice',
                'takeover',
                { from: t.from, threads: t.taken, left: t.left, paused: t.pausedAt !== null },
                text,
              ),
          }),
          seed,
          (taken) =>
            say(
              'notice',
              'handover',
              { threads: taken },
              `handover: ${taken.length} watched thread(s) taken from the previous leader's last state`,
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
    onDecision: decided,
    onRole: (event) => {
      lines.line('notice', roleObject(event, target, Date.now()), roleLine(event, target, Date.now()));
      if (!args.json && event.role === 'leader') watching();
    },
    onWarning: (message) => decided({ type: 'warning', message }),
    log: debug,
  });
  // Listening from the start: a signal while the runner is still starting stops it cleanly too.
  const signalled = new Promise<{ signal: NodeJS.Signals }>((resolve) => {
    // SIGHUP: a closed terminal or SSH session (and a service manager's hang-up): stopped as by SIGTERM.
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => resolve({ signal }));
    // The reader went away (piped into `head`, a closed log pipe): stopped as by SIGPIPE, cleanly,
    // where Node would die on the unhandled write error. Later writes fail the same way: ignored.
    process.stdout.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') resolve({ signal: 'SIGPIPE' });
    });
  });
  try {
    await role.start();
  } catch (error) {
    await role.stop().catch(() => undefined);
    await notifier?.stop();
    await telemetry?.stop(TELEMETRY_STOP_MS);
    fatal(errorText(error));
    return 1;
  }
  if (!args.json && !election) watching();
  // The engine's timers do not hold the process open (they are unref'd for the extension host).
  const keepAlive = setInterval(() => undefined, 1 << 30);
  const ended = await Promise.race([signalled, role.fatal.catch((error: unknown) => ({ error: errorText(error) }))]);
  clearInterval(keepAlive);
  const leading = role.runningEngine !== null;
  await role.stop();
  await notifier?.stop();
  // What the engine said while it stopped goes out with the last try (a short one: a collector
  // that does not answer never holds the stop for long).
  await telemetry?.stop(TELEMETRY_STOP_MS);
  if ('error' in ended) {
    fatal(ended.error);
    return 1;
  }
  say(
    'notice',
    'stopped',
    { signal: ended.signal },
    `stopped on ${ended.signal}${leading ? `; state saved to ${args.statePath}` : ''}`,
  );
  return 0;
}

/** How long the export's last try may hold a stop. */
const TELEMETRY_STOP_MS = 2_000;

/** How long the leader may take to push its snapshot after its welcome. */
const SNAPSHOT_TIMEOUT_MS = 5_000;

/**
 * The leading engine's snapshot (policy, who leads, watches); the state file only when no engine
 * runs, and said so. One shape either way (statusReport.ts). Exit 0, or 1 when a goal needs
 * attention or gave up (either source), or on an error.
 */
async function status(args: StatusArgs, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const print = (report: StatusReport, text: string) => {
    process.stdout.write(args.json ? `${JSON.stringify(report)}\n` : text);
    return statusExitCode(report);
  };
  const daemon = probeDaemon(args.target);
  const failed = (error: unknown) => void complain(errorText(error));
  const reach = await reachLeader(args.target, env).catch(failed);
  if (!reach) return EXIT.failed;
  if (reach.kind === 'engine') {
    const snapshot = await leaderSnapshot(reach.conn, SNAPSHOT_TIMEOUT_MS);
    reach.conn.close();
    if (!snapshot) {
      complain(`the engine that leads (${leaderText(reach.leader)}) sent no state within ${SNAPSHOT_TIMEOUT_MS} ms`);
      return EXIT.failed;
    }
    const report = reportFromSnapshot(snapshot, reach.leader, await daemon);
    return print(report, statusText(report, Date.now()));
  }
  const target = describeTarget(args.target);
  const stored = await readStateFile(args.statePath).catch(failed);
  if (!stored) return EXIT.failed;
  if (stored.kind === 'missing') {
    const report = reportFromStateFile(null, args.statePath, target, reach.reason, await daemon);
    const shared =
      args.defaultState && fs.existsSync(sharedStatePath(env))
        ? ` (the state file all daemons shared before 0.4.0, ${sharedStatePath(env)}, is taken over by this daemon's first runner)`
        : '';
    const said = [reach.reason, ...daemonLines(report), `no state at ${args.statePath}: nothing watched yet${shared}`];
    return print(report, `${said.join('\n')}\n`);
  }
  if (stored.kind === 'unusable') {
    complain(`${args.statePath}: ${stored.reason}; the runner keeps it aside and starts clean`);
    return EXIT.failed;
  }
  const notShown = (file: string, dropped: string[]) =>
    complain(`${file}: ${describeDropped(dropped)}; not shown (the runner keeps them aside and loads the rest)`);
  if (stored.dropped.length > 0) notShown(args.statePath, stored.dropped);
  const journal = stored.journal;
  if (journal && 'unusable' in journal)
    complain(`${args.statePath}.journal: ${journal.unusable}; its changes are not shown (the runner keeps it aside)`);
  else if (journal && journal.dropped.length > 0) notShown(`${args.statePath}.journal`, journal.dropped);
  const report = reportFromStateFile(stored.state, args.statePath, target, reach.reason, await daemon);
  return print(report, statusText(report, Date.now()));
}

/** What a control command did, in words. */
const DONE_TEXT: Record<ControlVerb, (threadId: string | null) => string> = {
  pause: () => 'auto-recovery paused for every thread',
  resume: () => 'auto-recovery resumed',
  arm: (t) => `armed ${t}: watched from now on`,
  disarm: (t) => `disarmed ${t}: not recovered until rearm`,
  rearm: (t) => `re-armed ${t}`,
  retry: (t) => `retry of ${t} asked: its recovery is due now`,
};

/**
 * pause | resume | arm | disarm | rearm | retry: sent to the engine that leads, over the election
 * channel. Exit 0 done, 1 refused (or an error), 3 no engine runs. --json: one object.
 */
async function control(args: ControlArgs, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const name = CONTROL_COMMANDS[args.verb];
  const base = { command: args.verb, threadId: args.threadId, target: describeTarget(args.target) };
  const fail = (code: number, error: string, leader: { who: string | null; pid: number } | null) => {
    if (args.json) process.stdout.write(`${JSON.stringify({ ok: false, ...base, leader, error })}\n`);
    complain(error);
    return code;
  };
  const reach = await reachLeader(args.target, env).catch((error: unknown) => errorText(error));
  if (typeof reach === 'string') return fail(EXIT.failed, reach, null);
  if (reach.kind === 'none') return fail(EXIT.noEngine, `${args.verb}: ${reach.reason}`, null);
  const { conn, leader } = reach;
  try {
    if (args.verb === 'retry' && args.threadId !== null) {
      // The engine does nothing for a thread it cannot retry: say why instead of "done".
      const snapshot = await leaderSnapshot(conn, SNAPSHOT_TIMEOUT_MS);
      const w = snapshot?.watches.find((x) => x.threadId === args.threadId);
      if (snapshot && !w)
        return fail(
          EXIT.failed,
          `retry: the engine (${leaderText(leader)}) watches no thread ${args.threadId}`,
          leader,
        );
      if (snapshot && w && !canRetryNow(w)) {
        const state = describeState(w, Date.now(), snapshot.policy?.maxAttempts ?? snapshot.maxAttempts);
        return fail(EXIT.failed, `retry: nothing to retry for ${args.threadId}: it is ${state}`, leader);
      }
    }
    try {
      await conn.command(name, args.threadId === null ? [] : [args.threadId]);
    } catch (error) {
      const message = error instanceof LeaderCommandError ? error.message : errorText(error);
      return fail(EXIT.failed, `${args.verb}: ${message} (${leaderText(leader)})`, leader);
    }
  } finally {
    conn.close();
  }
  process.stdout.write(
    args.json
      ? `${JSON.stringify({ ok: true, ...base, leader })}\n`
      : `${DONE_TEXT[args.verb](args.threadId)} (by the engine that leads: ${leaderText(leader)})\n`,
  );
  return EXIT.ok;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      complain(error instanceof Error ? (error.stack ?? error.message) : String(error));
      process.exit(1);
    },
  );
}
