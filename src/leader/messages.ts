// The wire format between a follower window and the leader window: newline-delimited JSON
// over the leader's Unix socket (see election.ts).
//
//   follower → leader   {type:'hello', version, pid}
//                       {type:'command', id, name, args}
//                       {type:'focus', viewer, focused}  (a window: at once, then on every change)
//   leader → follower   {type:'welcome', leaderPid, version?, who?, term?}
//                       {type:'beat', term}               (every lease renewal: lease.ts; version 3+)
//                       {type:'state', snapshot}         (pushed on every change; the latest only)
//                       {type:'decision', at, decision, by, notify}  (every decision, in order)
//                       {type:'result', id, ok, error?, value?}
//
// The zod schemas are the single definition; the types are inferred from them. Decoding never
// throws: a malformed line (bad JSON, wrong shape, longer than the cap) is reported through a
// callback and skipped, and the next line is read normally.
import * as z from '../util/zod';
import { excerpt, LineSplitter } from '../protocol/lineSplitter';

/**
 * Version of this protocol; a leader and a follower of different versions log the mismatch.
 * 2: decisions and focus (a version-1 end drops those lines as malformed, and logs each).
 * 3: the leader's beat and term (sent only to followers that said 3 or more; a follower of a
 *    leader that says less watches no silence: it goes by the socket's close, as before).
 * 4: the states `waitingProbe` and `budgetSpent`, the decisions `probe` and `released`. An older
 *    follower rejects a whole snapshot that holds a state it does not know (its tree would freeze)
 *    and each such decision: it is sent each new state as the nearest one it knows, and none of
 *    the new decisions (olderFollowers.ts). A newer follower reads an older leader as it is.
 */
export const LEADER_PROTOCOL_VERSION = 4;
/** The first version whose leader beats (lease.ts). */
export const BEAT_VERSION = 3;
/** The first version whose followers read the outage probe's and the recovery budget's states and decisions. */
export const PROBE_BUDGET_VERSION = 4;

/** Longest accepted line, in bytes, without the newline: 16 MiB. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

export const CommandIdSchema = z.union([z.number().check(z.int()), z.string().check(z.minLength(1))]);

export const HelloSchema = z.object({
  type: z.literal('hello'),
  version: z.number().check(z.int()),
  pid: z.number().check(z.int()),
});
export const CommandSchema = z.object({
  type: z.literal('command'),
  id: CommandIdSchema,
  name: z.string().check(z.minLength(1)),
  args: z.array(z.unknown()),
});
/**
 * A window tells the leader whether it has the focus: the leader picks the one window that
 * notifies. `viewer`: the window's own random id (not its pid: an id is never reused).
 */
export const FocusSchema = z.object({
  type: z.literal('focus'),
  viewer: z.string().check(z.minLength(1), z.maxLength(100)),
  focused: z.boolean(),
});
export const FollowerMessageSchema = z.discriminatedUnion('type', [HelloSchema, CommandSchema, FocusSchema]);
export type FollowerMessage = z.infer<typeof FollowerMessageSchema>;

export const WelcomeSchema = z.object({
  type: z.literal('welcome'),
  leaderPid: z.number().check(z.int()),
  version: z.optional(z.number().check(z.int())),
  /**
   * What kind of engine leads (e.g. "VS Code window", "runner"), for followers' messages.
   * Optional: older leaders omit it.
   */
  who: z.optional(z.string().check(z.maxLength(200))),
  /** The leader's term (lease.ts): one more than the term before it. Optional: older leaders omit it. */
  term: z.optional(z.number().check(z.int(), z.nonnegative())),
});
/** The leader is alive: sent at every renewal of its lease (lease.ts). */
export const BeatSchema = z.object({
  type: z.literal('beat'),
  term: z.number().check(z.int(), z.nonnegative()),
});
export const StateSchema = z.object({
  type: z.literal('state'),
  snapshot: z.unknown(),
});
export const ResultSchema = z.object({
  type: z.literal('result'),
  id: CommandIdSchema,
  ok: z.boolean(),
  error: z.optional(z.string()),
  value: z.optional(z.unknown()),
});
/**
 * A decision of the leader's engine, streamed to every follower as it is announced (once durable):
 * `by` is who decided; `notify` the viewer id of the one window that shows it as a notification
 * (the focused one, else the one focused last), or null. The decision itself is checked by the
 * receiver against DecisionSchema (src/model/decision.ts).
 */
