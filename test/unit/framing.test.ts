import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { createMessageConnection, type Message, type MessageConnection } from 'vscode-jsonrpc/node';
import { WebSocketServer, WebSocket } from 'ws';
import type { AddressInfo } from 'node:net';
import { validateMessage } from '../../src/protocol/framing';
import { immediate, sleep } from '../support/wait';
import { LineMessageReader, LineMessageWriter } from '../../src/protocol/lineFraming';
import { WebSocketMessageReader, WebSocketMessageWriter } from '../../src/protocol/webSocketFraming';

function collect(reader: LineMessageReader | WebSocketMessageReader) {
  const messages: Message[] = [];
  const errors: Error[] = [];
  let closes = 0;
  reader.onError((e) => errors.push(e));
  reader.onClose(() => closes++);
  reader.listen((m) => messages.push(m));
  return { messages, errors, closes: () => closes };
}

test('line reader: frames split across chunks, several per chunk, multi-byte UTF-8 split', async () => {
  const s = new PassThrough();
  const r = new LineMessageReader(s);
  const c = collect(r);
  const a = JSON.stringify({ method: 'a', params: { text: 'héllo ✓ 🎯' } });
  const b = JSON.stringify({ id: 1, result: { ok: true } });
  const d = JSON.stringify({ id: 'x', method: 'req', params: [] });
  const bytes = Buffer.from(`${a}\n${b}\n${d}\n`, 'utf8');
  for (let i = 0; i < bytes.length; i += 3) s.write(bytes.subarray(i, i + 3)); // splits inside code points
  s.write(Buffer.from(`${b}\n${a}\n`));
  await immediate();
  assert.equal(c.errors.length, 0, c.errors.map(String).join('\n'));
  assert.equal(c.messages.length, 5);
  assert.deepEqual(c.messages[0], { jsonrpc: '2.0', method: 'a', params: { text: 'héllo ✓ 🎯' } });
  assert.deepEqual(c.messages[1], { jsonrpc: '2.0', id: 1, result: { ok: true } });
  assert.deepEqual(c.messages[2], { jsonrpc: '2.0', id: 'x', method: 'req', params: [] });
  assert.equal(r.messageCount, 5);
  assert.equal(r.malformedCount, 0);
});

test('line reader: CRLF tolerated, blank lines ignored, string chunks, final line without newline, close once', async () => {
  const s = new PassThrough();
  const r = new LineMessageReader(s);
  const c = collect(r);
  s.write('\n\r\n   \n{"method":"x"}\r\n\r\n{"id":2,"result":null}\r');
  s.write('\n{"method":"last"}');
  s.end();
  await sleep(10);
  assert.equal(c.errors.length, 0);
  assert.deepEqual(
    c.messages.map((m) => (m as unknown as { method?: string }).method ?? (m as unknown as { id?: number }).id),
    ['x', 2, 'last'],
  );
  assert.equal(c.closes(), 1);
});

test('line reader: a line over the cap is dropped with an error and reading resumes at the next newline', async () => {
  const s = new PassThrough();
  const r = new LineMessageReader(s, { maxLineBytes: 1024 });
  const c = collect(r);
  s.write('{"method":"before"}\n');
  // over the cap, spread across many chunks
  s.write('{"method":"huge","params":{"x":"');
  for (let i = 0; i < 50; i++) s.write('y'.repeat(100));
  s.write('"}}\n{"method":"after1"}\n');
  // over the cap within a single chunk, followed by a valid frame in the same chunk
  s.write(`${'z'.repeat(5000)}\n{"method":"after2"}\n`);
  // exactly at the cap is accepted
  const exact = JSON.stringify({ method: 'exact', params: { p: '' } });
  const padded = JSON.stringify({ method: 'exact', params: { p: 'q'.repeat(1024 - exact.length) } });
  assert.equal(Buffer.byteLength(padded), 1024);
  s.write(`${padded}\n`);
  await immediate();
  assert.deepEqual(
    c.messages.map((m) => (m as unknown as { method: string }).method),
    ['before', 'after1', 'after2', 'exact'],
  );
  assert.equal(c.errors.length, 2);
  assert.match(c.errors[0].message, /longer than 1024 bytes/);
  assert.match(c.errors[0].message, /"\{\\"method\\":\\"huge/);
  assert.ok(c.errors[0].message.length < 300, 'error message carries a short excerpt only');
  assert.equal(r.malformedCount, 2);
});

