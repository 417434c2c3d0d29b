// A log channel that keeps its lines ("<level> <message>"), for tests that read what a window said.
import type * as vscode from 'vscode';

export function recordingLog(): { log: vscode.LogOutputChannel; lines: string[] } {
  const lines: string[] = [];
  const say = (level: string) => (message: string) => void lines.push(`${level} ${message}`);
  const log = {
    trace: say('trace'),
    debug: say('debug'),
    info: say('info'),
    warn: say('warn'),
    error: say('error'),
  } as unknown as vscode.LogOutputChannel;
  return { log, lines };
}
