// The load's faster path around WatchedThreadSchema (src/store/fastCheck.ts): it may only say
// "accepted as it is" where zod accepts the record and returns it unchanged; everything else
// goes to zod. Checked on the shapes the engine writes, and on thousands of random corruptions
// of them (a field replaced, removed or added), against zod itself.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as zm from 'zod/mini';
import { newWatch, WatchedThreadSchema, WatchStateSchema, type WatchedThread } from '../../src/model/watch';
import { compileFastCheck } from '../../src/store/fastCheck';
import { parsePersisted } from '../../src/store/store';
import { rng } from '../support/random';

const fast = compileFastCheck(WatchedThreadSchema);

/** Watches as the engine writes them: fresh, failed and scheduled, recovered, held, elsewhere. */
function samples(): WatchedThread[] {
  const fresh = newWatch('t-fresh', 1_000);
  const failed = newWatch('t-failed', 1_000);
  failed.goal = { status: 'blocked', objective: 'ship', tokensUsed: 10, tokenBudget: null, updatedAt: 5 };
  failed.rolloutPath = '/tmp/rollout.jsonl';
  failed.armOffset = 0;
  failed.rolloutOffset = 260;
  failed.failures = 1;
  failed.lastFailure = {
    turnId: 'turn-1',
    message: 'boom',
    code: 'internalServerError',
    httpStatus: 500,
    at: 2_000,
    dueAt: 4_000,
  };
  failed.state = { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' };
  const recovered: WatchedThread = structuredClone(failed);
  recovered.threadId = 't-recovered';
  recovered.state = { kind: 'running' };
  recovered.recovered = ['turn-1'];
  recovered.history = [
    { at: 4_000, failedTurnId: 'turn-1', attempt: 1, error: 'internalServerError', outcome: 'recovered', detail: 'ok' },
    { at: 3_000, failedTurnId: 'turn-0', attempt: 2, error: 'other', outcome: 'failed-again' },
  ];
  recovered.lastMarker = { status: 'paused', offset: 12 };
  recovered.pending = { failedTurnId: 'turn-1', attempt: 1, sentAt: 3_900 };
  const held: WatchedThread = structuredClone(failed);
  held.threadId = 't-held';
  held.state = { kind: 'waitingSlot', slotAt: 9_000, held: { kind: 'usageLimited', resetsAt: null } };
  const elsewhere = newWatch('t-elsewhere', 1_000);
  elsewhere.state = {
    kind: 'elsewhere',
    since: 1,
    goal: 'blocked',
    seenActive: true,
    retryable: true,
    retryAsked: { at: 2, failedTurnId: 'turn-1' },
  };
  const disarmed = newWatch('t-disarmed', 1_000);
  disarmed.state = { kind: 'disarmed', at: 5, neverArmed: true };
  return [fresh, failed, recovered, held, elsewhere, disarmed];
}

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

const ODD: unknown[] = [
  undefined,
  null,
  0,
  -1,
  1.5,
  2 ** 60,
  NaN,
  Infinity,
  '',
  'x',
  'active',
  'backoff',
  'recovered',
  true,
  false,
  [],
  ['x'],
  [1],
  {},
  { kind: 'running' },
  { kind: 'backoff', attempt: 0, failedTurnId: 't' },
  { status: 'paused', offset: -1 },
];

/** Every path to a value inside `v`. */
function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [at];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...paths(x, [...at, i])));
  else if (typeof v === 'object' && v !== null)
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) out.push(...paths(x, [...at, k]));
  return out;
}

function corrupt(v: unknown, random: () => number): unknown {
  const copy: unknown = JSON.parse(JSON.stringify(v));
  const all = paths(copy).filter((p) => p.length > 0);
  const path = all[Math.floor(random() * all.length)];
  let parent = copy as Record<string | number, unknown>;
  for (const k of path.slice(0, -1)) parent = parent[k] as Record<string | number, unknown>;
  const key = path[path.length - 1];
  const r = random();
  if (r < 0.15) delete parent[key];
  else if (r < 0.25 && typeof parent === 'object' && !Array.isArray(parent)) parent.unknownKey = 1;
  else parent[key] = structuredClone(ODD[Math.floor(random() * ODD.length)]);
  return copy;
}

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
