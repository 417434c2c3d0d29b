/** A `codex app-server` child on stdio, in its own process group and tracked. */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { codexBinary, codexEnv, codexFor } from './codexBinary';
import { processGroupMembers, track, untrack } from './codexProcesses';

export interface StdioAppServer extends ChildProcessWithoutNullStreams {
  /** Everything the server wrote to stderr so far. */
  stderrText(): string;
}

/**
 * `codex app-server` (stdio transport) with CODEX_HOME=codexHome, detached into its own process
 * group. Talk to it with `UserClient.overStdio(child)`; stop it with `stopProcessGroup(child)`.
 */
export function startAppServerStdio(codexHome: string, extraArgs: string[] = []): StdioAppServer {
  const child = spawn(codexBinary(codexFor(codexHome)), ['app-server', ...extraArgs], {
    env: codexEnv(codexHome),
    cwd: codexHome,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  }) as StdioAppServer;
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    stderr += d;
    if (stderr.length > 200_000) stderr = stderr.slice(-100_000);
  });
  child.stderrText = () => stderr;
  if (child.pid) track({ pid: child.pid, group: true, codexHome, what: 'app-server stdio' });
  child.on('exit', () => {
    if (child.pid && !processGroupMembers(child.pid).length) untrack(child.pid);
  });
  return child;
}
