// Focused tests for what the fault suite found in the client: server requests out of wire order
// and kept forever, replies to nobody dropped silently, a cancel without params blowing up in
// the dispatcher, and one text frame with invalid UTF-8 closing the whole WebSocket connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stdioSession, unixWsServer, websocketSession, type WireSession } from '../support/wireFuzz';
import { sleep } from '../support/wait';
import type { Message } from 'vscode-jsonrpc/node';
import { MessageWriterBase } from '../../src/protocol/messageEvents';
import { startSession } from '../../src/protocol/client';
import { ConnectionLostError, type DaemonSession } from '../../src/protocol/daemon';
import type { Transport } from '../../src/protocol/transportContract';
import { RecordingListener, ScriptReader } from '../support/wireFuzz';

const line = (value: unknown) => ({ text: JSON.stringify(value) });

async function ready(w: WireSession): Promise<void> {
  await w.until(() => w.received.length >= 2, 'the handshake');
  w.received.length = 0;
}

test('a server request reaches the listener in wire order, between the notifications around it, and is never answered', async () => {
  const w = await stdioSession();
  try {
    await ready(w);
    await w.send([
      line({ method: 'thread/closed', params: { threadId: 'before' } }),
      line({ id: 7, method: 'item/commandExecution/requestApproval', params: { threadId: 't', itemId: 'i' } }),
      line({ method: '$/cancelRequest', params: { id: 7 } }),
      line({ method: 'thread/closed', params: { threadId: 'after' } }),
    ]);
    await w.until(() => w.listener.events.length === 3, 'three events');
    assert.deepEqual(w.listener.events, [
      ['threadClosed', 'before'],
      ['serverRequest', 't', 7, 'item/commandExecution/requestApproval'],
      ['threadClosed', 'after'],
    ]);
    await sleep(20);
    assert.deepEqual(w.received, [], 'nothing sent back, not even on a cancel');
    assert.deepEqual(w.listener.problems, []);
  } finally {
    await w.close();
  }
});

test('$/cancelRequest without params or with null params is ignored quietly', async () => {
  const w = await stdioSession();
  try {
    await ready(w);
    await w.send([
      line({ method: '$/cancelRequest' }),
      line({ method: '$/cancelRequest', params: null }),
      line({ method: 'thread/closed', params: { threadId: 'x' } }),
    ]);
    await w.until(() => w.listener.events.length === 1, 'the notification after');
    assert.deepEqual(w.listener.problems, []);
  } finally {
    await w.close();
  }
});

test('a reply to no pending request (unknown, duplicate or null id) is dropped with one clear line; the real reply still resolves its request', async () => {
  const w = await stdioSession();
  try {
    await ready(w);
    const call = w.session.request('echo', { n: 1 });
    await w.until(() => w.received.length === 1, 'the request');
    const id = w.received[0].id;
    await w.send([
      line({ id: 999_999, result: { wrong: true } }),
      line({ id: String(id), result: { wrong: 'a string id is another id' } }),
      line({ id: null, error: { code: -32700, message: 'Parse error' } }),
      line({ id, result: { n: 1 } }),
      line({ id, result: { n: 'duplicate' } }),
    ]);
    assert.deepEqual(await call, { n: 1 });
    await w.until(() => w.listener.problems.length === 4, 'four reports');
    assert.deepEqual(w.listener.problems, [
      'dropped a reply to no pending request of this client (id 999999)',
      `dropped a reply to no pending request of this client (id ${JSON.stringify(String(id))})`,
      'dropped an error reply to no pending request of this client (id null): error -32700 "Parse error"',
      `dropped a reply to no pending request of this client (id ${JSON.stringify(id)})`,
    ]);
  } finally {
    await w.close();
  }
});

test('websocket: a text frame with invalid UTF-8 is one dropped frame; the connection stays open and serves the next one', async () => {
  const server = await unixWsServer();
  try {
    const w = await websocketSession(server);
    try {
      await ready(w);
      await w.raw(Buffer.from([0x7b, 0xff, 0xfe, 0x7d])); // "{", two bytes that are never UTF-8, "}"
      await w.send([line({ method: 'thread/closed', params: { threadId: 'next' } })]);
      await w.until(() => w.listener.events.length === 1, 'the next frame');
      assert.deepEqual(w.listener.events, [['threadClosed', 'next']]);
      assert.deepEqual(w.listener.problems, [
        'websocket reader: dropped malformed frame (invalid UTF-8): "{\uFFFD\uFFFD}"',
      ]);
      assert.deepEqual(w.listener.closes, []);
    } finally {
      await w.close();
    }
  } finally {
    await server.close();
  }
});

/** A transport whose daemon side the test scripts message by message, and closes when it says. */
async function scriptedSession(): Promise<{
  session: DaemonSession;
  listener: RecordingListener;
  reader: ScriptReader;
  sent: { id: number; method: string }[];
  closeNow: (reason: string) => void;
}> {
  const reader = new ScriptReader();
  const sent: { id: number; method: string }[] = [];
  let closeCbs: ((reason: string) => void)[] = [];
  class Writer extends MessageWriterBase {
    write(m: Message): Promise<void> {
      const { id, method } = m as unknown as { id: number; method: string };
      sent.push({ id, method });
      if (method === 'initialize')
        setImmediate(() =>
          reader.push({ jsonrpc: '2.0', id, result: { userAgent: 'scripted/1', codexHome: '/nowhere' } }),
        );
      return Promise.resolve();
    }
    end(): void {}
  }
  const transport: Transport = {
    reader,
    writer: new Writer(),
    describe: 'scripted',
    onClose: (cb) => void closeCbs.push(cb),
    close: () => Promise.resolve(),
  };
  const listener = new RecordingListener();
  const session = await startSession(transport, listener, { clientVersion: 'scripted', requestTimeoutMs: 60_000 });
  const closeNow = (reason: string) => {
    const cbs = closeCbs;
    closeCbs = [];
    for (const cb of cbs) cb(reason);
  };
  return { session, listener, reader, sent, closeNow };
}

test('replies read before the connection closed answer their requests (a result, and an error reply as the daemon’s error); only a request without one is lost; the listener hears the close after them', async () => {
  const { session, listener, reader, sent, closeNow } = await scriptedSession();
  const outcome = (p: Promise<unknown>) =>
    p.then(
      (v) => `resolved ${JSON.stringify(v)}`,
      (e: unknown) => `${(e as Error).constructor.name}: ${(e as Error).message}`,
    );
  const a = outcome(session.request('a', {}));
  const b = outcome(session.request('b', {}));
  const c = outcome(session.request('c', {}));
  await sleep(5);
  const id = (method: string) => sent.find((m) => m.method === method)!.id;
  reader.push({ jsonrpc: '2.0', id: id('a'), result: { ok: 1 } });
  reader.push({ jsonrpc: '2.0', id: id('b'), error: { code: -32600, message: 'refused' } });
  reader.push({ jsonrpc: '2.0', method: 'thread/closed', params: { threadId: 'late' } });
  closeNow('the daemon went away');
  await assert.rejects(session.request('d', {}), ConnectionLostError, 'a request after the close goes nowhere');
  assert.equal(await a, 'resolved {"ok":1}');
  assert.match(await b, /^RpcError: .*refused/);
  assert.match(await c, /^ConnectionLostError: .*the daemon went away/);
  assert.deepEqual(listener.events, [['threadClosed', 'late']]);
  assert.deepEqual(listener.closes, ['the daemon went away']);
});
