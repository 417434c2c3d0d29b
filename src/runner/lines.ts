// What the runner writes, one line per event, with a severity an operator can route: under
// `--json` each object carries `level` (after `ts`); when stdout is a systemd journal stream
// (`JOURNAL_STREAM` names it), every line starts with the syslog priority prefix `<N>`, which
// journald reads as the entry's priority and removes from the message (`journalctl -o cat` still
// shows one JSON object a line), so `journalctl -p warning` finds the goals given up, those that
// need attention, the warnings and the fatal errors. A line on a terminal, in a pipe or in a file
// is as it always was.
import * as fs from 'node:fs';
import type { Level } from '../model/decisionLevel';
import type { DecisionType } from '../model/decision';

export { decisionLevel, type Level } from '../model/decisionLevel';

/**
 * The runner's own lines' types, beside the decisions' (docs/runner.md's `--json` table has a row
 * for each, checked by test/unit/runnerDoc.test.ts). `watching` is a plain line only.
 */
export const RUNNER_LINE_TYPES = [
  'role',
  'handover',
  'takeover',
  'telemetry',
  'notify',
  'daemon-stderr',
  'debug',
  'fatal',
  'stopped',
  'watching',
] as const;
export type RunnerLineType = (typeof RUNNER_LINE_TYPES)[number];

const PRIORITY: Record<Level, number> = { error: 3, warning: 4, notice: 5, info: 6, debug: 7 };

/**
 * Whether `fd` (stdout unless said) is the journal stream `JOURNAL_STREAM` names ("device:inode"
 * of the socket systemd connected it to): only then do plain lines carry the priority prefix (a
 * runner started from a service and piped elsewhere, or a terminal that inherited the variable,
 * writes none).
 */
export function writesToJournal(
  env: NodeJS.ProcessEnv,
  fd = 1,
  stat: (fd: number) => fs.Stats | null = fstat,
): boolean {
  const named = env.JOURNAL_STREAM?.trim();
  if (!named) return false;
  const [dev, ino] = named.split(':');
  const st = stat(fd);
  return st !== null && dev !== undefined && ino !== undefined && String(st.dev) === dev && String(st.ino) === ino;
}

function fstat(fd: number): fs.Stats | null {
  try {
    return fs.fstatSync(fd);
  } catch {
    return null;
  }
}

type LineObject = { ts: string; type: DecisionType | RunnerLineType } & Record<string, unknown>;

/** The runner's lines: `json` (--json) or plain, with the journal's prefix when `journal` (stdout is its stream). */
export class RunnerLines {
  constructor(
    private readonly json: boolean,
    private readonly journal: boolean,
    private readonly write: (line: string) => void,
  ) {}

  /** One event: `object` (its `ts` and `type` first) under --json, else `text` (with its time). */
  line(level: Level, object: LineObject, text: string): void {
    const { ts, ...rest } = object;
    const line = this.json ? JSON.stringify({ ts, level, ...rest }) : text;
    this.write(this.journal ? withPriority(level, line) : line);
  }
}

/** `line` with the syslog priority prefix of `level` (for a stream that is the journal's). */
export function withPriority(level: Level, line: string): string {
  return `<${PRIORITY[level]}>${line}`;
}
