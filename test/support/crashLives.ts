// The lives of the crash world's engines (test/support/crashWorld.ts): a boot (its own timers,
// store, gated connections and lease), a crash (dropped without stop(), a new engine from the
// disk), a stall (frozen past its lease while a second engine takes over), and what each one
// cut: the phase of each thread's recovery the disk held, and whether everything announced was
// durable.
import { Engine } from '../../src/core/engine';
import { HandoverStore, mergeLeaderSnapshot } from '../../src/leader/handover';
import { Lease, LEASE_MS, RENEW_MS } from '../../src/leader/lease';
import type { Decision } from '../../src/model/decision';
import type { EngineSnapshot } from '../../src/model/snapshot';
import { emptyState, type PersistedState, type WatchedThread } from '../../src/model/watch';
import { dueAt, scheduledOf } from '../../src/model/queries';
import { startSession } from '../../src/protocol/client';
import type { Connector } from '../../src/protocol/daemon';
import { DurableStore, Gate, microtasks, ScopedClock } from './crashProcess';
import { type CrashPhase, CrashWorldBase, type Facts, type Life, type StallPhase } from './crashWorldBase';
import type { WireMessage } from './fakeDaemon';
import { sleep, turns } from './wait';

export abstract class CrashLives extends CrashWorldBase {
  // ---- lives ----------------------------------------------------------------------------

  /**
   * A new engine life: its own timers (a ScopedClock), its store, its connections (gated, so a
   * stall can freeze them) and its lease (src/leader/lease.ts, on the fake monotonic clock),
   * renewed every RENEW_MS by a timer of its own, as src/leader/tenure.ts does; the engine's
   * fence is the lease. `snapshot`: the life takes over from a leader, starting from its store
   * merged with that leader's last snapshot (HandoverStore), as production builds a takeover.
   */
  async boot(state: PersistedState = emptyState(), snapshot: EngineSnapshot | null = null): Promise<void> {
    const store = new DurableStore(state);
    const scoped = new ScopedClock(this.clock, this.busy);
    const lease = new Lease(LEASE_MS, () => this.clock.elapsed());
    const life: Life = {
      name: `engine ${++this.lives}`,
      engine: null as unknown as Engine,
      store,
      scoped,
      lease,
      gates: [],
      decisions: [],
      alive: true,
      stale: null,
      frozen: false,
      lastSnapshot: null,
      stopped: false,
      lostLease: null,
      renewedAt: this.clock.elapsed(),
    };
    this.life = life;
    store.onSave = () => {
      if (life.frozen) this.ranFrozen += 1;
      if (life.stale) this.fail(`${life.name} saved after its lease ran out: ${this.sinceRenewal(life)}`);
    };
    const renew = (): void => {
      if (!life.alive) return;
      if (!lease.renew()) {
        // The tenure's `lost`: the election steps down and the ElectedEngine stops the engine
        // (a Serial: the stop starts a microtask later).
        life.lostLease = lease.check() ?? 'lost';
        this.busy.fired += 1;
        if (life !== this.stalled) this.fail(`${life.name} lost its lease without a stall: ${life.lostLease}`);
        void Promise.resolve().then(() =>
          life.engine.stop().then(
            () => void (life.stopped = true),
            () => void (life.stopped = true),
          ),
        );
        return;
      }
      life.renewedAt = this.clock.elapsed();
      scoped.setTimer(renew, RENEW_MS, true);
    };
    scoped.setTimer(renew, RENEW_MS, true);
    const connect: Connector = async (listener) => {
      const gate = new Gate(this.daemon.accept());
      life.gates.push(gate);
      return startSession(
        gate.transport((line) => this.tap(life, line)),
        listener,
        {
          clientVersion: 'crash-test',
          requestTimeoutMs: 60_000,
        },
      );
    };
    const push = (): void => {
      // What a leader pushes to its followers (its snapshot, at every change and decision; the
      // views' change follows every save, after its decisions): the start of the next leader's term.
      if (life.alive && !life.stale) life.lastSnapshot = life.engine.snapshot();
    };
    life.engine = new Engine(this.options, {
      connect,
      store: snapshot ? new HandoverStore(store, snapshot) : store,
      clock: scoped,
      random: this.random,
      fence: () => lease.check(),
      onDecision: (d) => {
        if (life.stale) {
          this.fail(`${life.name} announced ${JSON.stringify(d)} after its lease ran out: ${this.sinceRenewal(life)}`);
          return;
        }
        if (life.alive) life.decisions.push({ d, at: this.clock.now() });
      },
      onChange: push,
    });
    this.engine = life.engine;
    await life.engine.start();
    await this.settle();
  }

