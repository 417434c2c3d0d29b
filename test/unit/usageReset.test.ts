import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { resetFromMessage } from '../../src/core/usageReset';

const now = new Date(2026, 10, 30, 9, 0, 0).getTime(); // 09:00 local

describe('usage-limit reset from the error message', () => {
  it('reads a time of day as its next occurrence', () => {
    assert.equal(
      resetFromMessage('You’ve hit your usage limit. … or try again at 9:08 AM.', now),
      new Date(2026, 10, 30, 9, 8).getTime(),
    );
    assert.equal(resetFromMessage('or try again at 3:45 PM.', now), new Date(2026, 10, 30, 15, 45).getTime());
    assert.equal(
      resetFromMessage('or try again at 8:59 AM.', now),
      new Date(2026, 11, 1, 8, 59).getTime(),
      'earlier today means tomorrow',
    );
    assert.equal(resetFromMessage('or try again at 12:05 AM.', now), new Date(2026, 11, 1, 0, 5).getTime());
    assert.equal(resetFromMessage('or try again at 12:05 PM.', now), new Date(2026, 10, 30, 12, 5).getTime());
  });

  it('reads a full date', () => {
    assert.equal(
      resetFromMessage('or try again at Jul 9th, 2026 1:47 AM.', now),
      new Date(2026, 6, 9, 1, 47).getTime(),
    );
    assert.equal(
      resetFromMessage('or try again at Sep 1st, 2026 3:14 PM.', now),
      new Date(2026, 8, 1, 15, 14).getTime(),
    );
    assert.equal(
      resetFromMessage('or try again at Aug 10, 2026, 11:12 AM.', now),
      new Date(2026, 7, 10, 11, 12).getTime(),
    );
  });

  it('returns null when there is no usable time', () => {
    for (const m of [
      'exceeded retry limit, last status: 429',
      'try again at 13:61',
      'try again at 0:30 PM',
      'try again at Foo 3, 2026 1:00 PM',
      '',
    ]) {
      assert.equal(resetFromMessage(m, now), null, m);
    }
  });
});
