/// <reference types="mocha" />
// The window's path on the elected engine, in a real extension host, against a fake engine: two
// WindowRoles (as two windows' extension hosts would hold) on one daemon name, in the real
// election directory. The one replaced part is the engine (the window's `makeEngine`): these are
// tests of what a window does with its role (the views' service, the log, the notifications),
// not of recovery, which the integration and UI suites prove against the real daemon.
import { NOTICE_HOLD_MS } from '../../../src/model/notice';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { readSettings, type Settings } from '../../../src/config/settings';
import type { ServiceCommand } from '../../../src/core/commandTable';
import type { FocusSource, TermEvents } from '../../../src/leader/electedEngine';
import type { Decision } from '../../../src/model/decision';
import { emptySnapshot, type EngineSnapshot } from '../../../src/model/snapshot';
import { WindowRole, type WindowEngine } from '../../../src/host/windowRole';
import { Memento } from '../../support/memento';
import { recordingLog } from './recordingLog';

class FakeWindowEngine implements WindowEngine {
  readonly role = 'leader' as const;
  readonly commands: [ServiceCommand, string | undefined][] = [];
  private readonly listeners = new Set<() => void>();
  snap: EngineSnapshot;
  started = false;
  stopped = false;

  constructor(
    readonly events: TermEvents,
    target: string,
  ) {
    this.snap = emptySnapshot(target, Date.now());
  }
  start(): Promise<void> {
    this.started = true;
    return Promise.resolve();
  }
  stop(): Promise<void> {
    this.stopped = true;
    return Promise.resolve();
  }
  snapshot(): EngineSnapshot {
    return this.snap;
  }
  onDidChange(listener: () => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }
  run(command: ServiceCommand, threadId?: string): Promise<void> {
    this.commands.push([command, threadId]);
    return Promise.resolve();
  }
  applySettings(): void {}
  /** The engine changed its state and announces a decision (as the real one does once durable). */
  decide(d: Decision, snap: Partial<EngineSnapshot>): void {
    this.snap = { ...this.snap, ...snap, at: Date.now() };
    for (const l of [...this.listeners]) l();
    this.events.changed();
    this.events.decided(d);
  }
}

class Focus implements FocusSource {
  private readonly listeners = new Set<(f: boolean) => void>();
  constructor(private value: boolean) {}
  focused(): boolean {
    return this.value;
  }
  set(value: boolean): void {
    this.value = value;
    for (const l of [...this.listeners]) l(value);
  }
  onDidChange(listener: (f: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

interface TestWindow {
  role: WindowRole;
  lines: string[];
  notified: Decision[];
  decided: Decision[];
  engines: FakeWindowEngine[];
  focus: Focus;
}

function testWindow(settings: Settings, focused: boolean): TestWindow {
  const { log, lines } = recordingLog();
  const w: TestWindow = { lines, notified: [], decided: [], engines: [], focus: new Focus(focused), role: null! };
  const context = { globalState: new Memento() } as unknown as vscode.ExtensionContext;
  w.role = new WindowRole(
    context,
    settings,
    { log, notify: (d) => w.notified.push(d), decided: (d) => w.decided.push(d), focus: w.focus },
    {
      makeEngine: (s, _seed, events) => {
        const e = new FakeWindowEngine(events, s.socketPath);
        w.engines.push(e);
        return e;
      },
    },
  );
  return w;
}

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

suite('the window on the elected engine (a fake engine)', () => {
  test("the follower shows the leader's state, runs its commands there, logs the leader's decisions marked with who decided; one window notifies: the focused one", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-window-role-'));
    // A daemon socket of this test alone: its own election name in the real election directory.
    const settings = { ...readSettings(), socketPath: path.join(dir, 'daemon.sock') };
    const a = testWindow(settings, false);
    const b = testWindow(settings, true);
    try {
      a.role.start();
      await until('A leads', () => a.role.service().role === 'leader' && a.engines[0]?.started === true);
      b.role.start();
      await until('B follows', () => b.lines.some((l) => l.includes('runs against this daemon: following it')));
      assert.equal(b.engines.length, 0, 'the follower made an engine');
      assert.equal(b.role.service().role, 'follower');

      // A command in the follower runs on the leader's engine.
      await b.role.service().run('retryNow', 'th-1');
      assert.deepEqual(a.engines[0].commands, [['retryNow', 'th-1']]);

      // A decision: the state first, then the decision, in both windows; the notification in B only.
      await new Promise((r) => setTimeout(r, 100)); // B's focus report reaches the leader
      const d: Decision = { type: 'attention', threadId: 'th-1', reason: 'a person must look' };
      a.engines[0].decide(d, { pausedAt: 42 });
      await until("B has the leader's decision", () => b.lines.some((l) => l.includes('needs attention th-1')));
      await until("B shows the leader's state", () => b.role.service().snapshot().pausedAt === 42);
      const own = a.lines.filter((l) => l.includes('needs attention th-1'));
      const followed = b.lines.filter((l) => l.includes('needs attention th-1'));
      assert.equal(own.length, 1);
      assert.equal(followed.length, 1);
      assert.equal(followed[0], own[0].replace(/^warn /, `warn [VS Code window, pid ${process.pid}] `));
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(b.notified, [d], 'the focused window did not notify');
      assert.deepEqual(a.notified, [], 'the unfocused leader notified too');
      // The API's decision event: this window's engine's decisions only.
      assert.deepEqual(a.decided, [d]);
      assert.deepEqual(b.decided, []);

      // The focus moves to the leader's window: once the burst of the first decision is over (it
      // stays in the window that got its first decision for NOTICE_HOLD_MS: src/model/notice.ts),
      // the next decision's notification is the leader's, and the follower shows none.
      b.focus.set(false);
      a.focus.set(true);
      await new Promise((r) => setTimeout(r, NOTICE_HOLD_MS + 500));
      const e: Decision = { type: 'gave-up', threadId: 'th-2', attempts: 6, failedTurnId: 't' };
      a.engines[0].decide(e, {});
      await until('B has the second decision', () => b.lines.some((l) => l.includes('gave up th-2')));
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(a.notified, [e]);
      assert.deepEqual(b.notified, [d]);

      // The leader's window closes: B's engine starts only after A's has stopped, from A's last state.
      await a.role.dispose();
      assert.equal(a.engines[0].stopped, true);
      await until('B leads', () => b.role.service().role === 'leader' && b.engines[0]?.started === true);
    } finally {
      await a.role.dispose();
      await b.role.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
