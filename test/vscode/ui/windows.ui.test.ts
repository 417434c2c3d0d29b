// Several VS Code windows on one Codex daemon, in a real VS Code (code-server + Chromium):
// each window has its own extension host; exactly one runs the engine. Exactly one recovery per
// failed turn; when the leader's extension host stalls (stopped past the engine's 5 s lease, its
// sockets open) the other window says so, takes over and recovers, and the woken one follows;
// when the leader's window closes, another takes over; a disarm survives a reload.
//
// The daemon is the judge (test/support/daemonJudge.ts): recoveries and "no set" are counted from
// its record, the rollout's automatic activations per failed turn, not from turns or the tree. A
// second set on a goal already active starts no turn, so counting turns would miss a duplicate.
// "Nothing happened" is checked after a positive wait (labWindow.ts `engineLookedAfter`: past the
// due time, then a Refresh the engine has finished), never after a fixed sleep.
//
// Settings other than the shipped ones, and why: `baseDelaySeconds: 1`, `maxDelaySeconds: 2`,
// so that each backoff ends within a second or two (the shipped 30 s base would make the suite
// wait minutes); `--reconnection-grace-time 1` (code-server's, not the extension's): a closed
// page's extension host ends a second later instead of after 3 h, so the takeover can happen.
// `notifications: "attention"` (the shipped default; the lab's is "none"): one test counts the
// notification a goal that needs attention shows. `autoArm: true` (the shipped default) set explicitly:
// a fresh profile observes until a person chooses (docs/first-run.md); here goals are armed at first
// sight, as after "Watch every goal". Everything else (resync interval, prepare lead, limiter) is
// as shipped.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { about, waitGoalStatus, waitTurnCompleted } from '../../../src/demo/goalThreads';
import { type UserClient } from '../../../src/demo/userClient';
import {
  assertNoAutomaticSet,
  assertNoAutomaticSetSince,
  assertNoDuplicateSet,
  assertOneRecoveryPerFailedTurn,
  daemonRecord,
  rolloutPathOf,
  waitForDaemonRecord,
} from '../../support/daemonJudge';
import { DaemonLab } from '../../support/daemonLab';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LeaderFileSchema } from '../../../src/leader/lease';
import { extensionLogFiles, extensionLogLines } from '../exthost';
import { engineLookedAfter, openLabWindow, type LabWindow } from './labWindow';
import type { Workbench } from './workbench';
import type { Json } from '../../support/json';

const STATUS = 'codex-goal-recovery.status';
const VIEW = 'Watched goals';
const T = 60_000;
/** `maxDelaySeconds` below: no backoff of this suite is due later than this after its failure. */
const MAX_DELAY_MS = 2_000;

