/** A `codex app-server` child on stdio, in its own process group and tracked. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { codexBinary, codexEnv, codexFor } from './codexBinary';
import { processGroupMembers, track, untrack } from './codexProcesses';

export type StdioAppServer = ChildProcessWithoutNullStreams;

/**
 * `codex app-server` (stdio transport) with CODEX_HOME=codexHome, detached into its own process
 * group. Talk to it with `UserClient.overStdio(child)`; stop it with `stopProcessGroup(child)`.
 */
export function startAppServerStdio(codexHome: string): StdioAppServer {
  const child = spawn(codexBinary(codexFor(codexHome)), ['app-server'], {
    env: codexEnv(codexHome),
    cwd: codexHome,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stderr.resume(); // drained, so a chatty server never blocks on a full pipe
  if (child.pid) track({ pid: child.pid, codexHome, what: 'app-server stdio' });
  child.on('exit', () => {
    if (child.pid && !processGroupMembers(child.pid).length) untrack(child.pid);
  });
  return child;
}
