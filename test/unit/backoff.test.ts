import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jitteredDelay, nominalDelay } from '../../src/core/backoff';
import { RecoveryLimiter } from '../../src/core/limiter';
import { classifyFailure, describeErrorInfo } from '../../src/core/classify';

const policy = { baseMs: 30_000, capMs: 30 * 60_000 };

describe('backoff', () => {
  it('doubles from the base for each consecutive failure, up to the cap', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 8].map((n) => nominalDelay(policy, n)),
      [30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_800_000, 1_800_000],
    );
    assert.equal(nominalDelay(policy, 10_000), 1_800_000, 'a huge count stays at the cap');
  });

  it('equal jitter lies between half and all of the nominal delay', () => {
    assert.equal(
      jitteredDelay(policy, 3, () => 0),
      60_000,
    );
    assert.equal(
      jitteredDelay(policy, 3, () => 0.999999),
      120_000,
    );
    for (let i = 0; i < 1000; i++) {
      const d = jitteredDelay(policy, 2, Math.random);
      assert.ok(d >= 30_000 && d <= 60_000, `delay ${d} out of range`);
    }
    assert.equal(
      jitteredDelay(policy, 1, () => Number.NaN),
      30_000,
      'a broken random source cannot go below half',
    );
  });
});

describe('global limiter', () => {
  it('allows a burst, then one per interval', () => {
    const l = new RecoveryLimiter({ burst: 3, intervalMs: 10_000 });
    const t = 1_000_000;
    assert.deepEqual([l.take(t), l.take(t), l.take(t)], [0, 0, 0]);
    assert.equal(l.take(t), 10_000);
    assert.equal(l.take(t + 4_000), 6_000);
    assert.equal(l.take(t + 10_000), 0);
    assert.equal(l.take(t + 10_000), 10_000);
  });

  it('does not bank tokens from a clock that jumped back', () => {
    const l = new RecoveryLimiter({ burst: 1, intervalMs: 10_000 });
    assert.equal(l.take(50_000), 0);
    assert.equal(l.take(10_000), 10_000, 'jumped back: no free token');
    assert.equal(l.take(20_000), 0);
  });

  it('a token given back is available again', () => {
    const l = new RecoveryLimiter({ burst: 1, intervalMs: 10_000 });
    assert.equal(l.take(0), 0);
    l.giveBack();
    assert.equal(l.take(0), 0);
  });
});

describe('failure classification', () => {
  const cases: [unknown, string][] = [
    ['internalServerError', 'transient'],
    ['serverOverloaded', 'transient'],
    [{ responseStreamDisconnected: { httpStatusCode: null } }, 'transient'],
    [{ responseTooManyFailedAttempts: { httpStatusCode: 502 } }, 'transient'],
    [{ responseTooManyFailedAttempts: { httpStatusCode: 429 } }, 'transient'],
    [{ httpConnectionFailed: { httpStatusCode: null } }, 'transient'],
    [{ responseStreamConnectionFailed: { httpStatusCode: 503 } }, 'transient'],
    [{ responseTooManyFailedAttempts: { httpStatusCode: 400 } }, 'permanent'],
    [{ httpConnectionFailed: { httpStatusCode: 401 } }, 'permanent'],
    ['contextWindowExceeded', 'permanent'],
    ['unauthorized', 'permanent'],
    ['badRequest', 'permanent'],
    ['sessionBudgetExceeded', 'permanent'],
    ['usageLimitExceeded', 'usageLimit'],
    [null, 'permanent'],
    [{ somethingNew: {} }, 'permanent'],
    // New in 0.171.0: a policy refusal (beside cyberPolicy); a retry gets the same answer.
    ['bioPolicy', 'permanent'],
    ['cyberPolicy', 'permanent'],
    // A code this version does not know (a later Codex's): a person decides, never a retry loop.
    ['someCodeFromALaterCodex', 'permanent'],
    [{ someVariantFromALaterCodex: { httpStatusCode: 503 } }, 'permanent'],
    [42, 'permanent'],
  ];
  for (const [info, kind] of cases) {
    it(`${JSON.stringify(info)} is ${kind}`, () => assert.equal(classifyFailure(info).kind, kind));
  }

  it('"other" is transient only for a dropped stream, not for a plain 400 (measured messages)', () => {
    assert.equal(
      classifyFailure(
        'other',
        'stream disconnected before completion: Transport error: network error: error decoding response body',
      ).kind,
      'transient',
    );
    assert.equal(
      classifyFailure('other', 'stream disconnected before completion: upstream exploded').kind,
      'transient',
    );
    assert.equal(
      classifyFailure('other', '{"error":{"type":"invalid_request_error","message":"bad request"}}').kind,
      'permanent',
    );
    assert.equal(classifyFailure('other').kind, 'permanent');
  });

  it('bioPolicy and an unknown code stay permanent whatever the message says', () => {
    const transientLooking = 'stream disconnected before completion: network error';
    assert.equal(classifyFailure('bioPolicy', transientLooking).kind, 'permanent');
    assert.equal(classifyFailure('someCodeFromALaterCodex', transientLooking).kind, 'permanent');
    assert.deepEqual(classifyFailure('bioPolicy'), { kind: 'permanent', code: 'bioPolicy', httpStatus: null });
  });

  it('names the variant and its HTTP status', () => {
    assert.deepEqual(describeErrorInfo({ responseStreamDisconnected: { httpStatusCode: 502 } }), {
      code: 'responseStreamDisconnected',
      httpStatus: 502,
    });
    assert.deepEqual(describeErrorInfo('internalServerError'), { code: 'internalServerError', httpStatus: null });
  });
});
