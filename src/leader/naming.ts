// Where the engines that watch one daemon meet: the election's directory and its name.
//
// Every engine on a machine (a VS Code window, a headless runner) that watches the same daemon
// must land in the same election, whatever way it was told where the daemon is. The name is a
// hash of the daemon's address: the control socket's path (absolute, normalized) or a ws:// URL
// (as the URL parser writes it). A private stdio child has no shared address: no election.
import { createHash } from 'node:crypto';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TransportTarget } from '../protocol/transport';

/** `$XDG_RUNTIME_DIR/codex-goal-recovery`, else `<tmp>/codex-goal-recovery-<uid>`. */
export function electionDir(env: NodeJS.ProcessEnv = process.env): string {
  const runtime = env.XDG_RUNTIME_DIR?.trim();
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  return runtime ? path.join(runtime, 'codex-goal-recovery') : path.join(os.tmpdir(), `codex-goal-recovery-${uid}`);
}

/**
 * What identifies the daemon a target reaches, or null for a private stdio child (nobody else
 * can reach it). A socket path is resolved (relative to the working directory) and normalized,
 * so `--socket ./x/../s.sock` and a setting `/abs/s.sock` agree. An absolute, normalized path is
 * its own key, so this is the same name windows used before the runner joined.
 */
export function electionKey(target: TransportTarget): string | null {
  switch (target.kind) {
    case 'socket':
      return path.resolve(target.path);
    case 'url':
      try {
        return new URL(target.url).href;
      } catch {
        return target.url;
      }
    case 'stdio':
      return null;
  }
}

/** 12 hex digits of a daemon key's SHA-256: the part of a name that says which daemon. */
export function daemonHash(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

/** The election's socket name for a key: `leader-` and its `daemonHash`. */
export function electionName(key: string): string {
  return `leader-${daemonHash(key)}`;
}

/** The election a target belongs to, or null when it has none (stdio). */
export function electionFor(target: TransportTarget): { key: string; name: string } | null {
  const key = electionKey(target);
  return key === null ? null : { key, name: electionName(key) };
}
