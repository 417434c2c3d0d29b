// The client's JSON-RPC connection (src/protocol/rpcConnection.ts) does what vscode-jsonrpc's
// MessageConnection did for it: the same messages written, the same replies resolved or
// rejected (with the same codes and messages), the same dispatch order, the same reports. Each
// case runs both over the same scripted reader and writer and compares what each did.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createMessageConnection, ResponseError, type Message } from 'vscode-jsonrpc/node';
import { RpcConnection, RpcResponseError } from '../../src/protocol/rpcConnection';
import { Emitter, MessageWriterBase } from '../../src/protocol/messageEvents';
import { immediate, turns } from '../support/wait';
import { ScriptReader } from '../support/wireFuzz';

class ScriptWriter extends MessageWriterBase {
  readonly written: unknown[] = [];
  failNext: Error | null = null;
  write(msg: Message): Promise<void> {
    if (this.failNext) {
      const e = this.failNext;
      this.failNext = null;
      return Promise.reject(e);
    }
    this.written.push(msg);
    return Promise.resolve();
  }
  end(): void {}
  error(e: unknown): void {
    this.fireError(e, undefined, 1);
  }
}

interface Conn {
  onNotification(h: (method: string, params: unknown) => void): void;
  onError(l: (e: Error) => void): void;
  onClose(l: () => void): void;
  listen(): void;
  sendNotification(method: string): Promise<void>;
  sendRequest(method: string, params: object): Promise<unknown>;
  dispose(): void;
}

type Make = (r: ScriptReader, w: ScriptWriter, log: (m: string) => void) => Conn;

const ours: Make = (r, w, log) => new RpcConnection(r, w, { error: log });
const theirs: Make = (r, w, log) => {
  const c = createMessageConnection(r, w, { error: log, warn: log, info: () => undefined, log: () => undefined });
  return {
    onNotification: (h) => void c.onNotification((method: string, params: unknown) => h(method, params)),
    onError: (l) => void c.onError(([e]) => l(e)),
    onClose: (l) => void c.onClose(l),
    listen: () => c.listen(),
    sendNotification: (m) => c.sendNotification(m),
    sendRequest: (m, p) => c.sendRequest(m, p),
    dispose: () => c.dispose(),
  };
};

/** Runs `script` on a connection and returns everything observable, in order. */
async function observe(
  make: Make,
  script: (
    c: Conn,
    r: ScriptReader,
    w: ScriptWriter,
    settle: (p: Promise<unknown>, name: string) => void,
  ) => Promise<void>,
): Promise<{ events: string[]; written: unknown[]; readerDisposed: boolean }> {
  const events: string[] = [];
  const r = new ScriptReader();
  const w = new ScriptWriter();
  const c = make(r, w, (m) => events.push(`log ${m}`));
  c.onNotification((method, params) => {
    events.push(`notification ${method} ${JSON.stringify(params)}`);
    if (method === 'throws') throw new Error('handler failed');
  });
  c.onError((e) => events.push(`error ${e.message}`));
  c.onClose(() => events.push('close'));
  const settle = (p: Promise<unknown>, name: string) => {
    p.then(
      (v) => events.push(`${name} resolved ${JSON.stringify(v)}`),
      (e: unknown) => {
        const code = e instanceof ResponseError || e instanceof RpcResponseError ? ` code ${e.code}` : '';
        events.push(`${name} rejected${code} ${(e as Error).message}`);
      },
    );
  };
  await script(c, r, w, settle);
  await turns(20);
  return { events, written: JSON.parse(JSON.stringify(w.written)) as unknown[], readerDisposed: r.disposed };
}

async function same(
  script: (
    c: Conn,
    r: ScriptReader,
    w: ScriptWriter,
    settle: (p: Promise<unknown>, name: string) => void,
  ) => Promise<void>,
): Promise<string[]> {
  const a = await observe(theirs, script);
  const b = await observe(ours, script);
  assert.deepEqual(b, a);
  return a.events;
}

