// State files written before the due time lived in one place kept it in the state too
// (`backoff.dueAt`, `usageLimited.dueAt`, also inside a held `waitingSlot`): loading one takes
// that copy as the failure's due time, so a recovery scheduled by an older engine stays due when
// it was, and nothing scheduled is left without a due time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newWatch } from '../../src/model/watch';
import { dueAt } from '../../src/model/queries';
import { parsePersisted } from '../../src/store/store';

function oldFile(state: Record<string, unknown>, lastDue: number | null): unknown {
  const w = newWatch('t', 1_000) as unknown as Record<string, unknown>;
  w.lastFailure = { turnId: 'f1', message: 'm', code: 'internalServerError', httpStatus: 500, at: 900, dueAt: lastDue };
  w.state = state;
  return { version: 1, pausedAt: null, watches: { t: w }, disarmed: {} };
}

test("an old file's backoff due time becomes the failure's due time", () => {
  const parsed = parsePersisted(oldFile({ kind: 'backoff', dueAt: 5_000, attempt: 1, failedTurnId: 'f1' }, null));
  assert.ok(!('error' in parsed));
  const w = parsed.state.watches.t;
  assert.deepEqual(w.state, { kind: 'backoff', attempt: 1, failedTurnId: 'f1' });
  assert.equal(dueAt(w), 5_000);
});

test('an old usage limit, and a held one, keep their due times', () => {
  const usage = parsePersisted(oldFile({ kind: 'usageLimited', dueAt: 7_000, resetsAt: 6_000 }, 1));
  assert.ok(!('error' in usage));
  assert.equal(dueAt(usage.state.watches.t), 7_000);
  const held = parsePersisted(
    oldFile(
      { kind: 'waitingSlot', slotAt: 9_000, held: { kind: 'backoff', dueAt: 8_000, attempt: 2, failedTurnId: 'f1' } },
      1,
    ),
  );
  assert.ok(!('error' in held));
  assert.equal(dueAt(held.state.watches.t), 8_000);
});

test('a new file is read as written', () => {
  const parsed = parsePersisted(oldFile({ kind: 'backoff', attempt: 1, failedTurnId: 'f1' }, 4_000));
  assert.ok(!('error' in parsed));
  assert.equal(dueAt(parsed.state.watches.t), 4_000);
});