  /** Every line an engine writes, before the daemon reads it: false drops it (the run fails). */
  protected tap(life: Life, line: string): boolean {
    if (!life.stale && !life.frozen) return true;
    let m: WireMessage;
    try {
      m = JSON.parse(line) as WireMessage;
    } catch {
      return true;
    }
    if (life.frozen) this.ranFrozen += 1;
    if (!life.stale || (m.method !== 'thread/goal/set' && m.method !== 'thread/resume')) return true;
    return this.fail(
      `${life.name} sent ${m.method} ${JSON.stringify(m.params ?? {})} after its lease ran out: ${this.sinceRenewal(life)}`,
    );
  }

  /** The process dies: nothing of it runs again; a new engine starts from the disk. */
  async crash(reached: boolean): Promise<CrashPhase[]> {
    const life = this.life;
    this.drop(life, 'EOF (the engine crashed)');
    const disk = life.store.crash(reached);
    this.checkAnnounced(life, disk);
    const now = this.clock.now();
    const found = this.cut(disk);
    this.phases.push(...found);
    this.log.push(
      `crash of ${life.name} at +${this.at()} s (${reached ? 'the save under way reached the disk' : 'the save under way was lost'}): ${found.join(', ') || 'no threads'}`,
    );
    this.restartTimes.push(now);
    await this.boot(disk);
    return found;
  }

  /** What the state a new engine starts from holds of each thread: the phase it cut. */
  protected cut(disk: PersistedState): CrashPhase[] {
    const now = this.clock.now();
    const found: CrashPhase[] = [];
    for (const f of this.facts.values()) {
      const phase = this.phaseOf(f, disk.watches[f.id]);
      found.push(phase);
      if (phase === 'arming not durable') f.unarmedCrashes.push(now);
      const w = disk.watches[f.id];
      const due = w?.lastFailure?.dueAt;
      if (w?.lastFailure && due !== null && due !== undefined) {
        const known = f.durableDue.get(w.lastFailure.turnId);
        if (known === undefined || due < known) f.durableDue.set(w.lastFailure.turnId, due);
      }
    }
    return found;
  }