describe('two windows on one daemon', { timeout: 420_000 }, () => {
  let env: LabWindow | undefined;
  let lab: DaemonLab;
  let user: UserClient<Json>;
  let first: Workbench;
  let second: Workbench;

  /** The daemon's record of a thread, settled (no turn in progress). */
  const judge = async (threadId: string) => daemonRecord(user, threadId, await rolloutPathOf(user, threadId));
  const statuses = (r: { turns: { status: string }[] }) => r.turns.map((x) => x.status).sort();

  before(
    async () => {
      // A closed page's extension host ends a second later (code-server keeps it 3 h by default).
      env = await openLabWindow(
        'cgr-ui-win-',
        {
          'codexGoalRecovery.baseDelaySeconds': 1,
          'codexGoalRecovery.maxDelaySeconds': 2,
          'codexGoalRecovery.notifications': 'attention',
          'codexGoalRecovery.autoArm': true,
        },
        ['--reconnection-grace-time', '1'],
      );
      ({ lab, wb: first } = env);
      await first.waitForStatusBarText(STATUS, (t) => /watched/.test(t), T);
      second = await first.openWindow();
      await second.waitForStatusBarText(STATUS, (t) => /watched/.test(t), T);
      user = await lab.user();
    },
    { timeout: 240_000 },
  );

  after(async () => {
    await second?.close();
    await env?.close(); // stops code-server and the browser, then the daemon
  });

  it('recovers each failed turn exactly once, and both windows show it', () =>
    second.guard('ui-two-windows', async () => {
      lab.mock.setMode('http500');
      const t = await lab.goal('Two windows, one recovery');
      const rollout = await rolloutPathOf(user, t.threadId);
      // The first recovery, as the daemon records it: an automatic activation after the first
      // failed turn, and the turn it started failed too.
      await waitForDaemonRecord(
        user,
        t.threadId,
        rollout,
        'the first recovery and its failed turn',
        (r) => r.failed.length >= 2 && r.automaticAfter.has(r.rollout.turns[0]),
      );
      lab.mock.setMode('goalComplete');
      await waitGoalStatus(user, t.threadId, 'complete', T, t.goalSetSeq);
      for (const wb of [first, second]) {
        await wb.openViewContainer('Codex Goal Recovery');
        await wb.waitForTreeRows(VIEW, (r) => r.includes('Two windows, one recovery, complete'), T);
      }
      // A duplicate (a second engine, a second set) would come by the latest due time any engine
      // could have chosen for the second failed turn, which ended before the goal completed.
      await engineLookedAfter(second, Date.now() + MAX_DELAY_MS);
      const r = await judge(t.threadId);
      assert.equal(r.failed.length, 2, `two failed turns: ${JSON.stringify(r.turns)}`);
      assertOneRecoveryPerFailedTurn(r);
      assert.equal(r.goalStatus, 'complete');
      assert.deepEqual(statuses(r), ['completed', 'failed', 'failed']);
    }));

  it("a decision shows in both windows' logs (the follower's says who decided) and as one notification, in one window", () =>
    second.guard('ui-decisions-everywhere', async () => {
      lab.mock.setMode('http400'); // a failure no retry fixes: the goal needs a person, at once
      const t = await lab.goal('Needs a person');
      const attentionLines = () =>
        extensionLogFiles(first.server.userDataDir).map((f) =>
          fs
            .readFileSync(f, 'utf8')
            .split('\n')
            .filter((l) => l.includes(`needs attention ${t.threadId}:`)),
        );
      const deadline = Date.now() + T;
      while (attentionLines().filter((ls) => ls.length > 0).length < 2) {
        if (Date.now() > deadline) assert.fail(`not in both windows' logs: ${JSON.stringify(attentionLines())}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const [own, followed] = attentionLines()
        .filter((ls) => ls.length > 0)
        .sort((a, b) => a[0].length - b[0].length);
      assert.equal(own.length, 1, `the leader logged it ${own.length} times`);
      assert.equal(followed.length, 1, `the follower logged it ${followed.length} times`);
      // The same line, the follower's marked with who decided (after the log's own timestamp).
      const text = (line: string) => line.replace(/^\S+ \S+ \[\w+\] /, '');
      assert.match(text(followed[0]), /^\[VS Code window, pid \d+\] /);
      assert.equal(text(followed[0]).replace(/^\[VS Code window, pid \d+\] /, ''), text(own[0]));
      // One notification, in one window: the focused one, else the one focused last. Both pages of
      // headless Chromium have the focus, so it is the one whose focus the leader heard of last:
      // the second window, which came after the leader was up.
      const shown = async () => {
        const all = [await first.notificationCenterMessages(), await second.notificationCenterMessages()];
        return all.map((ms) => ms.filter((m) => m.includes('"Needs a person" needs attention')).length);
      };
      const until = Date.now() + 30_000;
      while ((await shown()).every((n) => n === 0)) {
        if (Date.now() > until) assert.fail('no window showed the notification');
        await new Promise((r) => setTimeout(r, 500));
      }
      await new Promise((r) => setTimeout(r, 2000)); // a second one would be on its way by now
      // Read until two reads agree: while its toast is still up, the center can list a notification
      // twice for a moment (seen: 2, then 1 half a second later); a second notification stays.
      let counts = await shown();
      for (let i = 0; i < 20; i++) {
        await new Promise((r) => setTimeout(r, 500));
        const again = await shown();
        if (JSON.stringify(again) === JSON.stringify(counts)) break;
        counts = again;
      }
      assert.deepEqual(counts, [0, 1], 'notifications in the first and the second window');
      const r = await judge(t.threadId);
      assertNoAutomaticSet(r);
    }));

  it('the window that runs the engine stalls (its extension host stopped past the lease): the other says so, takes over and recovers once; woken, it follows', () =>
    second.guard('ui-stall', async () => {
      // The leading extension host, from the election's leader file (src/leader/lease.ts): the
      // election directory is under XDG_RUNTIME_DIR, else the extension hosts' temp directory.
      const uid = process.getuid?.() ?? 'user';
      const dir = process.env.XDG_RUNTIME_DIR?.trim()
        ? path.join(process.env.XDG_RUNTIME_DIR.trim(), 'codex-goal-recovery')
        : path.join(first.server.tmpDir, `codex-goal-recovery-${uid}`);
      const leaderFile = fs.readdirSync(dir).find((n) => n.endsWith('.leader'));
      assert.ok(leaderFile, `no leader file in ${dir}`);
      const leader = LeaderFileSchema.parse(JSON.parse(fs.readFileSync(path.join(dir, leaderFile), 'utf8')));
      assert.equal(leader.who, 'VS Code window');
      // The goal is armed by the leader while it runs (a goal first seen already stopped is never
      // adopted): its first answer takes 8 s; the leader is stopped meanwhile, and the next request
      // of the goal fails (the new leader has the watch from the stopped one's last snapshot).
      // The mode is read when a request arrives: the next mode waits for the slow request itself,
      // not only for the turn (a busy machine let the turn start before its request was sent).
      lab.mock.setMode('slow', { delayMs: 8_000 });
      const sent = lab.mock.requests;
      const t = await lab.goal('Recovered after a stall');
      await second.openViewContainer('Codex Goal Recovery');
      await second.waitForTreeRows(VIEW, (r) => r.includes('Recovered after a stall, running'), T);
      await lab.mock.waitForRequests(sent + 1, T);
      process.kill(leader.pid, 'SIGSTOP');
      let stopped = true;
      try {
        lab.mock.setMode('http500');
        // The follower says the engine is not answering (no stale countdown), then takes over.
        const notAnswering = (wb: Workbench) =>
          wb.waitForStatusBarText(STATUS, (x) => /engine not answering/.test(x), T).then(() => wb);
        const follower = await Promise.any([notAnswering(first), notAnswering(second)]);
        await user.waitFor(
          about(t.threadId, 'turn/completed', (p) => p.turn?.status === 'failed'),
          T,
          t.goalSetSeq,
        );
        lab.mock.setMode('goalComplete');
        const complete = await waitGoalStatus(user, t.threadId, 'complete', T, t.goalSetSeq);
        await waitTurnCompleted(user, t.threadId, 'completed', T, complete.seq);
        await follower.waitForTreeRows(VIEW, (r) => r.includes('Recovered after a stall, complete'), T);
        // Woken: its lease ran out while it was stopped; it acts no more and follows.
        process.kill(leader.pid, 'SIGCONT');
        stopped = false;
        const woken = follower === first ? second : first;
        await woken.openViewContainer('Codex Goal Recovery');
        await woken.waitForTreeRows(VIEW, (r) => r.includes('Recovered after a stall, complete'), T);
        await engineLookedAfter(follower, Date.now() + MAX_DELAY_MS);
        const r = await judge(t.threadId);
        assert.equal(r.failed.length, 1, `one failed turn: ${JSON.stringify(r.turns)}`);
        assertOneRecoveryPerFailedTurn(r);
        assert.deepEqual(
          statuses(r),
          ['completed', 'completed', 'failed'],
          'the slow turn, the failed one, the recovery',
        );
        const now = LeaderFileSchema.parse(JSON.parse(fs.readFileSync(path.join(dir, leaderFile), 'utf8')));
        assert.notEqual(now.pid, leader.pid, 'the stalled window leads again');
        assert.ok(now.term > leader.term, `term ${now.term} after ${leader.term}`);
      } finally {
        if (stopped) process.kill(leader.pid, 'SIGCONT');
      }
    }));

  it('takes over when the window that runs the engine closes', () =>
    second.guard('ui-takeover', async () => {
      await first.closeWindow();
      lab.mock.setMode('http500');
      const t = await lab.goal('Recovered after the takeover');
      await user.waitFor(
        about(t.threadId, 'turn/completed', (p) => p.turn?.status === 'failed'),
        T,
        t.goalSetSeq,
      );
      lab.mock.setMode('goalComplete');
      const complete = await waitGoalStatus(user, t.threadId, 'complete', 30_000, t.goalSetSeq);
      await waitTurnCompleted(user, t.threadId, 'completed', T, complete.seq);
      await second.waitForTreeRows(VIEW, (r) => r.includes('Recovered after the takeover, complete'), T);
      await engineLookedAfter(second, Date.now() + MAX_DELAY_MS);
      const r = await judge(t.threadId);
      assert.equal(r.failed.length, 1, `one failed turn: ${JSON.stringify(r.turns)}`);
      assertOneRecoveryPerFailedTurn(r);
      assert.deepEqual(statuses(r), ['completed', 'failed']);
    }));

  it('a disarm survives a reload of the window (globalState)', () =>
    second.guard('ui-disarm-reload', async () => {
      lab.mock.setMode('http500');
      const t = await lab.goal('Disarmed by the user');
      await second.waitForTreeRows(VIEW, (r) => r.some((x) => x.startsWith('Disarmed by the user, retry ')), T);
      await second.runCommand('Codex Goal Recovery: Disarm thread');
      await second.pick('Disarmed by the user');
      await second.waitForTreeRows(VIEW, (r) => r.includes('Disarmed by the user, disarmed'), T);
      // The backoff (0.5–1 s) may have ended before the disarm took effect: past the latest due
      // time the engine announced for this thread, and once it has looked again, the record
      // (settled: a turn started just before the disarm has ended) is what the disarm froze.
      const latestDue = () => {
        const dues = extensionLogLines(second.server.userDataDir)
          .filter((l) => l.includes(`backoff ${t.threadId}:`))
          .map((l) => Date.parse(/\(at (\S+)\)$/.exec(l)?.[1] ?? ''));
        assert.ok(dues.length > 0 && dues.every(Number.isFinite), 'no backoff of this thread in the log');
        return Math.max(...dues);
      };
      // Again if a backoff was announced meanwhile (the Refresh line follows every earlier line of the log).
      for (let due = latestDue(), waited = -Infinity; due > waited; waited = due, due = latestDue())
        await engineLookedAfter(second, due);
      const before = await judge(t.threadId);
      assertNoDuplicateSet(before);
      assert.ok(
        statuses(before).every((x) => x === 'failed'),
        JSON.stringify(before.turns),
      );
      await second.reload();
      // Up again (the goal of the test before still needs attention: the bar says that first).
      await second.waitForStatusBarText(STATUS, (x) => /watched|needs attention/.test(x), T);
      await second.openViewContainer('Codex Goal Recovery');
      await second.waitForTreeRows(VIEW, (r) => r.includes('Disarmed by the user, disarmed'), T);
      // The reloaded engine has connected; once it has looked at the thread, nothing may follow.
      await engineLookedAfter(second, Date.now());
      const after = await judge(t.threadId);
      assertNoAutomaticSetSince(after, before, 'recovered a disarmed thread after the reload');
      assert.deepEqual(statuses(after), statuses(before), 'a new turn on a disarmed thread');
    }));
});
