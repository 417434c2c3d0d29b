/**
 * The user client's two raw transports: a `codex app-server` child's stdio (one JSON object
 * per line) and a WebSocket (one JSON message per text frame).
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';
import { rawDataToBuffer } from '../protocol/webSocketFraming';

export interface Transport {
  send(text: string): void;
  close(): void;
  onMessage(cb: (text: string) => void): void;
  onClose(cb: () => void): void;
}

export function stdioTransport(child: ChildProcessWithoutNullStreams): Transport {
  const listeners: ((t: string) => void)[] = [];
  const closers: (() => void)[] = [];
  createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (text) => {
    const line = text.trim();
    if (line) for (const l of listeners) l(line);
  });
  child.stdout.on('close', () => closers.forEach((c) => c()));
  child.stdin.on('error', () => undefined);
  return {
    send: (t) => {
      if (!child.stdin.destroyed) child.stdin.write(t + '\n');
    },
    close: () => child.stdin.end(),
    onMessage: (cb) => listeners.push(cb),
    onClose: (cb) => closers.push(cb),
  };
}

export function wsTransport(ws: WebSocket): Transport {
  return {
    send: (t) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(t);
    },
    close: () => ws.close(),
    onMessage: (cb) => ws.on('message', (data: WebSocket.RawData) => cb(rawDataToBuffer(data).toString())),
    onClose: (cb) => ws.on('close', () => cb()),
  };
}
