/**
 * A private `codex app-server` child on stdio, in its own process group: spawned, its stderr
 * drained line by line, and on close the whole group terminated (SIGTERM, then SIGKILL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { DEFAULT_MAX_MESSAGE_BYTES } from './framing';
import { quietly } from './framedMessages';
import { LineMessageReader, LineMessageWriter } from './lineFraming';
import {
  CloseSignal,
  DEFAULT_CONNECT_TIMEOUT_MS,
  TransportError,
  type OpenTransportOptions,
  type Transport,
  type TransportErrorCode,
  type TransportTarget,
} from './transportContract';

const STDERR_LINE_MAX = 8 * 1024;

function killGroup(pid: number, signal: NodeJS.Signals, child: ChildProcess): void {
  try {
    // The child's own process group only (spawned detached).
    if (process.platform !== 'win32') return void process.kill(-pid, signal);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return;
  }
  quietly(() => child.kill(signal));
}

export function openStdio(
  target: Extract<TransportTarget, { kind: 'stdio' }>,
  opts: OpenTransportOptions,
): Promise<Transport> {
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const graceMs = opts.killGraceMs ?? 2000;
  const cmdline = [target.command, ...target.args].join(' ');
  return new Promise<Transport>((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn(target.command, target.args, {
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true, // own process group: close() kills the whole group
        env: target.env ?? process.env,
        cwd: target.cwd,
        windowsHide: true,
      });
    } catch (e) {
      reject(new TransportError('refused', `cannot start ${cmdline}: ${(e as Error).message}`, { cause: e }));
      return;
    }
    let settled = false;
    /** False when settled already (then a child that started is killed). */
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      return true;
    };
    const timer = setTimeout(() => {
      if (!settle()) return;
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL', child);
      reject(new TransportError('timeout', `timed out after ${timeoutMs} ms starting ${cmdline}`));
    }, timeoutMs);

    child.once('error', (err: NodeJS.ErrnoException) => {
      if (!settle()) return;
      const code: TransportErrorCode = err.code === 'ENOENT' ? 'missing' : 'refused';
      const hint = err.code === 'ENOENT' ? ` (is \`${target.command}\` installed and on PATH?)` : '';
      reject(new TransportError(code, `cannot start ${cmdline}: ${err.message}${hint}`, { cause: err }));
    });
    child.once('spawn', () => {
      if (settle()) resolve(wrapChild(child, target.command, graceMs, opts));
      else if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL', child);
    });
  });
}

function wrapChild(child: ChildProcess, command: string, graceMs: number, opts: OpenTransportOptions): Transport {
  const pid = child.pid!;
  const describe = `${command} (pid ${pid})`;
  const signal = new CloseSignal();

  // Safety net: if this process exits without close(), don't leave the group running.
  const onProcessExit = () => killGroup(pid, 'SIGTERM', child);
  process.once('exit', onProcessExit);

  // Stderr: always drained; split into lines for the optional callback, bounded per line.
  const stderr = child.stderr!;
  let partial = '';
  let dropping = false; // the rest of a line already told, cut short
  const emit = (line: string) => {
    quietly(() => opts.onStderr?.(line.replace(/\r$/, '')));
  };
  const cut = (line: string) => (line.length > STDERR_LINE_MAX ? `${line.slice(0, STDERR_LINE_MAX)}…` : line);
  stderr.setEncoding('utf8');
  stderr.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      if (dropping) dropping = false;
      else emit(cut(line));
    }
    if (!dropping && partial.length > STDERR_LINE_MAX) {
      emit(cut(partial));
      dropping = true;
    }
    if (dropping) partial = '';
  });
  stderr.on('end', () => {
    if (partial) emit(partial);
    partial = '';
  });
  stderr.on('error', () => {});
  child.stdout!.on('error', () => {});
  child.stdin!.on('error', () => {}); // EPIPE after the child died: reported via the writer

  let closingByUs = false;
  child.once('exit', (code, sig) => {
    process.removeListener('exit', onProcessExit);
    const how = sig ? `was killed by signal ${sig}` : `exited with code ${code}`;
    signal.fire(closingByUs ? `${describe}: closed by client (${how})` : `${describe} ${how}`);
  });

  let closing: Promise<void> | undefined;
  return {
    reader: new LineMessageReader(child.stdout!, { maxLineBytes: opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES }),
    writer: new LineMessageWriter(child.stdin!),
    describe,
    pid,
    onClose: (cb) => signal.on(cb),
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        closingByUs = true;
        const finish = () => {
          // Also reaps grandchildren left in the group after the leader died.
          killGroup(pid, 'SIGKILL', child);
          process.removeListener('exit', onProcessExit);
          resolve();
        };
        quietly(() => child.stdin?.end());
        if (child.exitCode !== null || child.signalCode !== null) {
          killGroup(pid, 'SIGTERM', child);
          setTimeout(finish, Math.min(graceMs, 100));
          return;
        }
        const killTimer = setTimeout(() => killGroup(pid, 'SIGKILL', child), graceMs);
        child.once('exit', () => {
          clearTimeout(killTimer);
          finish();
        });
        killGroup(pid, 'SIGTERM', child);
      })),
  };
}
