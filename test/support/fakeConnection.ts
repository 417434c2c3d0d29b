// The protocol surface of the strict fake daemon (test/support/fakeDaemon.ts): one connection,
// speaking the real wire format (newline-delimited JSON-RPC, no "jsonrpc" field) over in-memory
// streams, and the shape of its messages.
import { PassThrough } from 'node:stream';
import { LineMessageReader, LineMessageWriter } from '../../src/protocol/lineFraming';
import type { Transport } from '../../src/protocol/transport';

export interface WireMessage {
  id?: string | number;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: unknown;
}

/** One connection to the fake daemon: it writes lines to `toClient` and reads lines from `fromClient`. */
export class FakeConnection {
  readonly toClient = new PassThrough();
  readonly fromClient = new PassThrough();
  private closeCallbacks: ((reason: string) => void)[] = [];
  closedReason: string | null = null;
  subscribed = new Set<string>();
  /**
   * When set (the fake daemon's reordering mode, fakeReorder.ts), takes every notification and server
   * request instead of writing it; replies are written at once. `write` puts a frame on the wire.
   */
  outbox: ((connection: FakeConnection, message: WireMessage) => void) | null = null;

  /** Called once when the connection closes (at once if it already has). */
  onClose(cb: (reason: string) => void): void {
    if (this.closedReason !== null) cb(this.closedReason);
    else this.closeCallbacks.push(cb);
  }

  transport(): Transport {
    return {
      reader: new LineMessageReader(this.toClient),
      writer: new LineMessageWriter(this.fromClient),
      describe: 'fake daemon',
      onClose: (cb) => this.onClose(cb),
      close: () => {
        this.close('closed by client');
        return Promise.resolve();
      },
    };
  }

  send(message: WireMessage & { emittedAtMs?: number }): void {
    if (this.outbox && message.method !== undefined) this.outbox(this, message);
    else this.write(message);
  }

  write(message: WireMessage & { emittedAtMs?: number }): void {
    if (this.closedReason === null) this.toClient.write(`${JSON.stringify(message)}\n`);
  }

  /** A raw line, JSON or not, as a misbehaving daemon would write it. */
  sendRaw(line: string): void {
    if (this.closedReason === null) this.toClient.write(`${line}\n`);
  }

  close(reason: string): void {
    if (this.closedReason !== null) return;
    this.closedReason = reason;
    this.toClient.end();
    for (const cb of this.closeCallbacks) cb(reason);
    this.closeCallbacks = [];
  }
}