  /**
   * A stall of the engine (SIGSTOP, a blocked event loop) for longer than its lease: its timers
   * stop, what the daemon sends it queues up unread, its saves under way reach the disk but it
   * hears of them only when it runs again. `takeoverMs` after its lease ran out (its last renewal
   * plus LEASE_MS) a second engine takes over as production builds one: its own store (a fresh
   * one, or `shared`: the same file, as two runners with one state path) merged with the stalled
   * leader's last snapshot, a lease of its own; it connects to the same daemon and runs for
   * `extraMs`. Then the stalled engine wakes: its overdue timers fire first (its renewal finds
   * the lease gone), then its saves complete, then its queued lines are read; it is stopped as
   * the ElectedEngine stops it, and dropped. The new engine goes on as the world's engine.
   * Anything the stalled engine sends to the daemon (a set, a resume), saves or announces after
   * its lease ran out is a violation (`tap`, the store's `onSave`, `onDecision`).
   */
  async stall(takeoverMs: number, extraMs: number, shared: boolean): Promise<StallPhase[]> {
    const a = this.life;
    const found: StallPhase[] = [];
    this.stalled = a;
    a.scoped.freeze();
    a.store.freeze();
    for (const g of a.gates) g.freeze();
    // What was already running finishes up to its next held input (a reply, a save, a timer):
    // the process stops a little later, with no time passing. Its rollout reads are real file
    // I/O, which nothing holds: they are given a few real milliseconds to complete first.
    for (let round = 0; round < 3; round++) {
      await turns(6);
      if (round < 2) await sleep(1);
    }
    a.frozen = true;
    const lastRenewal = a.renewedAt;
    const takeoverAt = lastRenewal + LEASE_MS + Math.max(1, takeoverMs);
    const wakeAt = takeoverAt + extraMs;
    const wakeWall = this.clock.now() + (wakeAt - this.clock.elapsed());
    let dueInside = false;
    for (const w of a.engine.watches()) {
      const scheduled = scheduledOf(w.state);
      const due = dueAt(w);
      const failed = scheduled?.kind === 'backoff' ? scheduled.failedTurnId : w.lastFailure?.turnId;
      if (w.state.kind === 'recovering' || (due !== null && due <= wakeWall)) {
        dueInside = true;
        this.dueAtStall.add(`${w.threadId}/${w.state.kind === 'recovering' ? w.state.failedTurnId : failed}`);
      }
    }
    if (dueInside) found.push('stalled with a recovery due inside the freeze');
    this.log.push(
      `+${this.at()} s ${a.name} stalls (its last renewal ${Math.round((this.clock.elapsed() - lastRenewal) / 100) / 10} s ago; the takeover ${Math.round((takeoverAt - this.clock.elapsed()) / 100) / 10} s from now, ${shared ? 'on the same store' : 'with its own store'}; it wakes ${Math.round(extraMs / 100) / 10} s after the takeover)`,
    );
    await this.advance(takeoverAt - this.clock.elapsed());
    // The takeover: the lease ran out (nothing renewed it). From now on nothing may come from A.
    a.stale = `engine ${this.lives + 1} took over at +${this.at()} s, ${this.clock.elapsed() - lastRenewal} ms after its last renewal`;
    const diskA = structuredClone(a.store.durable);
    if (
      [...this.facts.values()].some(
        (f) => this.phaseOf(f, diskA.watches[f.id]) === 'write-ahead durable, set not applied',
      )
    )
      found.push('stalled between its write-ahead save and its set');
    const own = shared ? diskA : emptyState();
    const snapshot = a.lastSnapshot;
    // What the new engine starts from: the arming it does not hold is the old-block rule's case.
    this.cut(snapshot ? mergeLeaderSnapshot(own, snapshot).state : own);
    this.log.push(
      `+${this.at()} s takeover by engine ${this.lives + 1} (${a.name} silent; ${snapshot ? `its last snapshot: ${snapshot.watches.length} watches` : 'no snapshot'})`,
    );
    this.restartTimes.push(this.clock.now());
    await this.boot(own, snapshot);
    await this.advance(Math.max(0, wakeAt - this.clock.elapsed()));
    // A wakes: its overdue timers first, then its saves' completions, then its sockets.
    const { beforeQuiet } = a.scoped.overdueBeforeQuiet();
    if (beforeQuiet > 0 && a.engine.watches().some((w) => w.state.kind === 'recovering'))
      found.push('woke with a set due before its renewal');
    if (a.gates.some((g) => g.queued > 0)) found.push('woke to queued notifications');
    this.log.push(`+${this.at()} s ${a.name} wakes`);
    a.frozen = false;
    await this.daemon.checking(async () => {
      await a.scoped.wake(microtasks);
      await microtasks();
      a.store.release();
      await microtasks();
      for (const g of a.gates) g.open();
      // Its stop may wait for a rollout read (real file I/O): a few real milliseconds at most.
      for (let i = 0; i < 30 && !a.stopped; i++) {
        await this.settle();
        if (i >= 5) await sleep(1);
      }
    });
    if (!a.lostLease)
      this.fail(
        `${a.name} woke and its renewal did not find the lease gone (it did not step down): ${this.sinceRenewal(a)}`,
      );
    else if (a.stopped) found.push('stepped down, its stop saved nothing');
    this.log.push(
      `+${this.at()} s ${a.name} ${a.stopped ? 'stopped' : 'stepping down'}: ${a.lostLease ?? 'lease held'}`,
    );
    this.drop(a, 'the stalled engine stepped down');
    this.checkAnnounced(a, a.store.crash(false));
    this.stalled = null;
    this.stallPhases.push(...found);
    await this.settle();
    return found;
  }

