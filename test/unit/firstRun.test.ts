// The first run (docs/first-run.md): a fresh install observes (arms no goal by itself) until the
// person chooses which goals to watch; an upgrade, or a person's own value of `autoArm`, runs as the
// setting says. The rule is a table (src/config/firstRun.ts, pure); the window's side of it
// (src/host/firstRun.ts) records the wait and opens the walkthrough once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstRunMode, type FirstRunFacts, type FirstRunMode } from '../../src/config/firstRun';
import { DEFAULT_OPTIONS } from '../../src/core/options';
import type { Settings } from '../../src/config/settings';
import { FIRST_RUN_KEY, firstRun as makeFirstRun } from '../../src/host/firstRun';
import { CORRUPT_PREFIX, STATE_KEY } from '../../src/store/globalStateStore';

describe('firstRunMode: the table', () => {
  const rows: [string, FirstRunFacts, FirstRunMode][] = [
    [
      'fresh install: no value, no record, no state',
      { explicitSetting: false, recorded: undefined, hasState: false },
      'observe',
    ],
    [
      'an upgrade: state from an earlier install, no record',
      { explicitSetting: false, recorded: undefined, hasState: true },
      'setting',
    ],
    [
      'still waiting for the choice (state saved since)',
      { explicitSetting: false, recorded: 'waiting', hasState: true },
      'observe',
    ],
    ['waiting, no state yet', { explicitSetting: false, recorded: 'waiting', hasState: false }, 'observe'],
    [
      'chosen (the value removed since: the default)',
      { explicitSetting: false, recorded: 'chosen', hasState: true },
      'setting',
    ],
    ['chosen, no state', { explicitSetting: false, recorded: 'chosen', hasState: false }, 'setting'],
    [
      "the person's value on a fresh install",
      { explicitSetting: true, recorded: undefined, hasState: false },
      'setting',
    ],
    ["the person's value while waiting", { explicitSetting: true, recorded: 'waiting', hasState: true }, 'setting'],
    ["the person's value on an upgrade", { explicitSetting: true, recorded: undefined, hasState: true }, 'setting'],
    ["the person's value, chosen", { explicitSetting: true, recorded: 'chosen', hasState: false }, 'setting'],
  ];
  for (const [name, facts, mode] of rows)
    it(`${name} → ${mode}`, () => {
      assert.equal(firstRunMode(facts), mode);
    });
});

/** A globalState in memory, and what the window was asked to do. */
function fakeWindow(init: Record<string, unknown> = {}, explicit = false) {
  const values = new Map(Object.entries(init));
  const seen = { walkthroughs: 0, explicit };
  const firstRun = makeFirstRun({
    memento: {
      get: <T>(key: string) => values.get(key) as T | undefined,
      update: (key: string, value: unknown) => {
        if (value === undefined) values.delete(key);
        else values.set(key, value);
        return Promise.resolve();
      },
      keys: () => [...values.keys()],
    },
    explicitSetting: () => seen.explicit,
    openWalkthrough: () => void (seen.walkthroughs += 1),
    log: () => undefined,
  });
  return { firstRun, values, seen };
}

const SETTINGS: Settings = {
  codexHome: '/h',
  socketPath: '/h/s.sock',
  codexPath: 'codex',
  notifications: 'attention',
  options: { ...DEFAULT_OPTIONS },
  telemetry: { otlpEndpoint: '', useCodexOtelConfig: false },
};

describe('the first run in a window', () => {
  it('a fresh install: observes, records the wait, opens the walkthrough once (not again at the next activation)', () => {
    const w = fakeWindow();
    assert.equal(w.firstRun.start(), 'observe');
    assert.equal(w.values.get(FIRST_RUN_KEY), 'waiting');
    assert.equal(w.seen.walkthroughs, 1);
    assert.equal(w.firstRun.apply(SETTINGS).options.autoArm, false);
    assert.equal(SETTINGS.options.autoArm, true, 'the settings read were changed in place');
    // The engine saves its state; the window reloads: still observing, the walkthrough not opened again.
    w.values.set(STATE_KEY, { version: 1 });
    const again = fakeWindow(Object.fromEntries(w.values));
    assert.equal(again.firstRun.start(), 'observe');
    assert.equal(again.seen.walkthroughs, 0);
    // The choice: the setting is written (the window then reads its settings again), and recorded.
    again.seen.explicit = true;
    again.firstRun.settingsChanged();
    assert.equal(again.values.get(FIRST_RUN_KEY), 'chosen');
    assert.equal(again.firstRun.mode(), 'setting');
    assert.equal(again.firstRun.apply(SETTINGS).options.autoArm, true);
  });

  it("a value of the person's set in the settings while waiting is the choice", () => {
    const w = fakeWindow({ [FIRST_RUN_KEY]: 'waiting', [STATE_KEY]: {} });
    assert.equal(w.firstRun.start(), 'observe');
    w.seen.explicit = true;
    w.firstRun.settingsChanged();
    assert.equal(w.values.get(FIRST_RUN_KEY), 'chosen');
    // Removed again later: the shipped default, not observing again.
    w.seen.explicit = false;
    w.firstRun.settingsChanged();
    assert.equal(w.firstRun.mode(), 'setting');
  });

  it('an upgrade (state, or a value of it kept aside as corrupt, from an earlier install): as shipped, nothing recorded, no walkthrough', () => {
    const w = fakeWindow({ [STATE_KEY]: {} });
    assert.equal(w.firstRun.start(), 'setting');
    assert.equal(w.values.has(FIRST_RUN_KEY), false);
    assert.equal(w.seen.walkthroughs, 0);
    assert.equal(w.firstRun.apply(SETTINGS), SETTINGS);
    const aside = fakeWindow({ [`${CORRUPT_PREFIX}2026-01-01T00:00:00.000Z`]: '{' });
    assert.equal(aside.firstRun.start(), 'setting');
    assert.equal(aside.seen.walkthroughs, 0);
  });

  it('a fresh install whose person set autoArm before the first activation: the setting, no walkthrough', () => {
    const w = fakeWindow({}, true);
    assert.equal(w.firstRun.start(), 'setting');
    assert.equal(w.seen.walkthroughs, 0);
  });
});