test('line reader: malformed frames are reported with an excerpt and skipped, never thrown', async () => {
  const s = new PassThrough();
  const r = new LineMessageReader(s);
  const c = collect(r);
  const bad = [
    '{not json',
    '[1,2,3]',
    '42',
    '"a string"',
    'null',
    '{"id":{"x":1},"method":"m"}', // bad id type on a request
    '{"id":true,"result":1}', // bad id type on a response
    '{"id":null,"method":"m"}', // null id on a request
    '{"method":42}', // method not a string
    '{"params":{}}', // neither request, response nor notification
    '{"id":3}', // response without result/error
    '{"id":4,"error":"boom"}', // malformed error object
    '{"method":"m","params":7}', // params not structured
    `{"method":"${'x'.repeat(500)}`, // long invalid frame: excerpt is bounded
  ];
  const lines: string[] = [];
  bad.forEach((b, i) => {
    lines.push(b);
    lines.push(JSON.stringify({ method: `ok${i}` }));
  });
  s.write(`${lines.join('\n')}\n`);
  await immediate();
  assert.deepEqual(
    c.messages.map((m) => (m as unknown as { method: string }).method),
    bad.map((_, i) => `ok${i}`),
  );
  assert.equal(c.errors.length, bad.length);
  assert.equal(r.malformedCount, bad.length);
  assert.match(c.errors[0].message, /invalid JSON/);
  assert.match(c.errors[0].message, /\{not json/);
  assert.match(c.errors[1].message, /must be an object, got an array/);
  assert.match(c.errors[5].message, /"id" must be a string or number, got object/);
  assert.match(c.errors[6].message, /"id" must be a string, number or null, got boolean/);
  assert.match(c.errors[8].message, /"method" must be a non-empty string/);
  assert.match(c.errors[9].message, /neither a request, a response nor a notification/);
  assert.match(c.errors[10].message, /neither "result" nor "error"/);
  for (const e of c.errors) assert.ok(e.message.length < 320, `too long: ${e.message.length}`);
});

test('line reader: a throwing callback is reported, reading continues', async () => {
  const s = new PassThrough();
  const r = new LineMessageReader(s);
  const errors: Error[] = [];
  r.onError((e) => errors.push(e));
  const seen: string[] = [];
  r.listen((m) => {
    const method = (m as unknown as { method: string }).method;
    seen.push(method);
    if (method === 'boom') throw new Error('handler exploded');
  });
  s.write('{"method":"boom"}\n{"method":"fine"}\n');
  await immediate();
  assert.deepEqual(seen, ['boom', 'fine']);
  assert.equal(errors.length, 1);
  assert.match(errors[0].message, /handler exploded/);
  assert.equal(r.malformedCount, 0);
});

test('validateMessage: emittedAtMs and extra fields kept; jsonrpc added', () => {
  const v = validateMessage({ method: 'thread/goal/updated', params: { threadId: 't' }, emittedAtMs: 1234 });
  assert.ok(v.ok);
  assert.deepEqual(v.message, {
    jsonrpc: '2.0',
    method: 'thread/goal/updated',
    params: { threadId: 't' },
    emittedAtMs: 1234,
  });
  const e = validateMessage({ id: null, error: { code: -32700, message: 'Parse error' } });
  assert.ok(e.ok, 'error response with null id is valid');
});

test('line writer: newline-delimited JSON; failures reported via event and rejection, never thrown', async () => {
  const out = new PassThrough();
  const w = new LineMessageWriter(out);
  const errors: Error[] = [];
  w.onError(([e]) => errors.push(e));
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  await w.write({ jsonrpc: '2.0', id: 1, method: 'm', params: { a: 1 } } as Message);
  assert.equal(text, '{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}\n');

  const circular: Record<string, unknown> = { method: 'c' };
  circular.self = circular;
  await assert.rejects(w.write(circular as unknown as Message), /cannot serialize/);

  const failing = new Writable({
    write(_c, _e, cb) {
      cb(new Error('EPIPE-ish'));
    },
  });
  const w2 = new LineMessageWriter(failing);
  const errors2: Error[] = [];
  w2.onError(([e]) => errors2.push(e));
  await assert.rejects(w2.write({ jsonrpc: '2.0', method: 'x' } as Message), /EPIPE-ish/);
  await assert.rejects(w2.write({ jsonrpc: '2.0', method: 'y' } as Message), /closed|destroyed|EPIPE/);
  assert.ok(errors2.length >= 1);

  w.end();
  await immediate();
  await assert.rejects(w.write({ jsonrpc: '2.0', method: 'late' } as Message), /closed/);
  assert.ok(errors.length >= 2);
});

function connectPair(): { client: MessageConnection; server: MessageConnection; c2s: PassThrough; s2c: PassThrough } {
  const c2s = new PassThrough();
  const s2c = new PassThrough();
  const client = createMessageConnection(new LineMessageReader(s2c), new LineMessageWriter(c2s));
  const server = createMessageConnection(new LineMessageReader(c2s), new LineMessageWriter(s2c));
  return { client, server, c2s, s2c };
}

/** Exercises request/response, notifications and a server→client request in both directions. */
async function roundTrip(client: MessageConnection, server: MessageConnection): Promise<void> {
  const serverGotNotif = new Promise<unknown>((res) => server.onNotification('initialized', (p) => res(p ?? null)));
  server.onRequest('initialize', (params: { clientInfo: { name: string } }) => ({
    userAgent: `hello ${params.clientInfo.name}`,
  }));
  server.onRequest('fails', () => {
    throw new Error('nope');
  });
  const clientGotNotif = new Promise<unknown>((res) => client.onNotification('thread/goal/updated', (p) => res(p)));
  let approvalParams: unknown;
  client.onRequest('item/commandExecution/requestApproval', (p) => {
    approvalParams = p;
    return { decision: 'accept' };
  });
  server.listen();
  client.listen();

  const init = await client.sendRequest('initialize', { clientInfo: { name: 'cgr', title: 'x', version: '1' } });
  assert.deepEqual(init, { userAgent: 'hello cgr' });
  await client.sendNotification('initialized');
  assert.equal(await serverGotNotif, null);
  await assert.rejects(client.sendRequest('fails', {}), /nope/);

  await server.sendNotification('thread/goal/updated', { threadId: 't1', goal: null });
  assert.deepEqual(await clientGotNotif, { threadId: 't1', goal: null });
  const answer = await server.sendRequest('item/commandExecution/requestApproval', { threadId: 't1', itemId: 'i' });
  assert.deepEqual(answer, { decision: 'accept' });
  assert.deepEqual(approvalParams, { threadId: 't1', itemId: 'i' });
}

test('vscode-jsonrpc round trip over a PassThrough pair', async () => {
  const { client, server } = connectPair();
  try {
    await roundTrip(client, server);
  } finally {
    client.dispose();
    server.dispose();
  }
});

test('vscode-jsonrpc: malformed lines are reported to connection.onError and do not stop it; dispatch order is wire order', async () => {
  const c2s = new PassThrough();
  const s2c = new PassThrough();
  const client = createMessageConnection(new LineMessageReader(s2c), new LineMessageWriter(c2s));
  const connErrors: Error[] = [];
  client.onError(([e]) => connErrors.push(e));
  const order: string[] = [];
  client.onNotification('n', (p: { k: string }) => void order.push(`notif ${p.k}`));
  client.listen();
  let requestId: number | string | undefined;
  c2s.on('data', (d: Buffer) => {
    for (const line of d.toString().split('\n').filter(Boolean)) {
      const m = JSON.parse(line) as { id: number };
      requestId = m.id;
      // notification, garbage, response, notification — all in one chunk, without "jsonrpc"
      s2c.write(
        `${JSON.stringify({ method: 'n', params: { k: 'before' }, emittedAtMs: 1 })}\n` +
          `{garbage\n` +
          `${JSON.stringify({ id: m.id, result: { r: 1 } })}\n` +
          `${JSON.stringify({ method: 'n', params: { k: 'after' }, emittedAtMs: 2 })}\n`,
      );
    }
  });
  const result = await client.sendRequest('ask', {});
  order.push('response');
  await sleep(20);
  assert.deepEqual(result, { r: 1 });
  assert.notEqual(requestId, undefined);
  assert.deepEqual(order, ['notif before', 'response', 'notif after']);
  assert.equal(connErrors.length, 1);
  assert.match(connErrors[0].message, /invalid JSON/);
  client.dispose();
});

test('websocket reader/writer: text and binary frames, malformed frames skipped, close fires', async () => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const port = (wss.address() as AddressInfo).port;
  const serverSide = new Promise<WebSocket>((r) => wss.once('connection', (ws) => r(ws)));
  const ws = new WebSocket(`ws://127.0.0.1:${port}`);
  await new Promise<void>((r, j) => {
    ws.once('open', () => r());
    ws.once('error', j);
  });
  const peer = await serverSide;
  const reader = new WebSocketMessageReader(ws);
  const writer = new WebSocketMessageWriter(ws);
  const c = collect(reader);
  const got: string[] = [];
  peer.on('message', (d) => got.push((d as Buffer).toString())); // ws's default binaryType: one Buffer
  await writer.write({ jsonrpc: '2.0', method: 'hi' } as Message);
  peer.send('{"method":"t"}');
  peer.send(Buffer.from('{"id":1,"result":{}}'), { binary: true });
  peer.send('not json at all');
  peer.send('{"id":[1],"method":"x"}');
  peer.send('{"method":"after","emittedAtMs":5}');
  await sleep(50);
  assert.deepEqual(got, ['{"jsonrpc":"2.0","method":"hi"}']);
  assert.deepEqual(
    c.messages.map((m) => (m as unknown as { method?: string }).method ?? 'response'),
    ['t', 'response', 'after'],
  );
  assert.equal(reader.malformedCount, 2);
  assert.equal(c.errors.length, 2);
  peer.close();
  await sleep(50);
  assert.equal(c.closes(), 1);
  await assert.rejects(writer.write({ jsonrpc: '2.0', method: 'late' } as Message), /not open/);
  await new Promise<void>((r) => wss.close(() => r()));
});
