// Taps on the client's message streams: every incoming message is seen (and may be changed or
// dropped) before the JSON-RPC connection (rpcConnection.ts) reads it; every outgoing request's id
// is noted until answered.
import type { Message, MessageReader, MessageWriter } from 'vscode-jsonrpc/node';
import type { RequestId } from './daemon';

/**
 * Sees every incoming message before the JSON-RPC connection does, and hands it on (possibly
 * changed) or drops it: `screen` returns what the connection gets, or null.
 */
export function tapReader(inner: MessageReader, screen: (message: Message) => Message | null): MessageReader {
  return {
    onError: inner.onError,
    onClose: inner.onClose,
    onPartialMessage: inner.onPartialMessage,
    listen: (callback) =>
      inner.listen((message) => {
        const passed = screen(message);
        if (passed !== null) callback(passed);
      }),
    dispose: () => inner.dispose(),
  };
}

/** Sees every outgoing message: the ids of the client's own requests, until each is answered. */
export function tapWriter(inner: MessageWriter, pending: Set<RequestId>): MessageWriter {
  return {
    onError: inner.onError,
    onClose: inner.onClose,
    write: (msg) => {
      const m = msg as { id?: unknown; method?: unknown };
      const id = m.method !== undefined ? m.id : undefined;
      if (typeof id !== 'string' && typeof id !== 'number') return inner.write(msg);
      pending.add(id);
      return inner.write(msg).catch((error: unknown) => {
        pending.delete(id); // never sent: no reply can come
        throw error;
      });
    },
    end: () => inner.end(),
    dispose: () => inner.dispose(),
  };
}
