// The load's faster path around WatchedThreadSchema (src/store/fastCheck.ts): it may only say
// "accepted as it is" where zod accepts the record and returns it unchanged; everything else
// goes to zod. Checked on the shapes the engine writes, and on thousands of random corruptions
// of them (a field replaced, removed or added), against zod itself.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as zm from 'zod/mini';
import { WatchedThreadSchema, WatchStateSchema } from '../../src/model/watch';
import { compileFastCheck } from '../../src/store/fastCheck';
import { parsePersisted } from '../../src/store/store';
import { rng } from '../support/random';
import { corrupt, samples } from '../support/watchSamples';

const fast = compileFastCheck(WatchedThreadSchema);

test('the shapes the engine writes take the faster path, and zod agrees', () => {
  for (const w of samples()) {
    const json: unknown = JSON.parse(JSON.stringify(w));
    assert.equal(fast(json), true, w.threadId);
    const z = WatchedThreadSchema.safeParse(json);
    assert.ok(z.success, w.threadId);
    assert.deepEqual(z.data, json);
  }
});

test('what zod would strip, fill in or migrate goes to zod', () => {
  const w = JSON.parse(JSON.stringify(samples()[1])) as Record<string, unknown>;
  assert.equal(fast({ ...w, extra: 1 }), false, 'an unknown key (stripped by zod)');
  const noDefault = { ...w };
  delete noDefault.modelBlockOffset;
  assert.equal(fast(noDefault), false, 'a missing field with a default (filled in by zod)');
  // An older file's due time in the state (moved by the schema's preprocess).
  const old = { ...w, state: { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1', dueAt: 7_000 } };
  assert.equal(fast(old), false);
  const doc = { version: 1, pausedAt: null, watches: { 't-failed': old }, disarmed: {} };
  const owned = parsePersisted(structuredClone(doc), Date.now, true);
  const copied = parsePersisted(structuredClone(doc));
  assert.ok(!('error' in owned) && !('error' in copied));
  assert.deepEqual(owned, copied);
  assert.equal(owned.state.watches['t-failed'].lastFailure?.dueAt, 7_000);
});

test('on random corruptions, the faster path never accepts what zod rejects or would change', () => {
  const random = rng(1301);
  let accepted = 0;
  let rejected = 0;
  for (let i = 0; i < 6_000; i++) {
    const base = samples()[i % 6];
    let v: unknown = base;
    for (let k = 1 + Math.floor(random() * 2); k > 0; k--) v = corrupt(v, random);
    const z = WatchedThreadSchema.safeParse(v);
    if (fast(v)) {
      accepted += 1;
      assert.ok(z.success, `accepted what zod rejects: ${JSON.stringify(v)}`);
      assert.deepEqual(z.data, v, `accepted what zod changes: ${JSON.stringify(v)}`);
    } else if (!z.success) rejected += 1;
  }
  // Both kinds occurred: the corruptions reach what matters.
  assert.ok(accepted > 300, `${accepted} accepted`);
  assert.ok(rejected > 2_000, `${rejected} rejected`);
});

test('a state the discriminated union does not know goes to zod', () => {
  const check = compileFastCheck(WatchStateSchema);
  assert.equal(check({ kind: 'running' }), true);
  assert.equal(check({ kind: 'flying' }), false);
  assert.equal(check({ kind: 'running', extra: true }), false);
  assert.equal(check({ kind: 'gaveUp', attempts: 1.5 }), false);
});

test('the same definitions written with zod/mini: a format the schema itself checks (z.int()) is kept', () => {
  const int = compileFastCheck(zm.int());
  assert.equal(int(3), true);
  assert.equal(int(1.5), false);
  assert.equal(compileFastCheck(zm.int().check(zm.positive()))(0), false);
  assert.equal(compileFastCheck(zm.string().check(zm.minLength(1)))(''), false);
  const o = compileFastCheck(zm.object({ a: zm.nullable(zm.int()), b: zm.optional(zm.string()) }));
  assert.equal(o({ a: null }), true);
  assert.equal(o({ a: 2.5 }), false);
  assert.equal(o({ a: 1, c: 1 }), false);
  assert.equal(compileFastCheck(zm.email())('x'), false, 'a string format it does not know: zod decides');
});

test('ownKeysOnly: the top-level object is not searched for unknown keys; nested objects still are', () => {
  const schema = zm.object({ a: zm.int(), b: zm.object({ c: zm.string() }) });
  const closed = compileFastCheck(schema, { ownKeysOnly: true });
  assert.equal(closed({ a: 1, b: { c: 'x' } }), true);
  assert.equal(closed({ a: 1, b: { c: 'x' }, extra: 1 }), true, 'the caller built it with its own keys only');
  assert.equal(closed({ a: 1, b: { c: 'x', extra: 1 } }), false, 'a nested unknown key: zod strips it');
  assert.equal(closed({ a: 1.5, b: { c: 'x' } }), false);
  assert.equal(compileFastCheck(schema)({ a: 1, b: { c: 'x' }, extra: 1 }), false, 'without the option');
});
