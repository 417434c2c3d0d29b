// The runner's lines and their severity (src/runner/lines.ts): every decision type has a level an
// operator can route (a row per type: a new type needs one), `--json` objects carry it after `ts`,
// and every line carries the syslog priority prefix on the journal's own stream only.
import assert from 'node:assert/strict';
import type * as fs from 'node:fs';
import { describe, it } from 'node:test';
import type { Decision, DecisionType } from '../../src/model/decision';
import { decisionLevel, type Level, RunnerLines, withPriority, writesToJournal } from '../../src/runner/lines';
import { decisionLine } from '../../src/model/decisionText';

const t = { threadId: 'th' };
const ROWS: Record<DecisionType, [Decision, Level][]> = {
  'gave-up': [[{ type: 'gave-up', ...t, attempts: 6, failedTurnId: 'x' }, 'error']],
  attention: [[{ type: 'attention', ...t, reason: 'recovery budget spent' }, 'warning']],
  warning: [[{ type: 'warning', message: 'disk full' }, 'warning']],
  // The daemon away: one warning (its first failed try), quiet tries, a notice when it is back.
  connection: [
    [{ type: 'connection', state: 'disconnected', detail: 'gone' }, 'warning'],
    [{ type: 'connection', state: 'error', detail: 'refused' }, 'warning'],
    [{ type: 'connection', state: 'disconnected', detail: 'gone', tries: 1 }, 'warning'],
    [{ type: 'connection', state: 'error', detail: 'refused', tries: 1 }, 'warning'],
    [{ type: 'connection', state: 'error', detail: 'refused', tries: 2 }, 'debug'],
    [{ type: 'connection', state: 'disconnected', detail: 'gone', tries: 9 }, 'debug'],
    [{ type: 'connection', state: 'connecting', detail: '…' }, 'info'],
    [{ type: 'connection', state: 'connected', detail: 'ok' }, 'info'],
    [{ type: 'connection', state: 'connected', detail: 'ok', tries: 0 }, 'info'],
    [{ type: 'connection', state: 'connected', detail: 'ok', tries: 1 }, 'notice'],
    [{ type: 'connection', state: 'connected', detail: 'ok', tries: 14 }, 'notice'],
  ],
  skipped: [[{ type: 'skipped', ...t, reason: 'global rate limit' }, 'info']],
  loaded: [[{ type: 'loaded', ...t, reason: 'a client loaded it' }, 'info']],
  armed: [[{ type: 'armed', ...t, title: 'g' }, 'notice']],
  backoff: [
    [
      { type: 'backoff', ...t, attempt: 1, failedTurnId: 'x', dueAt: 1, delayMs: 1, error: 'internalServerError' },
      'notice',
    ],
  ],
  recovering: [[{ type: 'recovering', ...t, attempt: 1, failedTurnId: 'x' }, 'notice']],
  recovered: [[{ type: 'recovered', ...t, attempt: 1, failedTurnId: 'x', how: 'set' }, 'notice']],
  disarmed: [[{ type: 'disarmed', ...t, reason: 'by the user' }, 'notice']],
  rearmed: [[{ type: 'rearmed', ...t, reason: 'by the user' }, 'notice']],
  probe: [[{ type: 'probe', ...t, group: 'mock/m · server error', others: 9 }, 'notice']],
  released: [[{ type: 'released', ...t, by: 'p', reason: 'answered' }, 'notice']],
  elsewhere: [[{ type: 'elsewhere', ...t, status: 'blocked', reason: 'in the desktop app' }, 'notice']],
};

describe('the level of each decision', () => {
  for (const [type, rows] of Object.entries(ROWS))
    for (const [d, level] of rows)
      it(`${type}${d.type === 'connection' ? ` (${d.state}, tries ${d.tries ?? 'not said'})` : ''} → ${level}`, () =>
        assert.equal(decisionLevel(d), level));
});

describe('a connection line in words', () => {
  const line = (d: Partial<Extract<Decision, { type: 'connection' }>>) =>
    decisionLine({ type: 'connection', state: 'error', detail: 'refused', ...d }, 0).slice(25);
  it('the first loss as it always was; a later try numbered; the return with the tries it took', () => {
    assert.equal(line({ tries: 1 }), 'connection error: refused');
    assert.equal(line({}), 'connection error: refused');
    assert.equal(line({ tries: 4 }), 'connection error: refused (try 4)');
    assert.equal(line({ state: 'connected', detail: 'ok', tries: 0 }), 'connection connected: ok');
    assert.equal(
      line({ state: 'connected', detail: 'ok', tries: 1 }),
      'connection connected: ok (back after 1 failed try)',
    );
    assert.equal(
      line({ state: 'connected', detail: 'ok', tries: 7 }),
      'connection connected: ok (back after 7 failed tries)',
    );
  });
});

describe('the runner’s lines', () => {
  const object = { ts: '2026-12-03T15:00:00.000Z', type: 'gave-up' as const, threadId: 'th' };
  const text = '2026-12-03T15:00:00.000Z gave-up th: …';
  const written = (json: boolean, journal: boolean) => {
    const out: string[] = [];
    new RunnerLines(json, journal, (l) => out.push(l)).line('error', object, text);
    return out;
  };

  it('--json: the object with its level right after its time', () => {
    const [line] = written(true, false);
    assert.deepEqual(Object.keys(JSON.parse(line) as object), ['ts', 'level', 'type', 'threadId']);
    assert.equal((JSON.parse(line) as { level: string }).level, 'error');
  });
  it('--json on the journal: the priority first too (journald takes it off the message)', () =>
    assert.deepEqual(written(true, true), [`<3>${written(true, false)[0]}`]));
  it('plain, not on the journal: the line as it always was', () => assert.deepEqual(written(false, false), [text]));
  it('plain on the journal: the syslog priority first', () => assert.deepEqual(written(false, true), [`<3>${text}`]));
  it('each level’s priority', () =>
    assert.deepEqual(
      (['error', 'warning', 'notice', 'info', 'debug'] as Level[]).map((l) => withPriority(l, 'x')),
      ['<3>x', '<4>x', '<5>x', '<6>x', '<7>x'],
    ));
});

describe('whether stdout is the journal’s stream', () => {
  const stat = (dev: number, ino: number) => () => ({ dev, ino }) as fs.Stats;
  const rows: [string, string | undefined, () => fs.Stats | null, boolean][] = [
    ['JOURNAL_STREAM names this very stream', '2049:12345', stat(2049, 12345), true],
    ['another stream (stdout piped elsewhere)', '2049:12345', stat(2049, 999), false],
    ['another device', '2049:12345', stat(7, 12345), false],
    ['not under systemd', undefined, stat(2049, 12345), false],
    ['malformed', '2049', stat(2049, 12345), false],
    ['the descriptor cannot be read', '2049:12345', () => null, false],
  ];
  for (const [name, value, st, expected] of rows)
    it(`${name} → ${expected}`, () => assert.equal(writesToJournal({ JOURNAL_STREAM: value }, 1, st), expected));
});
