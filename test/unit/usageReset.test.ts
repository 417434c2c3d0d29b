import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { resetFromMessage } from '../../src/core/usageReset';

const now = new Date(2026, 10, 30, 9, 0, 0).getTime(); // 09:00 local
/** The end of the minute a message names: the latest its reset can be (the text is rounded down). */
const endOf = (...a: [number, number, number, number, number]) => new Date(...a).getTime() + 60_000;

describe('usage-limit reset from the error message', () => {
  it('reads a time of day as the end of its minute, at its next occurrence', () => {
    assert.equal(
      resetFromMessage('You’ve hit your usage limit. … or try again at 9:08 AM.', now),
      endOf(2026, 10, 30, 9, 8),
    );
    assert.equal(resetFromMessage('or try again at 3:45 PM.', now), endOf(2026, 10, 30, 15, 45));
    assert.equal(
      resetFromMessage('or try again at 8:58 AM.', now),
      endOf(2026, 11, 1, 8, 58),
      'more than a minute past means tomorrow',
    );
    assert.equal(resetFromMessage('or try again at 12:05 AM.', now), endOf(2026, 11, 1, 0, 5));
    assert.equal(resetFromMessage('or try again at 12:05 PM.', now), endOf(2026, 10, 30, 12, 5));
  });

  it('reads this clock minute, and one at most a minute past, as today: never tomorrow', () => {
    // Measured on the real daemon: a reset 8 s away, at 20:46:58, reads "8:46 PM" at 20:46:50;
    // read as a time already past, it was moved to tomorrow (the runner logged delayMs 86458817).
    const at = new Date(2026, 10, 30, 20, 46, 50).getTime();
    assert.equal(resetFromMessage('or try again at 8:46 PM.', at), endOf(2026, 10, 30, 20, 46));
    // Its minute is over (the reset has passed) but by less than a minute: still today's.
    const later = new Date(2026, 10, 30, 20, 47, 0).getTime();
    assert.equal(resetFromMessage('or try again at 8:46 PM.', later), endOf(2026, 10, 30, 20, 46));
    // More than a minute past: tomorrow's.
    const past = new Date(2026, 10, 30, 20, 47, 1).getTime();
    assert.equal(resetFromMessage('or try again at 8:46 PM.', past), endOf(2026, 11, 1, 20, 46));
  });

  it('reads a full date as the end of its minute', () => {
    assert.equal(resetFromMessage('or try again at Jul 9th, 2026 1:47 AM.', now), endOf(2026, 6, 9, 1, 47));
    assert.equal(resetFromMessage('or try again at Sep 1st, 2026 3:14 PM.', now), endOf(2026, 8, 1, 15, 14));
    assert.equal(resetFromMessage('or try again at Aug 10, 2026, 11:12 AM.', now), endOf(2026, 7, 10, 11, 12));
  });

  it('reads every month, in both date shapes of the message', () => {
    const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
    for (const [month, name] of months.entries()) {
      assert.equal(resetFromMessage(`or try again at ${name} 9th, 2027 1:47 AM.`, now), endOf(2027, month, 9, 1, 47));
      assert.equal(
        resetFromMessage(`or try again at ${name} 23, 2027, 11:12 PM.`, now),
        endOf(2027, month, 23, 23, 12),
      );
    }
  });

  it('reads both clock formats: 12-hour with AM or PM, and 24-hour', () => {
    // 12-hour: every hour from 1 to 12, both halves of the day (now is 09:00, so 12:xx AM to 8:xx AM are tomorrow's).
    for (let hour = 1; hour <= 12; hour++) {
      for (const [meridiem, add] of [
        ['AM', 0],
        ['PM', 12],
      ] as const) {
        const h = (hour % 12) + add;
        const expected = h < 9 ? endOf(2026, 11, 1, h, 30) : endOf(2026, 10, 30, h, 30);
        assert.equal(resetFromMessage(`or try again at ${hour}:30 ${meridiem}.`, now), expected, `${hour} ${meridiem}`);
      }
    }
    // 24-hour: from 0:00 to 23:59.
    assert.equal(resetFromMessage('or try again at 0:00.', now), endOf(2026, 11, 1, 0, 0));
    assert.equal(resetFromMessage('or try again at 13:05.', now), endOf(2026, 10, 30, 13, 5));
    assert.equal(resetFromMessage('or try again at 23:59.', now), endOf(2026, 10, 30, 23, 59));
  });

  it('returns null for a time no clock shows', () => {
    for (const m of [
      'try again at 24:00',
      'try again at 9:60',
      'try again at 0:30 AM',
      'try again at 13:00 PM',
      'try again at 12:60 PM',
      'try again at Jul 9th, 2027 24:00',
    ]) {
      assert.equal(resetFromMessage(m, now), null, m);
    }
  });

  it('returns null when there is no usable time', () => {
    for (const m of [
      'exceeded retry limit, last status: 429',
      'Your workspace is out of credits. Add credits to continue.',
      'try again at 13:61',
      'try again at 0:30 PM',
      'try again at Foo 3, 2026 1:00 PM',
      '',
    ]) {
      assert.equal(resetFromMessage(m, now), null, m);
    }
  });
});
