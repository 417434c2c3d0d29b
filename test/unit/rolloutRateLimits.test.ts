// The rate limits a failed turn's rollout holds (docs/daemon-behaviour.md (r)): the `token_count`
// line read as the protocol's `RateLimitSnapshot` (the exact line both Codex builds wrote, unknown
// fields ignored, a malformed line none), and the lookup from the end of the file that takes the
// turn's own line and never one from before the turn's start or the goal's activation.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findTurnRateLimits } from '../../src/rollout/backwardLookups';
import { parseRateLimitLine } from '../../src/rollout/rateLimitLines';
import { readLimit } from '../../src/core/rateLimits';
import { goalEvent, noiseLine as noise, realMarker, taskStarted, tokenCount } from '../support/rolloutLines';
import { rng } from '../support/random';
import { NULL_SNAPSHOT } from '../support/fakeWorld';
import { tempDir } from '../support/wait';

// Written by codex 0.169.0 and 0.171.0 alike for a 429 with the headers (measured, (r)).
const MEASURED =
  '{"timestamp":"2026-12-05T15:52:48.511Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"limit_id":"codex","limit_name":null,"primary":{"used_percent":100,"window_minutes":300,"resets_at":1796489568},"secondary":{"used_percent":20,"window_minutes":10080,"resets_at":1797089568},"credits":null,"individual_limit":null,"spend_control_reached":null,"plan_type":null,"rate_limit_reached_type":null}}}';
const MEASURED_NULL =
  '{"timestamp":"2026-12-05T15:52:49.654Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"limit_id":"codex","limit_name":null,"primary":null,"secondary":null,"credits":null,"individual_limit":null,"spend_control_reached":null,"plan_type":null,"rate_limit_reached_type":null}}}';

const rand = rng(7);
const noiseLine = () => noise(rand);
const window = (resetsAt: number) => ({ usedPercent: 100, windowDurationMins: 300, resetsAt });

describe("a rollout's token_count line, read as a rate-limit snapshot", () => {
  it('the measured line with the headers: the windows, as the notification sends them', () => {
    assert.deepEqual(parseRateLimitLine(MEASURED), {
      limitId: 'codex',
      primary: { usedPercent: 100, windowDurationMins: 300, resetsAt: 1796489568 },
      secondary: { usedPercent: 20, windowDurationMins: 10080, resetsAt: 1797089568 },
      rateLimitReachedType: null,
      spendControlReached: null,
    });
    assert.deepEqual(readLimit([parseRateLimitLine(MEASURED)!], 0), {
      kind: 'reset',
      at: 1796489568_000,
      windowMins: 300,
    });
  });

  it('without the headers: a snapshot that tells nothing (every field null)', () => {
    const s = parseRateLimitLine(MEASURED_NULL)!;
    assert.deepEqual(s, {
      limitId: 'codex',
      primary: null,
      secondary: null,
      rateLimitReachedType: null,
      spendControlReached: null,
    });
    assert.equal(readLimit([s], 0), null);
  });

  it('the reached type and the spend control are read; unknown fields are ignored', () => {
    const line = JSON.parse(MEASURED) as { payload: { rate_limits: Record<string, unknown> } };
    Object.assign(line.payload.rate_limits, {
      rate_limit_reached_type: 'workspace_owner_credits_depleted',
      spend_control_reached: true,
      new_field: { x: 1 },
    });
    (line.payload.rate_limits.primary as Record<string, unknown>).extra = 'y';
    const s = parseRateLimitLine(JSON.stringify(line));
    assert.equal(s?.rateLimitReachedType, 'workspace_owner_credits_depleted');
    assert.equal(s?.spendControlReached, true);
    assert.deepEqual(s?.primary, { usedPercent: 100, windowDurationMins: 300, resetsAt: 1796489568 });
  });

  it('a malformed line, another line, or a token_count without rate limits is no snapshot', () => {
    const bad = [
      MEASURED.slice(0, -2),
      MEASURED.replace('"resets_at":1796489568', '"resets_at":"soon"'),
      MEASURED.replace('"primary":{', '"primary":[{').replace('},"secondary"', '}],"secondary"'),
      MEASURED.replace('"type":"event_msg"', '"type":"response_item"'),
      MEASURED.replace('"type":"token_count"', '"type":"token_counted"'),
      '{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{}},"rate_limits":null}}',
      '{"type":"event_msg","payload":"token_count"}',
      'token_count',
      noiseLine(),
      goalEvent('active'),
    ];
    for (const line of bad) assert.equal(parseRateLimitLine(line), null, line.slice(0, 200));
  });

  it('the fake daemon writes the line the real daemon does', () => {
    const snapshot = { ...NULL_SNAPSHOT, primary: window(1796489568) };
    assert.deepEqual(parseRateLimitLine(tokenCount(snapshot))?.primary, window(1796489568));
    assert.deepEqual(parseRateLimitLine(tokenCount(NULL_SNAPSHOT)), parseRateLimitLine(MEASURED_NULL));
  });
});

describe("the failed turn's rate limits, looked up from the rollout's end (findTurnRateLimits)", () => {
  const dir = tempDir('cgr-rollrate-');
  let n = 0;
  const file = (lines: string[], tail = '') => {
    const p = path.join(dir, `r${n++}.jsonl`);
    fs.writeFileSync(p, lines.map((l) => `${l}\n`).join('') + tail);
    return p;
  };
  const older = tokenCount({ ...NULL_SNAPSHOT, primary: window(111) });
  const own = tokenCount({ ...NULL_SNAPSHOT, primary: window(222) });
  const nulls = tokenCount(NULL_SNAPSHOT);

  it("the turn's last line, not an older turn's; lines after it (the turn's end) are passed over", async () => {
    const p = file([goalEvent('active'), taskStarted('t1'), older, taskStarted('t2'), nulls, own, noiseLine()]);
    assert.deepEqual((await findTurnRateLimits(p))?.primary, window(222));
  });

  it("a turn with no such line has none: an older turn's, or one before the goal's activation, never counts", async () => {
    assert.equal(await findTurnRateLimits(file([taskStarted('t1'), older, taskStarted('t2'), noiseLine()])), null);
    assert.equal(await findTurnRateLimits(file([taskStarted('t1'), older, goalEvent('active'), noiseLine()])), null);
    assert.equal(await findTurnRateLimits(file([older, realMarker('paused')]), { minOffset: older.length + 1 }), null);
    assert.equal(await findTurnRateLimits(file([])), null);
  });

  it('without the headers the line still speaks (all null): an older one is not read', async () => {
    const s = await findTurnRateLimits(file([taskStarted('t1'), own, taskStarted('t2'), nulls]));
    assert.deepEqual(s?.primary, null);
  });

  it('a goal paused (not an activation) does not end the turn; a partial or malformed line is passed over', async () => {
    const p = file([taskStarted('t1'), own, goalEvent('paused'), own.slice(0, 40)], own.slice(0, 60));
    assert.deepEqual((await findTurnRateLimits(p))?.primary, window(222));
  });

  it('reads in chunks with a line cap: a long line is skipped, memory stays bounded', async () => {
    const p = file([taskStarted('t1'), own, noiseLine(), `{"pad":"${'x'.repeat(300_000)}"}`]);
    const reads: number[] = [];
    const s = await findTurnRateLimits(p, { chunkSize: 4096, onRead: (_, len) => reads.push(len) });
    assert.deepEqual(s?.primary, window(222));
    assert.ok(Math.max(...reads) <= 4096);
  });
});
