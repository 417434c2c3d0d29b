// Followers of an older release (src/leader/olderFollowers.ts, leader protocol 4): a window not
// reloaded since the update, or a runner installed from npm, speaks protocol 3 (the 0.3.0 release:
// 2) and ignores a whole snapshot that holds one state kind it does not know, and each decision of
// a type it does not know. The kinds and types those releases know are written here as data (from
// src/model/watch.ts and decision.ts at the commit that introduced protocol 3, 3f1edb8, the same
// as 0.3.0's): the old schemas are not kept, so a translated snapshot is held to that list.
import assert from 'node:assert/strict';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { LeaderServer } from '../../src/leader/leaderServer';
import { encodeMessage, LEADER_PROTOCOL_VERSION, PROBE_BUDGET_VERSION } from '../../src/leader/messages';
import { olderKnows, olderSnapshot, olderSnapshotOf, olderState } from '../../src/leader/olderFollowers';
import { parseSnapshot } from '../../src/leader/handover';
import { DecisionSchema, type Decision, type DecisionType } from '../../src/model/decision';
import { emptySnapshot, type EngineSnapshot } from '../../src/model/snapshot';
import {
  newWatch,
  WatchStateSchema,
  type WatchedThread,
  type WatchState,
  type WatchStateKind,
} from '../../src/model/watch';
import { EVERY_STATE as STATES } from '../support/watchSamples';
import { tempDir, until } from '../support/wait';

/** The state kinds a protocol-3 (and 0.3.0's protocol-2) follower knows. */
const PROTOCOL_3_STATE_KINDS: readonly string[] = [
  'running',
  'idle',
  'waitingApproval',
  'codexRetrying',
  'backoff',
  'waitingSlot',
  'turnEnding',
  'recovering',
  'usageLimited',
  'userIntent',
  'disarmed',
  'paused',
  'complete',
  'budgetLimited',
  'modelBlocked',
  'interrupted',
  'needsAttention',
  'gaveUp',
  'notAdopted',
  'failedBeforeArming',
  'unloaded',
  'elsewhere',
];
/** What a protocol-3 `waitingSlot` may hold. */
const PROTOCOL_3_HELD_KINDS: readonly string[] = ['backoff', 'usageLimited'];
/** The decision types a protocol-3 (and protocol-2) follower knows. */
const PROTOCOL_3_DECISION_TYPES: readonly string[] = [
  'armed',
  'backoff',
  'recovering',
  'recovered',
  'skipped',
  'disarmed',
  'rearmed',
  'loaded',
  'gave-up',
  'attention',
  'elsewhere',
  'connection',
  'warning',
];

/**
 * What an older follower is shown for each kind it does not know: a goal waiting for its outage's
 * probe backs off (as it did before the probe); a spent budget is a goal given up on after the
 * recoveries counted, on which an older window offers Retry now (it never does on needsAttention).
 */
const TRANSLATED: Partial<Record<WatchStateKind, WatchState>> = {
  waitingProbe: STATES.waitingProbe.held,
  budgetSpent: { kind: 'gaveUp', attempts: 12 },
};

function watch(threadId: string, state: WatchState): WatchedThread {
  const w = newWatch(threadId, 1_000);
  w.runsOn = 'openai/gpt-5.5';
  w.failures = 2;
  w.lastFailure = {
    turnId: 'turn-1',
    message: 'boom',
    code: 'internalServerError',
    httpStatus: 500,
    at: 2_000,
    dueAt: 4_000,
  };
  w.recoveries = [3_000];
  w.state = state;
  return w;
}

function snapshotOf(watches: WatchedThread[]): EngineSnapshot {
  return { ...emptySnapshot('/tmp/codex.sock', 5_000), watches };
}

/** What a protocol-3 follower's schema asks of the state kinds (the rest of each state is unchanged). */
function readableByProtocol3(snapshot: EngineSnapshot): string[] {
  const unknown: string[] = [];
  for (const w of snapshot.watches) {
    if (!PROTOCOL_3_STATE_KINDS.includes(w.state.kind)) unknown.push(`${w.threadId}: ${w.state.kind}`);
    if (w.state.kind === 'waitingSlot' && !PROTOCOL_3_HELD_KINDS.includes(w.state.held.kind))
      unknown.push(`${w.threadId}: held ${w.state.held.kind}`);
  }
  return unknown;
}

const everyKind = () => Object.values(STATES).map((s) => watch(`t-${s.kind}`, s));

