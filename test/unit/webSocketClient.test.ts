// The product's WebSocket client (src/protocol/webSocketClient.ts) against a raw server on
// 127.0.0.1 that answers the upgrade and then writes frames byte by byte as a test wants them:
// what RFC 6455 says a client must do with each (join fragments, answer a ping, echo a close,
// refuse masked, reserved-bit, unknown-opcode and oversized frames), and the handshake's checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as net from 'node:net';
import { WebSocketClient } from '../../src/protocol/webSocketClient';
import { sleep } from '../support/wait';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** A server frame (unmasked unless `mask`); `first` sets FIN/RSV/opcode by hand. */
function serverFrame(first: number, payload: Buffer, mask = false): Buffer {
  const n = payload.length;
  const len = n < 126 ? [n] : [126, n >> 8, n & 0xff];
  const head = Buffer.from([first, (mask ? 0x80 : 0) | len[0], ...len.slice(1)]);
  return Buffer.concat([head, ...(mask ? [Buffer.alloc(4)] : []), payload]);
}

/** Unmasks the frames a client wrote: [{opcode, payload}]. */
function clientFrames(bytes: Buffer): Array<{ opcode: number; payload: Buffer }> {
  const out: Array<{ opcode: number; payload: Buffer }> = [];
  let i = 0;
  while (i + 2 <= bytes.length) {
    const opcode = bytes[i] & 0x0f;
    assert.ok((bytes[i + 1] & 0x80) !== 0, 'a client frame must be masked');
    let len = bytes[i + 1] & 0x7f;
    let at = i + 2;
    if (len === 126) {
      len = bytes.readUInt16BE(at);
      at += 2;
    }
    const mask = bytes.subarray(at, at + 4);
    at += 4;
    const payload = Buffer.from(bytes.subarray(at, at + len).map((b, k) => b ^ mask[k & 3]));
    out.push({ opcode, payload });
    i = at + len;
  }
  return out;
}

interface Raw {
  client: WebSocketClient;
  /** Resolves with the server's end of the connection once the upgrade is answered. */
  peer: Promise<net.Socket>;
  /** What the client wrote after the upgrade. */
  written: () => Buffer;
  events: string[];
  closed: Promise<{ code: number; reason: string }>;
  done: () => Promise<void>;
}

