// The strict checks of the fake daemon (test/support/fakeDaemon.ts), after the seed's fake (whose
// t.Fatalf stopped the test): it judges every request as it arrives, on the state the daemon
// holds then, and fails the test at once on what the real daemon would reject or the product's
// rules forbid (`ViolationRule`):
//  - an automatic `thread/goal/set` that is not on a goal `blocked` or `usageLimited` whose
//    newest turn failed, on a loaded thread;
//  - a second automatic set that takes effect for the same failed turn (counted by the daemon
//    when it applies a set: one whose reply is then lost still counts);
//  - a set with keys other than {threadId, status, origin}, an automatic one with a status other
//    than "active", or an origin other than "automatic" / "user";
//  - an RPC method the daemon does not serve here;
//  - any answer to a server request (an approval is the user's to answer, never the engine's).
// A broken rule is a `Violation`. Unless `judge` says 'allow', the request is answered with a
// JSON-RPC error (the engine cannot carry on as if it had succeeded; an answer to a server
// request has nothing to answer), the violation is kept (`violations`, `check()`), and it is
// thrown: by `check()` (the harness calls it in settle/advance/reconcile/cleanup) and, if no one
// has reported it by the next turn of the event loop, as an uncaught exception, which node:test
// reports as a failure of the test that is running (so a test that never calls the harness again
// fails as well). A test that breaks a rule on purpose takes it with `takeViolations()` at once.
import type { GoalStatus } from '../../src/model/watch';
import type { WireMessage } from './fakeConnection';
import type { FakeThread } from './fakeWorld';

/** The rules the strict daemon judges by (see the file's header). */
export type ViolationRule =
  /** An automatic set on a goal that is not blocked/usage-limited with its newest turn failed. */
  | 'set-not-recoverable'
  /** An automatic set on a thread the daemon has not loaded (measured: the goal goes active, no turn starts). */
  | 'set-not-loaded'
  /** A second effective automatic set for the same failed turn. */
  | 'set-duplicate'
  /** A set that changes more than the status, or an automatic one to a status other than active. */
  | 'set-beyond-status'
  | 'unexpected-rpc'
  | 'answered-server-request';

/** A broken rule, with the daemon's state when the request arrived. */
export interface Violation {
  rule: ViolationRule;
  /** One line: what broke which rule. */
  message: string;
  /** The request (or answer) as it arrived. */
  request: WireMessage;
  threadId: string | null;
  /** The thread as the daemon held it when the request arrived (null: no such thread). */
  thread: { goal: GoalStatus | null; turnId: string; turnStatus: string; loaded: boolean } | null;
}

/** A judge's verdict: 'fail' (the default) fails the test; 'allow' lets the daemon serve it as usual. */
export type Verdict = 'fail' | 'allow';

/** What the strict fake daemon throws for a broken rule. */
export class StrictDaemonError extends Error {
  constructor(readonly violation: Violation) {
    super(`the strict fake daemon saw a broken rule (${violation.rule}): ${violation.message}`);
  }
}

function violationError(v: Violation): Error {
  return new StrictDaemonError(v);
}

/** The judge and the record of broken rules, which the fake daemon extends with its world and its wire. */
export abstract class StrictDaemon {
  /** The daemon's threads, as the requests find them. */
  abstract readonly threads: Map<string, FakeThread>;
  /** The message of every violation judged 'fail', in order (what `check()` throws the first of). */
  readonly violations: string[] = [];
  /**
   * Decides about each violation (see the file's header). Default (null): every one fails the
   * test. A test that forgives one case by design (the transport property: a person's pause
   * already on the wire when the set left, so the set arrives on a `paused` goal) returns
   * 'allow' for exactly that case and 'fail' for the rest; an allowed request is served as
   * usual (and an allowed set counts as an effective one).
   */
  judge: ((violation: Violation) => Verdict) | null = null;
  /** Effective automatic sets per failed turn (`threadId/turnId`): the daemon's own count. */
  readonly automaticSets = new Map<string, number>();
  /** Violations judged 'fail' and not yet reported (thrown by `check()` or taken). */
  private unreported: Violation[] = [];
  private backstop: NodeJS.Immediate | null = null;
  /** Harness calls under way that will `check()` when they end: the backstop waits for them. */
  private checks = 0;

  /** Throws the first violation judged 'fail' (it stays: every later check throws it too). */
  check(): void {
    const first = this.failedViolations[0];
    this.unreported = [];
    if (first) throw violationError(first);
  }