export const DecisionMessageSchema = z.object({
  type: z.literal('decision'),
  at: z.number(),
  decision: z.unknown(),
  by: z.object({ who: z.string().check(z.maxLength(200)), pid: z.number().check(z.int()) }),
  notify: z.nullable(z.string().check(z.maxLength(100))),
});
export const LeaderMessageSchema = z.discriminatedUnion('type', [
  WelcomeSchema,
  BeatSchema,
  StateSchema,
  DecisionMessageSchema,
  ResultSchema,
]);
export type DecisionMessage = z.infer<typeof DecisionMessageSchema>;
export type LeaderMessage = z.infer<typeof LeaderMessageSchema>;

/**
 * One message as a line (JSON + `\n`). Throws when the value cannot be serialized or the line
 * would exceed `maxLineBytes` (the other side would drop it).
 */
export function encodeMessage(msg: FollowerMessage | LeaderMessage, maxLineBytes = MAX_LINE_BYTES): string {
  const text = JSON.stringify(msg);
  if (typeof text !== 'string') throw new Error(`message ${msg.type} is not serializable to JSON`);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxLineBytes) {
    throw new Error(`message ${msg.type} is ${bytes} bytes, over the ${maxLineBytes}-byte line cap`);
  }
  return `${text}\n`;
}

/**
 * Splits a byte stream into lines, parses and validates each with `schema`, and hands valid
 * messages to `onMessage`. Never throws: bad lines go to `onMalformed`; an exception from
 * `onMessage` is reported there too.
 */
export class LineDecoder<T> {
  private readonly lines: LineSplitter;
  private _malformed = 0;

  constructor(
    private readonly schema: z.ZodMiniType<T>,
    private readonly onMessage: (msg: T) => void,
    /** Called for each dropped line, with why and a short excerpt. */
    private readonly onMalformed: (reason: string) => void,
    private readonly maxLineBytes = MAX_LINE_BYTES,
  ) {
    this.lines = new LineSplitter(
      maxLineBytes,
      (line) => this.handleLine(line),
      (head) =>
        this.malformed(`line longer than ${this.maxLineBytes} bytes, skipped: ${JSON.stringify(excerpt(head))}`),
    );
  }

  /** Lines dropped so far. */
  get malformedCount(): number {
    return this._malformed;
  }

  push(chunk: Buffer | string): void {
    try {
      this.lines.push(chunk);
    } catch (e) {
      this.malformed(`decoder error: ${(e as Error)?.message ?? String(e)}`);
      this.lines.reset();
    }
  }

  /** End of stream: a last line without a newline still counts. */
  end(): void {
    this.lines.end();
  }

  private handleLine(raw: string): void {
    const text = raw.trim();
    if (text.length === 0) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      this.malformed(`invalid JSON (${(e as Error).message}): ${JSON.stringify(excerpt(text))}`);
      return;
    }
    const parsed = this.schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
      this.malformed(`unexpected message${where} (${issue?.message ?? 'invalid'}): ${JSON.stringify(excerpt(text))}`);
      return;
    }
    try {
      this.onMessage(parsed.data);
    } catch (e) {
      this.report(`message handler threw: ${(e as Error)?.message ?? String(e)}`);
    }
  }

  private malformed(reason: string): void {
    this._malformed++;
    this.report(reason);
  }

  private report(reason: string): void {
    try {
      this.onMalformed(reason);
    } catch {
      // a logging callback must not break the reader
    }
  }
}