async function raw(answer: (key: string) => string = accepted, maxPayload = 1024): Promise<Raw> {
  let resolvePeer!: (s: net.Socket) => void;
  const peer = new Promise<net.Socket>((r) => (resolvePeer = r));
  const chunks: Buffer[] = [];
  const server = net.createServer((s) => {
    let head = '';
    let upgraded = false;
    s.on('data', (d: Buffer) => {
      if (upgraded) return void chunks.push(d);
      head += d.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      upgraded = true;
      const key = /sec-websocket-key: (.*)\r\n/i.exec(head)?.[1] ?? '';
      s.write(answer(key));
      resolvePeer(s);
    });
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const client = new WebSocketClient(`ws://127.0.0.1:${port}/`, { maxPayload, handshakeTimeout: 2000 });
  const events: string[] = [];
  client.on('open', () => events.push('open'));
  client.on('message', (d: Buffer, binary: boolean) =>
    events.push(`message ${binary ? 'binary' : 'text'} ${d.toString()}`),
  );
  client.on('error', (e: Error) => events.push(`error ${e.message}`));
  client.on('unexpected-response', (_req: unknown, res: { statusCode?: number }) => {
    events.push(`unexpected ${res.statusCode}`);
    client.terminate();
  });
  const closed = new Promise<{ code: number; reason: string }>((r) =>
    client.on('close', (code: number, reason: Buffer) => r({ code, reason: reason.toString() })),
  );
  return {
    client,
    peer,
    written: () => Buffer.concat(chunks),
    events,
    closed,
    done: async () => {
      client.terminate();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function accepted(key: string): string {
  const accept = createHash('sha1')
    .update(key + GUID)
    .digest('base64');
  return `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`;
}

const settle = () => sleep(50);

test('opens, joins fragments into one message, answers a ping with its payload, sends masked text', async () => {
  const w = await raw();
  try {
    const s = await w.peer;
    await settle();
    s.write(serverFrame(0x01, Buffer.from('{"a":')));
    s.write(serverFrame(0x89, Buffer.from('hi'))); // a ping between fragments
    s.write(serverFrame(0x80, Buffer.from('1}')));
    s.write(serverFrame(0x82, Buffer.from('bin')));
    await settle();
    w.client.send('{"b":2}', { binary: false });
    await settle();
    assert.deepEqual(w.events, ['open', 'message text {"a":1}', 'message binary bin']);
    assert.deepEqual(
      clientFrames(w.written()).map((f) => [f.opcode, f.payload.toString()]),
      [
        [0xa, 'hi'],
        [0x1, '{"b":2}'],
      ],
    );
  } finally {
    await w.done();
  }
});

test("a server's close: echoed with its code, then 'close' with the server's code and reason", async () => {
  const w = await raw();
  try {
    const s = await w.peer;
    const payload = Buffer.concat([Buffer.from([0x03, 0xe9]), Buffer.from('bye')]); // 1001
    s.write(serverFrame(0x88, payload));
    s.on('end', () => s.end());
    assert.deepEqual(await w.closed, { code: 1001, reason: 'bye' });
    assert.deepEqual(
      clientFrames(w.written()).map((f) => [f.opcode, f.payload.readUInt16BE(0)]),
      [[0x8, 1001]],
    );
  } finally {
    await w.done();
  }
});

for (const [name, bytes, code, said] of [
  ['a masked server frame', serverFrame(0x81, Buffer.from('x'), true), 1002, /must not be masked/],
  ['a reserved bit', serverFrame(0xc1, Buffer.from('x')), 1002, /RSV/],
  ['an unknown opcode', serverFrame(0x83, Buffer.from('x')), 1002, /invalid opcode 3/],
  ['a continuation of nothing', serverFrame(0x80, Buffer.from('x')), 1002, /continuation of nothing/],
  ['a fragmented ping', serverFrame(0x09, Buffer.from('x')), 1002, /control frame/],
  [
    'a message over the cap (in fragments)',
    Buffer.concat([serverFrame(0x01, Buffer.alloc(600, 0x61)), serverFrame(0x80, Buffer.alloc(600, 0x61))]),
    1009,
    /Max payload size exceeded/,
  ],
] as const) {
  test(`${name}: an error, the client closes with ${code}, and no message`, async () => {
    const w = await raw();
    try {
      const s = await w.peer;
      s.on('end', () => s.end());
      s.write(bytes);
      const closed = await w.closed;
      assert.equal(closed.code, code);
      assert.ok(
        w.events.some((e) => said.test(e)),
        w.events.join('\n'),
      );
      assert.ok(!w.events.some((e) => e.startsWith('message')), 'a message from a bad frame');
      assert.deepEqual(
        clientFrames(w.written()).map((f) => [f.opcode, f.payload.readUInt16BE(0)]),
        [[0x8, code]],
      );
    } finally {
      await w.done();
    }
  });
}

test('the handshake: a wrong Sec-WebSocket-Accept is an error and a close (1006), never an open', async () => {
  const w = await raw(
    () =>
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: nope\r\n\r\n',
  );
  try {
    assert.equal((await w.closed).code, 1006);
    assert.deepEqual(w.events, ['error Invalid Sec-WebSocket-Accept header']);
  } finally {
    await w.done();
  }
});

test("the handshake: an HTTP answer other than 101 is 'unexpected-response'", async () => {
  const w = await raw(() => 'HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
  try {
    await w.closed;
    assert.equal(w.events[0], 'unexpected 403');
    assert.ok(!w.events.includes('open'));
  } finally {
    await w.done();
  }
});
