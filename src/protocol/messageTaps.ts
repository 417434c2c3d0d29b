// Taps on the client's message streams: every incoming message is seen (and may be changed or
// dropped) before the JSON-RPC connection (rpcConnection.ts) reads it; every outgoing request's id
// is noted until answered.
import type {
  DataCallback,
  Disposable,
  Event,
  Message,
  MessageReader,
  MessageWriter,
  PartialMessageInfo,
} from 'vscode-jsonrpc/node';
import type { RequestId } from './daemon';

/**
 * Sees every incoming message before the JSON-RPC connection does, and hands it on (possibly
 * changed) or drops it: `screen` returns what the connection gets, or null.
 */
export class TapReader implements MessageReader {
  constructor(
    private readonly inner: MessageReader,
    private readonly screen: (message: Message) => Message | null,
  ) {}
  get onError(): Event<Error> {
    return this.inner.onError;
  }
  get onClose(): Event<void> {
    return this.inner.onClose;
  }
  get onPartialMessage(): Event<PartialMessageInfo> {
    return this.inner.onPartialMessage;
  }
  listen(callback: DataCallback): Disposable {
    return this.inner.listen((message) => {
      const passed = this.screen(message);
      if (passed !== null) callback(passed);
    });
  }
  dispose(): void {
    this.inner.dispose();
  }
}

/** Sees every outgoing message: the ids of the client's own requests, until each is answered. */
export class TapWriter implements MessageWriter {
  constructor(
    private readonly inner: MessageWriter,
    private readonly pending: Set<RequestId>,
  ) {}
  get onError(): Event<[Error, Message | undefined, number | undefined]> {
    return this.inner.onError;
  }
  get onClose(): Event<void> {
    return this.inner.onClose;
  }
  write(msg: Message): Promise<void> {
    const id =
      (msg as { id?: unknown; method?: unknown }).method !== undefined ? (msg as { id?: unknown }).id : undefined;
    if (typeof id !== 'string' && typeof id !== 'number') return this.inner.write(msg);
    this.pending.add(id);
    return this.inner.write(msg).catch((error: unknown) => {
      this.pending.delete(id); // never sent: no reply can come
      throw error;
    });
  }
  end(): void {
    this.inner.end();
  }
  dispose(): void {
    this.inner.dispose();
  }
}