describe('states and decisions for an older follower', () => {
  it('every state parses; each kind new since protocol 3 has its translation, every other is unchanged', () => {
    const newKinds = Object.keys(STATES).filter((k) => !PROTOCOL_3_STATE_KINDS.includes(k));
    assert.deepEqual(newKinds.sort(), Object.keys(TRANSLATED).sort(), 'the kinds new since protocol 3');
    for (const state of Object.values(STATES)) {
      assert.ok(WatchStateSchema.safeParse(state).success, state.kind);
      const expected = TRANSLATED[state.kind];
      if (expected) assert.deepEqual(olderState(state), expected, state.kind);
      else assert.equal(olderState(state), state, `${state.kind}: the same object`);
    }
  });

  it('a snapshot with every kind: only kinds protocol 3 knows, still a snapshot, the original kept', () => {
    const original = snapshotOf(everyKind());
    const before = structuredClone(original);
    const older = olderSnapshot(original);
    assert.deepEqual(readableByProtocol3(original), ['t-waitingProbe: waitingProbe', 't-budgetSpent: budgetSpent']);
    assert.deepEqual(readableByProtocol3(older), []);
    assert.ok(parseSnapshot(older), 'parses with the current schema');
    assert.deepEqual(original, before, 'the leader’s own snapshot is not changed');
    // Everything but the translated states is what the leader has.
    const rest = (s: EngineSnapshot) => s.watches.map((w) => ({ ...w, state: null }));
    assert.deepEqual(rest(older), rest(original));
    assert.deepEqual(
      older.watches.map((w) => w.state),
      original.watches.map((w) => TRANSLATED[w.state.kind] ?? w.state),
    );
  });

  it('a snapshot with nothing new is sent as it is (the same object: the same line)', () => {
    const plain = snapshotOf([watch('a', STATES.backoff), watch('b', STATES.gaveUp)]);
    assert.equal(olderSnapshot(plain), plain);
    assert.equal(olderSnapshotOf(plain), plain);
    for (const value of [{ n: 1 }, null, 'x', { watches: [{ state: { kind: 'someday' } }] }]) {
      assert.equal(olderSnapshotOf(value), value, 'not a snapshot of ours: as it is');
    }
  });

  it('decisions: the types protocol 3 knows go to an older follower, the new ones do not', () => {
    const decisions: Record<DecisionType, Decision> = {
      armed: { type: 'armed', threadId: 't', title: 'x' },
      backoff: { type: 'backoff', threadId: 't', attempt: 1, failedTurnId: 'f', dueAt: 1, delayMs: 1, error: 'e' },
      recovering: { type: 'recovering', threadId: 't', attempt: 1, failedTurnId: 'f' },
      recovered: { type: 'recovered', threadId: 't', attempt: 1, failedTurnId: 'f', how: 'set' },
      skipped: { type: 'skipped', threadId: 't', reason: 'r' },
      disarmed: { type: 'disarmed', threadId: 't', reason: 'r' },
      rearmed: { type: 'rearmed', threadId: 't', reason: 'r' },
      loaded: { type: 'loaded', threadId: 't', reason: 'r' },
      probe: { type: 'probe', threadId: 't', group: 'openai/gpt-5.5', others: 9 },
      released: { type: 'released', threadId: 't', by: 'p', reason: 'r' },
      'gave-up': { type: 'gave-up', threadId: 't', attempts: 6, failedTurnId: 'f' },
      attention: { type: 'attention', threadId: 't', reason: 'r' },
      elsewhere: { type: 'elsewhere', threadId: 't', status: 'blocked', reason: 'r' },
      connection: { type: 'connection', state: 'connected', detail: 'd' },
      warning: { type: 'warning', message: 'm' },
    };
    for (const d of Object.values(decisions)) {
      assert.ok(DecisionSchema.safeParse(d).success, d.type);
      assert.equal(olderKnows(d), PROTOCOL_3_DECISION_TYPES.includes(d.type), d.type);
    }
    assert.equal(olderKnows({ type: 'someday' }), true, 'not one of ours: as it is');
    assert.equal(olderKnows('x'), true);
  });

  it('a newer follower reads an older leader: a protocol-3 snapshot parses in this release’s schema', () => {
    // As a protocol-3 (or 0.3.0) leader sends it: every field of its watch, and none it did not
    // have (runsOn, recoveries, the policy's recoveryBudget).
    const v3Watch = {
      threadId: 't-old',
      title: 'old',
      armedAt: 1_000,
      armOffset: 0,
      rolloutPath: '/tmp/rollout.jsonl',
      rolloutOffset: 260,
      lastMarker: null,
      modelBlockOffset: null,
      beforeArming: null,
      goal: { status: 'blocked', objective: 'ship', tokensUsed: 10, tokenBudget: null, updatedAt: 5 },
      failures: 1,
      lastFailure: { turnId: 'turn-1', message: 'boom', code: 'internalServerError', httpStatus: 500, at: 2, dueAt: 4 },
      state: { kind: 'waitingSlot', slotAt: 9, held: { kind: 'backoff', attempt: 1, failedTurnId: 'turn-1' } },
      pending: null,
      recovered: [],
      history: [],
      updatedAt: 2_000,
    };
    const v3 = {
      at: 5_000,
      connection: { kind: 'connected', detail: 'ok', codexVersion: '0.169.0', versionWarning: null },
      target: '/tmp/codex.sock',
      pausedAt: null,
      maxAttempts: 6,
      policy: {
        baseDelayMs: 30_000,
        maxDelayMs: 1_800_000,
        maxAttempts: 6,
        autoArm: true,
        recoverUsageLimited: true,
        resyncMs: 60_000,
      },
      nextDueAt: 4,
      watches: [v3Watch, { ...v3Watch, threadId: 't-gave-up', state: { kind: 'gaveUp', attempts: 6 } }],
    };
    const parsed = parseSnapshot(v3);
    assert.ok(parsed, 'parses');
    assert.equal(parsed.watches[0].runsOn, null);
    assert.deepEqual(parsed.watches[0].recoveries, []);
    assert.equal(parsed.policy?.recoveryBudget, undefined);
    assert.deepEqual(
      parsed.watches.map((w) => w.state.kind),
      ['waitingSlot', 'gaveUp'],
    );
  });
});