  /**
   * Durable before announced: everything the dead engine announced is on the disk it left
   * (or was superseded there by something later).
   */
  protected checkAnnounced(life: Life, disk: PersistedState): void {
    const last = new Map<string, { d: Decision; at: number }>();
    for (const e of life.decisions) {
      const d = e.d;
      if (!('threadId' in d) || d.threadId === undefined) continue;
      const w = disk.watches[d.threadId];
      const what = `${life.name} announced ${JSON.stringify(d)} before it ended, but the disk`;
      switch (d.type) {
        case 'armed':
          if (!w || w.state.kind === 'notAdopted') this.fail(`${what} holds no armed watch of ${d.threadId}`);
          break;
        case 'backoff': {
          const f = w?.lastFailure;
          if (!w || !(f?.turnId === d.failedTurnId || w.recovered.includes(d.failedTurnId) || (f && f.at >= e.at)))
            this.fail(`${what} holds no record of that failure (${JSON.stringify(f ?? null)})`);
          break;
        }
        case 'recovered':
          if (!w?.recovered.includes(d.failedTurnId))
            this.fail(`${what} does not count ${d.failedTurnId} as recovered`);
          break;
        case 'gave-up':
          if (!w || (w.state.kind !== 'gaveUp' && w.updatedAt < e.at)) this.fail(`${what} does not hold the give-up`);
          break;
        default:
          break;
      }
      if (d.type === 'disarmed' || d.type === 'rearmed') last.set(d.threadId, e);
    }
    for (const [id, e] of last) {
      if (id === '*') continue;
      const disarmedOnDisk = disk.disarmed[id] !== undefined || disk.watches[id]?.state.kind === 'userIntent';
      if (e.d.type === 'disarmed' && !disarmedOnDisk && (disk.watches[id]?.updatedAt ?? 0) < e.at)
        this.fail(`the engine announced ${JSON.stringify(e.d)} before the crash, but the disk does not hold it`);
    }
    const pause = [...life.decisions].reverse().find((e) => 'threadId' in e.d && e.d.threadId === '*');
    if (pause && (pause.d.type === 'skipped') !== (disk.pausedAt !== null))
      this.fail(
        `the engine announced ${JSON.stringify(pause.d)} before the crash, but the disk says pausedAt ${disk.pausedAt}`,
      );
    if (this.violation) this.violation = new Error(`${this.violation.message}`);
  }

  protected phaseOf(f: Facts, w: WatchedThread | undefined): CrashPhase {
    const t = this.daemon.thread(f.id);
    if (!w || w.state.kind === 'notAdopted' || w.armedAt < f.activatedAt - 1) return 'arming not durable';
    if (t.goal?.status !== 'blocked' || f.cause !== 'transient' || t.turn.status !== 'failed') {
      if (w.pending && this.effective.has(`${f.id}/${w.pending.failedTurnId}`))
        return 'set applied, not confirmed on disk';
      return 'nothing to recover';
    }
    const turnId = t.turn.id;
    if (w.pending?.failedTurnId === turnId) return 'write-ahead durable, set not applied';
    if (w.lastFailure?.turnId === turnId && w.lastFailure.dueAt !== null)
      return w.recovered.includes(turnId) ? 'recovered and confirmed' : 'backoff durable';
    return 'failure not recorded';
  }
}
