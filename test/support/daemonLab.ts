// A real Codex daemon in a private CODEX_HOME, the project's mock model, and a "user" client
// that gives threads goals: what the extension-host and UI suites run against.
import type { CodexBuild } from '../../src/demo/codexBinary';
import { makeCodexHome, type CodexHome } from '../../src/demo/codexHome';
import { killAllTracked } from '../../src/demo/codexProcesses';
import { controlSocketPath, daemonPid, restartDaemon, startDaemon, stopDaemon } from '../../src/demo/managedDaemon';
import { startMockModel } from '../../src/demo/mockModel';
import { type MockModel } from '../../src/demo/mockModes';
import { startThreadWithGoal, type StartedGoalThread, type StartThreadOptions } from '../../src/demo/goalThreads';
import { UserClient } from '../../src/demo/userClient';
import type { Json } from './json';

export class DaemonLab {
  private user_: UserClient<Json> | null = null;
  private readonly threads: StartedGoalThread<Json>[] = [];

  private constructor(
    readonly mock: MockModel,
    readonly home: CodexHome,
  ) {}

  /**
   * A daemon of the given Codex build (default: the pinned one). `extraToml`: more of the home's
   * config.toml (makeCodexHome's), e.g. `[features]` the lab turns off.
   */
  static async start(codex?: CodexBuild, extraToml = ''): Promise<DaemonLab> {
    const mock = await startMockModel();
    const home = await makeCodexHome(mock.url, extraToml, codex ? { codex } : {});
    await startDaemon(home.dir);
    return new DaemonLab(mock, home);
  }

  get socket(): string {
    return controlSocketPath(this.home.dir);
  }

  /** The user's own client on the daemon (connected on first use). */
  async user(): Promise<UserClient<Json>> {
    this.user_ ??= await UserClient.overSocket<Json>(this.socket, { name: 'lab-user' });
    return this.user_;
  }

  /** A new thread with an active goal, as the user's client sets it. */
  async goal(objective: string, opts: StartThreadOptions = {}): Promise<StartedGoalThread<Json>> {
    const t = await startThreadWithGoal(await this.user(), objective, { timeoutMs: 60_000, ...opts });
    this.threads.push(t);
    return t;
  }

  /**
   * A crash: SIGKILL to the daemon's process group, then `daemon restart`. The daemon then has
   * no thread loaded (measured); the user's client is gone, the next `user()` connects anew.
   */
  async crashAndRestart(): Promise<void> {
    const pid = daemonPid(this.home.dir);
    if (!pid) throw new Error(`no daemon runs for ${this.home.dir}`);
    process.kill(-pid, 'SIGKILL');
    await this.user_?.close().catch(() => undefined);
    this.user_ = null;
    await restartDaemon(this.home.dir);
  }

  /** Stops everything it started, whatever state it is in. */
  async close(): Promise<void> {
    await this.user_?.close().catch(() => undefined);
    await stopDaemon(this.home.dir, { force: true });
    await this.home.cleanup();
    await this.mock.close();
    for (const t of this.threads) await t.cleanup();
    await killAllTracked();
  }
}
