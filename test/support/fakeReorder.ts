// The fake daemon's reordering mode (`daemon.reorder = new Reorderer(seed)`, before the engine
// connects): the notifications it emits for one daemon-side transition (all it sends in one
// synchronous run: a failure, a set's aftermath, a resume's goal) go out in a seeded order, each
// after a seeded gap (none, a few turns of the event loop, or up to 8 ms of real time, in which
// the engine acts on what it got and its reads are answered), within what the real daemon can
// send. The engine must be level-triggered: the same outcome whatever the order (reorder.test.ts).
//
// What may move, and why (docs/daemon-behaviour.md, ../shared/docs/codex-app-server.md):
//  - Gaps. A read sent in between is answered at once, on the fake's state then (the transition
//    is applied before its first notification leaves): a read answered before notifications of a
//    state it already shows is what (q) measured (7 of 12 reads came before `turn/completed`,
//    which followed the goal update by 10-20 ms).
//  - Order within a connection, among `thread/goal/updated`, `thread/status/changed`,
//    `error {willRetry:false}`, `turn/completed` and `account/rateLimits/updated`: they leave on
//    different paths (goal and status to every connection, turn and error to subscribers: the
//    shared doc's delivery rule; the turn's end 10-20 ms after the goal's update: (q)), so their
//    relative order may vary between runs. NOT measured: (a), (o) and (q) saw one order each
//    time (goal, status, error, turn/completed); this mode goes beyond that, on purpose.
//  - Frames of different threads (each turn is its own task; a rate-limit update counts as the
//    thread whose goal update follows it), and of different connections.
// What stays (conservative where unsure; every other pair keeps the order it was emitted in):
//  - a reply is never held or moved: it is written when its request is served (the request's
//    own order); a `thread/goal/set` or `thread/resume` (and any request behind it) waits until
//    the transition's notifications are out, so no notification older than a set arrives after it;
//  - `error {willRetry:true}` before the rest of its failure (a retry precedes giving up, (a));
//  - `account/rateLimits/updated` before the `thread/goal/updated` emitted after it: (o) measured
//    it as the frame right before the usage limit's goal update every time, and the engine takes
//    only an update at most 5 s older than that goal update as the limit's evidence
//    (LIMIT_NOTICE_MS, src/core/rateLimits.ts);
//  - two frames of one kind on one thread (within one transition an older goal never overtakes a
//    newer one; across two, a resume's copy can: daemon-behaviour (s), staleGoalEvent.test.ts), and
//    `turn/started`, server requests, `serverRequest/resolved` and every other kind: as emitted.
// Transitions stay in order: one's notifications are all out before the next one's start.
import type { FakeConnection, WireMessage } from './fakeConnection';
import { rng } from './random';
import { sleep, turns } from './wait';

interface Frame {
  connection: FakeConnection;
  message: WireMessage;
  kind: string;
  thread: string | null;
}

const RATE_LIMITS = 'account/rateLimits/updated';
/** The kinds whose frames of one thread may overtake one another (see the header). */
const MOBILE: ReadonlySet<string> = new Set([
  'thread/goal/updated',
  'thread/status/changed',
  'error:final',
  'turn/completed',
  RATE_LIMITS,
]);

function frame(connection: FakeConnection, message: WireMessage): Frame {
  const p = message.params ?? {};
  const retry = message.method === 'error' ? (p.willRetry === true ? ':retry' : ':final') : '';
  const kind = message.id !== undefined ? 'serverRequest' : `${message.method}${retry}`;
  return { connection, message, kind, thread: typeof p.threadId === 'string' ? p.threadId : null };
}

/** Whether `later` (emitted after `earlier`, in one transition) may reach the client first. */
export function mayOvertake(earlier: Frame, later: Frame): boolean {
  if (earlier.connection !== later.connection) return true;
  if (earlier.thread !== null && later.thread !== null && earlier.thread !== later.thread) return true;
  if (!MOBILE.has(earlier.kind) || !MOBILE.has(later.kind) || earlier.kind === later.kind) return false;
  return !(earlier.kind === RATE_LIMITS && later.kind === 'thread/goal/updated');
}

/** What the client was sent, one line a frame: for a failing test's message. */
function describe(f: Frame): string {
  const goal = (f.message.params?.goal as { status?: string } | undefined)?.status;
  const status = (f.message.params?.status as { type?: string } | undefined)?.type;
  const turn = (f.message.params?.turn as { status?: string } | undefined)?.status;
  const what = goal ?? status ?? turn;
  return `${f.kind}${f.thread ? ` ${f.thread}` : ''}${what ? ` (${what})` : ''}`;
}

/** Holds the fake daemon's notifications and sends each transition's in a seeded order. */
export class Reorderer {
  /** Every frame sent, in the order the client got it (see `describe`). */
  readonly delivered: string[] = [];
  private readonly random: () => number;
  private pending: Frame[] = [];
  private flushing = false;
  /** Requests that wait for the notifications to be out (a set, a resume, and any behind them). */
  private readonly held: (() => void)[] = [];

  constructor(readonly seed: number) {
    this.random = rng(seed);
  }

  /** Puts a new connection under this mode: its notifications wait here; returns its request-line handler. */
  attach(connection: FakeConnection, serve: (line: string) => void): (line: string) => void {
    connection.outbox = (c, message) => {
      this.pending.push(frame(c, message));
      if (!this.flushing) {
        this.flushing = true;
        queueMicrotask(() => void this.flush());
      }
    };
    return (line) => {
      // A set or a resume (and any request behind it) waits until the notifications are out.
      const method = (JSON.parse(line) as WireMessage).method;
      const changes = method === 'thread/goal/set' || method === 'thread/resume';
      if (this.held.length > 0 || (changes && this.flushing)) this.held.push(() => serve(line));
      else serve(line);
    };
  }

  /** True while a frame or a request waits: a harness's settle is not done. */
  busy(): boolean {
    return this.flushing || this.held.length > 0;
  }

  /** Before a frame: none, a turn or two of the event loop, or a few ms (time for the engine to act on the last). */
  private async gap(): Promise<void> {
    const r = this.random();
    if (r < 0.6) await turns(Math.floor(r * 5));
    else await sleep(Math.ceil((r - 0.6) * 20));
  }

  private async flush(): Promise<void> {
    while (this.pending.length > 0) {
      const group = this.pending.splice(0);
      // A rate-limit update names no thread: it is the 429 of the goal whose update follows it.
      group.forEach((f, i) => {
        if (f.kind === RATE_LIMITS)
          f.thread =
            group.slice(i).find((g) => g.kind === 'thread/goal/updated' && g.connection === f.connection)?.thread ??
            null;
      });
      while (group.length > 0) {
        const free = group.filter((f, i) => group.slice(0, i).every((e) => mayOvertake(e, f)));
        const next = free[Math.floor(this.random() * free.length)];
        group.splice(group.indexOf(next), 1);
        await this.gap();
        next.connection.write(next.message);
        this.delivered.push(describe(next));
      }
    }
    await turns(3); // the client reads the last frames before a settle may take the engine for idle
    this.flushing = false;
    while (this.held.length > 0 && !this.flushing) this.held.shift()?.();
  }
}
