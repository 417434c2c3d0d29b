// Which engine watches a daemon when a runner starts: the runner joins the same leader election
// as the VS Code windows (src/leader/), keyed by the daemon's address, so that two runners, or a
// runner and VS Code, never both run an engine against one daemon. The term of office is
// src/leader/electedEngine.ts, shared with the windows; this file is the runner's hooks on it.
//
//  - leader: runs the engine, pushes its snapshot to the followers on every change (throttled)
//    and runs their commands (a window's Pause, Retry now, ...) on it;
//  - follower: runs nothing, says who leads and stands by, keeping the leader's latest snapshot;
//    when the leader goes away the election makes one follower the leader, and its engine starts
//    from its store merged with that snapshot (src/leader/handover.ts), so the threads the old
//    leader watched stay watched;
//  - no election possible (an unsafe directory): runs the engine anyway, and says so.
// A private stdio daemon has no election: nobody else can reach it.
import type { Engine } from '../core/engine';
import { runCommand } from '../core/commandTable';
import { ElectedEngine, type TermEngine } from '../leader/electedEngine';
import type { Decision } from '../model/decision';
import type { EngineSnapshot } from '../model/snapshot';
import type { WriteGuard } from '../store/guard';
import { leaderText } from './control';

/** What the runner tells about its role (printed like a decision: one line, or one JSON object). */
export type RoleEvent =
  { role: 'leader'; elected: boolean } | { role: 'follower'; leaderPid: number; leaderWho: string | null };

export interface RunnerRoleOptions {
  /** The election to join (dir and name), or null for none (a private stdio daemon). */
  election: { dir: string; name: string } | null;
  /**
   * Builds the engine for a new term as leader; `seed` is the previous leader's last snapshot.
   * The engine reports its changes to `onChange` and its decisions to `onDecision`; it and its
   * store ask `guard` before they act or write (EngineDeps.fence, src/store/guard.ts: the lease
   * of src/leader/lease.ts, and the term stamped into the state).
   */
  makeEngine(
    seed: EngineSnapshot | null,
    onChange: () => void,
    onDecision: (d: Decision) => void,
    guard: WriteGuard,
  ): Engine;
  /** A decision of this runner's engine (the ones of another leader are not printed). */
  onDecision(decision: Decision): void;
  onRole(event: RoleEvent): void;
  /** Something the user should know (the election is unavailable, a takeover could not start). */
  onWarning(message: string): void;
  /** Election diagnostics. */
  log?: (message: string) => void;
  /** How often a leader pushes its snapshot at most. Default 100 ms. */
  broadcastMs?: number;
}

/** What the runner says it is in the election's welcome. */
export const RUNNER_WHO = 'runner';

/** The runner's engine as a term runs it: the commands by name. */
function runnerTerm(engine: Engine): RunnerTerm {
  return {
    engine,
    start: () => engine.start(),
    stop: () => engine.stop(),
    snapshot: () => engine.snapshot(),
    run: (command, threadId) => runCommand(engine.commands, command, threadId),
  };
}
type RunnerTerm = TermEngine & { engine: Engine };

export class RunnerRole {
  private readonly elected: ElectedEngine<RunnerTerm>;
  /** Rejects when an engine cannot start after a takeover (its store cannot be read). */
  readonly fatal: Promise<never>;

  constructor(opts: RunnerRoleOptions) {
    this.elected = new ElectedEngine<RunnerTerm>({
      election: opts.election,
      who: RUNNER_WHO,
      makeEngine: (seed, events) =>
        runnerTerm(
          opts.makeEngine(
            seed,
            () => events.changed(),
            (d) => events.decided(d),
            { fence: () => events.fence(), term: () => events.term() },
          ),
        ),
      // A private daemon has nothing to tell: nobody else can watch it.
      onLead: (_engine, how) => {
        if (how !== 'private') opts.onRole({ role: 'leader', elected: how === 'elected' });
      },
      onFollow: (leader) => {
        leader.welcomed.then(
          ({ pid, who }) => opts.onRole({ role: 'follower', leaderPid: pid, leaderWho: who }),
          () => undefined, // gone before its welcome: the election runs again
        );
      },
      onDecision: (d, by) => {
        if (by.self) opts.onDecision(d);
      },
      onAlone: (error) =>
        opts.onWarning(`leader election unavailable (${error.message}); this runner runs the engine without it`),
      onWarning: (message) => opts.onWarning(message),
      log: opts.log,
      broadcastMs: opts.broadcastMs,
    });
    this.fatal = this.elected.fatal;
  }

  /** The engine while this runner leads, else null. */
  get runningEngine(): Engine | null {
    return this.elected.runningEngine?.engine ?? null;
  }

  /**
   * Joins the election (or starts the engine at once when there is none). Resolves once this
   * runner leads, with its engine started, or follows; rejects if its engine cannot start.
   */
  start(): Promise<void> {
    return this.elected.start();
  }

  /** Stops the engine (it saves its state), then leaves the election so a follower takes over. */
  stop(): Promise<void> {
    return this.elected.stop();
  }
}

/** A role event as a readable line, in the style of the decision lines. */
export function roleLine(event: RoleEvent, target: string, now: number): string {
  const ts = new Date(now).toISOString();
  if (event.role === 'leader') {
    return event.elected
      ? `${ts} leader: this runner runs the engine for ${target}; any other engine on this daemon stands by`
      : `${ts} leader: this runner runs the engine for ${target} (without an election)`;
  }
  const who = leaderText({ who: event.leaderWho, pid: event.leaderPid });
  return `${ts} standby: another engine (${who}) is watching ${target}; this runner stands by and takes over if it stops`;
}

/** A role event as one JSON object: `{ts, type: "role", role, target, …}`. */
export function roleObject(event: RoleEvent, target: string, now: number) {
  return { ts: new Date(now).toISOString(), type: 'role' as const, ...event, target };
}