  /**
   * Runs `work` (a harness's settle) and then `check()`s; meanwhile the backstop holds back, so a
   * violation made during it is thrown by this call, in the test's own stack, not as an
   * uncaught exception. A violation already made is thrown at once (unless `checkFirst` is
   * false: a cleanup does its work first).
   */
  async checking<T>(work: () => Promise<T>, checkFirst = true): Promise<T> {
    if (checkFirst) this.check();
    this.checks += 1;
    try {
      return await work();
    } finally {
      this.checks -= 1;
      this.check();
    }
  }

  /** True when a violation judged 'fail' has not been reported yet (thrown by `check()` or taken). */
  hasUnreported(): boolean {
    return this.unreported.length > 0;
  }

  /**
   * For a test that breaks a rule on purpose: the violations judged 'fail' so far, which are
   * then forgotten (nothing is thrown for them, and `check()` passes).
   */
  takeViolations(): Violation[] {
    const taken = this.failedViolations.splice(0);
    this.violations.length = 0;
    this.unreported = [];
    return taken;
  }

  private readonly failedViolations: Violation[] = [];

  /** Judges a broken rule: true when it fails (the caller then refuses the request). */
  protected broke(rule: ViolationRule, request: WireMessage, message: string): boolean {
    const threadId = typeof request.params?.threadId === 'string' ? request.params.threadId : null;
    const t = threadId === null ? undefined : this.threads.get(threadId);
    const v: Violation = {
      rule,
      message,
      request,
      threadId,
      thread: t
        ? { goal: t.goal?.status ?? null, turnId: t.turn.id, turnStatus: t.turn.status, loaded: t.loaded }
        : null,
    };
    if ((this.judge?.(v) ?? 'fail') === 'allow') return false;
    this.failedViolations.push(v);
    this.violations.push(`${rule}: ${message}`);
    this.unreported.push(v);
    // The backstop: unless the test reports it by the next turn of the event loop, it is thrown
    // where node:test sees it (an uncaught exception, a failure of the running test).
    this.armBackstop();
    return true;
  }

  private armBackstop(): void {
    this.backstop ??= setImmediate(() => {
      this.backstop = null;
      if (this.unreported.length === 0) return;
      if (this.checks > 0) return this.armBackstop(); // a harness call will throw it when it ends
      const first = this.unreported[0];
      this.unreported = [];
      throw violationError(first);
    });
  }

  /** The rules for a `thread/goal/set`, on the state as it arrives: true refuses it (a violation that fails). */
  protected refusesSet(m: WireMessage, t: FakeThread | undefined): boolean {
    const p = m.params ?? {};
    const shown = JSON.stringify(p);
    if (Object.keys(p).sort().join(',') !== 'origin,status,threadId')
      return this.broke('set-beyond-status', m, `a set that changes more than the goal's status: ${shown}`);
    if (p.origin === 'user') return false; // a person's own command (Pause goal), sent for them
    if (p.origin !== 'automatic')
      return this.broke('set-beyond-status', m, `a set with origin ${JSON.stringify(p.origin)}: ${shown}`);
    if (p.status !== 'active')
      return this.broke(
        'set-beyond-status',
        m,
        `an automatic set to ${JSON.stringify(p.status)}, not "active": ${shown}`,
      );
    if (!t)
      return this.broke('set-not-recoverable', m, `an automatic set on a thread the daemon does not have: ${shown}`);
    const where = `on ${t.id} (goal ${t.goal?.status ?? 'cleared'}, newest turn ${t.turn.id} ${t.turn.status}${t.loaded ? '' : ', not loaded'})`;
    if (t.goal?.status !== 'blocked' && t.goal?.status !== 'usageLimited')
      return this.broke(
        'set-not-recoverable',
        m,
        `an automatic set on a goal that is not blocked or usage-limited ${where}`,
      );
    if (t.turn.status !== 'failed')
      return this.broke('set-not-recoverable', m, `an automatic set while the newest turn has not failed ${where}`);
    if (!t.loaded)
      return this.broke('set-not-loaded', m, `an automatic set on a thread the daemon has not loaded ${where}`);
    const n = this.automaticSets.get(`${t.id}/${t.turn.id}`) ?? 0;
    if (n > 0)
      return this.broke(
        'set-duplicate',
        m,
        `a second automatic set for the failed turn ${t.turn.id} ${where} (${n} took effect before)`,
      );
    return false;
  }
}