describe('the JSON-RPC connection behaves as vscode-jsonrpc did for the client', () => {
  it('requests and notifications written; replies resolve and reject; notifications in wire order', async () => {
    const events = await same(async (c, r, w, settle) => {
      c.listen();
      await c.sendNotification('initialized');
      settle(c.sendRequest('a', { x: 1 }), 'a');
      settle(c.sendRequest('b', {}), 'b');
      settle(c.sendRequest('c', { y: [1] }), 'c');
      await immediate();
      r.push({ jsonrpc: '2.0', method: 'n1', params: { k: 1 } });
      r.push({ jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'bad' } });
      r.push({ jsonrpc: '2.0', method: 'n2' });
      r.push({ jsonrpc: '2.0', id: 0, result: { ok: true } });
      r.push({ jsonrpc: '2.0', id: 2, result: null });
      r.push({ jsonrpc: '2.0', method: 'throws', params: {} });
      r.push({ jsonrpc: '2.0', method: '$/logTrace', params: { message: 'x' } });
      assert.ok(w.written.length === 4);
    });
    assert.ok(events.some((e) => e === 'b rejected code -32600 bad'));
    assert.ok(events.some((e) => e.startsWith("log Notification handler 'throws' failed")));
  });

  it('a reply with neither result nor error, an error without a code, a message that is none of them', async () => {
    await same(async (c, r, _w, settle) => {
      c.listen();
      settle(c.sendRequest('a', {}), 'a');
      settle(c.sendRequest('b', {}), 'b');
      await immediate();
      r.push({ jsonrpc: '2.0', id: 0 });
      r.push({ jsonrpc: '2.0', id: 1, error: { message: 'no code' } });
      r.push({ jsonrpc: '2.0', foo: 1 });
    });
  });

  it('a request that cannot be written, a notification that cannot, reader and writer errors', async () => {
    await same(async (c, r, w, settle) => {
      c.listen();
      w.failNext = new Error('socket gone');
      settle(c.sendRequest('a', {}), 'a');
      w.failNext = new Error('socket gone again');
      settle(c.sendNotification('n'), 'n');
      await immediate();
      r.error(new Error('read failed'));
      r.error({ message: 'not an Error' });
      w.error(new Error('write failed'));
    });
  });

  it('closed: what is pending stays pending, new sends throw; disposed: pending rejected, nothing dispatched', async () => {
    await same(async (c, r, _w, settle) => {
      c.listen();
      settle(c.sendRequest('a', {}), 'a');
      await immediate();
      r.push({ jsonrpc: '2.0', method: 'before-close' });
      r.close();
      r.close();
      try {
        void c.sendRequest('b', {});
      } catch (e) {
        settle(Promise.reject(e instanceof Error ? e : new Error(String(e))), 'b');
      }
      try {
        void c.sendNotification('n');
      } catch (e) {
        settle(Promise.reject(e instanceof Error ? e : new Error(String(e))), 'n');
      }
    });
    await same(async (c, r, _w, settle) => {
      c.listen();
      settle(c.sendRequest('a', {}), 'a');
      await immediate();
      r.push({ jsonrpc: '2.0', method: 'queued' });
      c.dispose();
      r.close();
      try {
        void c.sendRequest('b', {});
      } catch (e) {
        settle(Promise.reject(e instanceof Error ? e : new Error(String(e))), 'b');
      }
    });
  });

  it('dispatches one incoming message per turn of the event loop, as vscode-jsonrpc does', async () => {
    const pace = async (make: Make) => {
      const r = new ScriptReader();
      const seen: string[] = [];
      const c = make(r, new ScriptWriter(), () => undefined);
      c.onNotification((method) => seen.push(method));
      c.listen();
      const results = [c.sendRequest('a', {}), c.sendRequest('b', {})];
      for (const p of results)
        p.then(
          () => seen.push('reply'),
          () => seen.push('rejected'),
        );
      await immediate();
      for (const m of ['n1', 'n2', 'n3']) r.push({ jsonrpc: '2.0', method: m });
      r.push({ jsonrpc: '2.0', id: 0, result: 1 });
      r.push({ jsonrpc: '2.0', method: 'n4' });
      r.push({ jsonrpc: '2.0', id: 1, error: { code: 1, message: 'm' } });
      const counts: number[] = [];
      for (let i = 0; i < 8; i++) {
        await immediate();
        counts.push(seen.length);
      }
      return { counts, seen };
    };
    const a = await pace(theirs);
    assert.deepEqual(a.counts, [1, 2, 3, 4, 5, 6, 6, 6]);
    assert.deepEqual(await pace(ours), a);
  });

  it('the emitter: listeners in order, a throwing one does not stop the others, none after dispose', () => {
    const e = new Emitter<number>();
    const seen: string[] = [];
    const original = console.error;
    console.error = () => undefined;
    try {
      const first = e.event((n) => seen.push(`first ${n}`));
      e.event(() => {
        throw new Error('boom');
      });
      e.event((n) => seen.push(`third ${n}`));
      e.fire(1);
      first.dispose();
      e.fire(2);
      e.dispose();
      e.fire(3);
    } finally {
      console.error = original;
    }
    assert.deepEqual(seen, ['first 1', 'third 1', 'third 2']);
  });
});
