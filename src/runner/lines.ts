// What the runner writes, one line per event, with a severity an operator can route: under
// `--json` each object carries `level` (after `ts`); when stdout is a systemd journal stream
// (`JOURNAL_STREAM` names it), every line starts with the syslog priority prefix `<N>`, which
// journald reads as the entry's priority and removes from the message (`journalctl -o cat` still
// shows one JSON object a line), so `journalctl -p warning` finds the goals given up, those that
// need attention, the warnings and the fatal errors. A line on a terminal, in a pipe or in a file
// is as it always was.
import * as fs from 'node:fs';
import type { Decision } from '../model/decision';
import { needsPerson } from '../model/notice';

/** The syslog severities the runner uses (RFC 5424 names, as journald shows them). */
export type Level = 'error' | 'warning' | 'notice' | 'info' | 'debug';

const PRIORITY: Record<Level, number> = { error: 3, warning: 4, notice: 5, info: 6, debug: 7 };

/**
 * How much a decision matters to an operator: a goal given up on is an error (its recovery failed
 * for good), one that needs a person or a warning is a warning, a lost connection a warning, what
 * the engine did to a goal a notice, the rest (a recovery held for later, a connection made) info.
 */
export function decisionLevel(d: Decision): Level {
  if (d.type === 'gave-up') return 'error';
  if (needsPerson(d) || d.type === 'warning') return 'warning';
  switch (d.type) {
    case 'connection':
      return d.state === 'disconnected' || d.state === 'error' ? 'warning' : 'info';
    case 'skipped':
    case 'loaded':
      return 'info';
    default:
      return 'notice';
  }
}

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

/** The runner's lines: `json` (--json) or plain, with the journal's prefix when `journal` (stdout is its stream). */
export class RunnerLines {
  constructor(
    private readonly json: boolean,
    private readonly journal: boolean,
    private readonly write: (line: string) => void,
  ) {}

  /** One event: `object` (its `ts` and `type` first) under --json, else `text` (with its time). */
  line(level: Level, object: { ts: string; type: string } & Record<string, unknown>, text: string): void {
    const { ts, ...rest } = object;
    const line = this.json ? JSON.stringify({ ts, level, ...rest }) : text;
    this.write(this.journal ? withPriority(level, line) : line);
  }
}

/** `line` with the syslog priority prefix of `level` (for a stream that is the journal's). */
export function withPriority(level: Level, line: string): string {
  return `<${PRIORITY[level]}>${line}`;
}
