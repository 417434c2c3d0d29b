/** A private CODEX_HOME pointed at the mock model, removed with everything it started. */
import { existsSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { forgetCodexHome, useCodexFor, type CodexBuild } from './codexBinary';
import { killTracked } from './codexProcesses';
import { removeDaemonRuntimeFiles, stopDaemon } from './managedDaemon';

export interface CodexHome {
  /** Absolute path of the private CODEX_HOME. */
  dir: string;
  /**
   * Kills a daemon started on this home (if any, with SIGKILL: no drain of in-flight turns) and
   * tracked processes using it, removes the daemon's socket files and the dir.
   */
  cleanup(): Promise<void>;
}

/**
 * Creates a private CODEX_HOME (under os.tmpdir()) whose config.toml points at `modelUrl`.
 * `extraToml` is inserted between the top-level keys and the `[model_providers.mock]` table, so it
 * may hold top-level keys and/or its own tables. `codex`: which installed Codex runs in this home
 * (its daemon, its stdio servers); default the pinned one.
 */
export async function makeCodexHome(
  modelUrl: string,
  extraToml = '',
  opts: { codex?: CodexBuild } = {},
): Promise<CodexHome> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cgr-codex-home-'));
  // Retries 1 each (Codex defaults 4 and 5), so a failing model fails a turn fast.
  const toml = [
    'model = "mock-model"',
    'model_provider = "mock"',
    'approval_policy = "never"',
    'sandbox_mode = "read-only"',
    'check_for_update_on_startup = false',
    '',
    extraToml.trim(),
    '',
    '[model_providers.mock]',
    'name = "Mock"',
    `base_url = "${modelUrl}"`,
    'wire_api = "responses"',
    'request_max_retries = 1',
    'stream_max_retries = 1',
    'stream_idle_timeout_ms = 5000',
    '',
  ].join('\n');
  await fs.writeFile(path.join(dir, 'config.toml'), toml);
  if (opts.codex) useCodexFor(dir, opts.codex);
  let cleaned = false;
  return {
    dir,
    async cleanup() {
      if (cleaned) return;
      cleaned = true;
      if (existsSync(path.join(dir, 'app-server-daemon')))
        await stopDaemon(dir, { force: true }).catch(() => undefined);
      await killTracked((t) => t.codexHome === dir);
      removeDaemonRuntimeFiles(dir);
      await fs.rm(dir, { recursive: true, force: true });
      forgetCodexHome(dir);
    },
  };
}