// ---- the leader's server with followers of both protocols at once --------------------------

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

interface Line {
  type: string;
  snapshot?: EngineSnapshot;
  decision?: Decision;
}

/** A follower on the wire: says hello with `version`, keeps every line the leader sends. */
async function follower(sock: string, version: number): Promise<Line[]> {
  const lines: Line[] = [];
  const socket = net.connect(sock);
  closers.push(() => Promise.resolve(void socket.destroy()));
  let buffered = '';
  socket.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    for (const p of parts) lines.push(JSON.parse(p) as Line);
  });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write(encodeMessage({ type: 'hello', version, pid: 4000 + version }));
  await until(`the welcome of the v${version} follower`, () => lines.some((l) => l.type === 'welcome'), 5_000);
  return lines;
}

const of = (lines: Line[], type: string) => lines.filter((l) => l.type === type);

describe('the leader server with an older and a newer follower', () => {
  it('the older one gets the translated snapshot and no decision it does not know; the newer, everything', async () => {
    assert.equal(LEADER_PROTOCOL_VERSION, PROBE_BUDGET_VERSION);
    const dir = tempDir('cgr-older-');
    const sock = path.join(dir, 'leader.sock');
    const raw = net.createServer();
    await new Promise<void>((resolve) => raw.listen(sock, resolve));
    const server = new LeaderServer(raw);
    closers.push(() => server.close());

    const v2 = await follower(sock, 2); // the 0.3.0 release
    const v3 = await follower(sock, 3);
    const v4 = await follower(sock, 4);
    const snapshot = snapshotOf(everyKind());
    server.broadcast(snapshot);
    const by = { who: 'runner', pid: 1 };
    const probe: Decision = { type: 'probe', threadId: 't-backoff', group: 'openai/gpt-5.5', others: 1 };
    const released: Decision = { type: 'released', threadId: 't-waitingProbe', by: 't-backoff', reason: 'answered' };
    const attention: Decision = {
      type: 'attention',
      threadId: 't-budgetSpent',
      reason: 'the recovery budget is spent',
    };
    for (const decision of [probe, released, attention]) server.sendDecision({ at: 1, decision, by, notify: null });
    // The last decision is `attention`: once a follower has it, it has had everything before it.
    for (const lines of [v2, v3, v4])
      await until(
        'the decisions',
        () => of(lines, 'decision').length > 0 && of(lines, 'decision').at(-1)!.decision!.type === 'attention',
        5_000,
      );

    const sent = JSON.parse(JSON.stringify(snapshot)) as EngineSnapshot;
    assert.deepEqual(
      of(v4, 'state').map((l) => l.snapshot),
      [sent],
      'the newer one: the original',
    );
    assert.deepEqual(
      of(v4, 'decision').map((l) => l.decision!.type),
      ['probe', 'released', 'attention'],
    );
    for (const [name, lines] of [
      ['v2', v2],
      ['v3', v3],
    ] as const) {
      const states = of(lines, 'state').map((l) => l.snapshot!);
      assert.equal(states.length, 1, name);
      assert.deepEqual(readableByProtocol3(states[0]), [], `${name}: only kinds it knows`);
      assert.deepEqual(states[0], JSON.parse(JSON.stringify(olderSnapshot(snapshot))), name);
      assert.ok(parseSnapshot(states[0]), `${name}: still a snapshot of this release`);
      const byThread = new Map(states[0].watches.map((w) => [w.threadId, w.state]));
      assert.deepEqual(byThread.get('t-waitingProbe'), STATES.waitingProbe.held, `${name}: backing off`);
      assert.deepEqual(byThread.get('t-budgetSpent'), { kind: 'gaveUp', attempts: 12 }, `${name}: Retry now applies`);
      assert.deepEqual(
        of(lines, 'decision').map((l) => l.decision!.type),
        ['attention'],
        `${name}: only decisions it knows`,
      );
    }

    // A follower that joins later gets the latest state its own way, at once.
    const late3 = await follower(sock, 3);
    const late4 = await follower(sock, 4);
    await until(
      'the late followers’ state',
      () => of(late3, 'state').length > 0 && of(late4, 'state').length > 0,
      5_000,
    );
    assert.deepEqual(readableByProtocol3(of(late3, 'state')[0].snapshot!), []);
    assert.deepEqual(of(late4, 'state')[0].snapshot, sent);
  });
});
