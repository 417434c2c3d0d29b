import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as net from 'node:net';
import * as http from 'node:http';
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { createMessageConnection, type MessageConnection } from 'vscode-jsonrpc/node';
import { WebSocketMessageReader, WebSocketMessageWriter } from '../../src/protocol/webSocketFraming';
import { checkSocketSafety, checkWsUrl, defaultCodexHome, defaultSocketPath } from '../../src/protocol/socketSafety';
import { openTransport, TransportError, type Transport } from '../../src/protocol/transport';
import { sleep, tempDir } from '../support/wait';
import { isDead } from '../support/processes';

async function listenUnix(sockPath: string): Promise<net.Server> {
  const srv = net.createServer((s) => s.destroy());
  await new Promise<void>((r, j) => {
    srv.once('error', j);
    srv.listen(sockPath, () => r());
  });
  return srv;
}

const closeServer = (s: net.Server | http.Server | WebSocketServer) => new Promise<void>((r) => s.close(() => r()));

async function expectTransportError(p: Promise<unknown>, code: string, re?: RegExp): Promise<TransportError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof TransportError, `expected TransportError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (re) assert.match(e.message, re);
    return e;
  }
  assert.fail(`expected TransportError ${code}`);
}

// ---------------------------------------------------------------- socketSafety

test('defaultCodexHome / defaultSocketPath', () => {
  assert.equal(defaultCodexHome({ CODEX_HOME: '/x/codex' }), '/x/codex');
  assert.equal(defaultCodexHome({ HOME: '/home/u' }), '/home/u/.codex');
  assert.equal(defaultSocketPath('/x/codex'), '/x/codex/app-server-control/app-server-control.sock');
});

test('checkSocketSafety: missing, dangling symlink, not a socket, dir 0777 refused, 0700 accepted, symlink resolved', async () => {
  const dir = tempDir('cgr-t-');
  try {
    const missing = await checkSocketSafety(path.join(dir, 'nope.sock'));
    assert.equal(missing.ok, false);
    assert.ok(!missing.ok && missing.missing === true);
    assert.match(
      !missing.ok ? missing.reason : '',
      /no Codex daemon socket at .*nope\.sock \(start one with `codex app-server daemon start`\)/,
    );

    const dangling = path.join(dir, 'dangling.sock');
    fs.symlinkSync(path.join(dir, 'gone'), dangling);
    const d = await checkSocketSafety(dangling);
    assert.ok(!d.ok && d.missing === true, JSON.stringify(d));

    const file = path.join(dir, 'file.sock');
    fs.writeFileSync(file, '');
    const nf = await checkSocketSafety(file);
    assert.ok(!nf.ok && !nf.missing);
    assert.match(!nf.ok ? nf.reason : '', /not a Unix socket/);

    const sock = path.join(dir, 's.sock');
    const srv = await listenUnix(sock);
    try {
      const good = await checkSocketSafety(sock);
      assert.deepEqual(good, { ok: true, resolved: fs.realpathSync(sock) });

      // symlink from another (safe) dir into this one: resolved to the real socket
      const linkDir = tempDir('cgr-t-');
      try {
        const link = path.join(linkDir, 'app-server-control.sock');
        fs.symlinkSync(sock, link);
        const viaLink = await checkSocketSafety(link);
        assert.deepEqual(viaLink, { ok: true, resolved: fs.realpathSync(sock) });
      } finally {
        fs.rmSync(linkDir, { recursive: true, force: true });
      }

      fs.chmodSync(dir, 0o777);
      const bad = await checkSocketSafety(sock);
      assert.ok(!bad.ok && !bad.missing);
      assert.match(!bad.ok ? bad.reason : '', /writable by group or others \(mode 0777\).*chmod go-w/);
      fs.chmodSync(dir, 0o720);
      assert.equal((await checkSocketSafety(sock)).ok, false, 'group-writable refused');
      fs.chmodSync(dir, 0o755);
      assert.equal((await checkSocketSafety(sock)).ok, true, 'readable by others is fine');
      fs.chmodSync(dir, 0o700);

      if (process.getuid?.() === 0) {
        // As root we can fake foreign ownership.
        fs.chownSync(dir, 65534, 65534);
        const foreignDir = await checkSocketSafety(sock);
        assert.match(!foreignDir.ok ? foreignDir.reason : '', /directory .* is owned by uid 65534, not by you/);
        fs.chownSync(dir, 0, 0);
        fs.lchownSync(sock, 65534, 65534);
        const foreignSock = await checkSocketSafety(sock);
        assert.match(!foreignSock.ok ? foreignSock.reason : '', /is owned by uid 65534, not by you/);
        fs.lchownSync(sock, 0, 0);
      }
    } finally {
      await closeServer(srv);
    }
  } finally {
    fs.chmodSync(dir, 0o700);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('checkWsUrl', () => {
  const ok = [
    'ws://127.0.0.1:4500',
    'ws://127.3.2.1:1/',
    'ws://localhost:80',
    'wss://LOCALHOST/',
    'ws://[::1]:4500',
    'ws://[::ffff:127.0.0.1]:1',
  ];
  for (const u of ok) assert.deepEqual(checkWsUrl(u), { ok: true }, u);
  const refused: Array<[string, RegExp]> = [
    ['http://127.0.0.1:4500', /only ws:\/\/ and wss:\/\//],
    ['ws://example.com:4500', /non-loopback/],
    ['ws://10.0.0.1:4500', /non-loopback/],
    ['ws://0.0.0.0:4500', /non-loopback/],
    ['ws://localhost.evil.com', /non-loopback/],
    ['ws://[::ffff:10.0.0.1]:1', /non-loopback/],
    ['ws://127.0.0.1:4500/daemon/shutdown', /would stop the daemon/],
    ['not a url', /invalid app-server URL/],
  ];
  for (const [u, re] of refused) {
    const r = checkWsUrl(u);
    assert.equal(r.ok, false, u);
    assert.match(!r.ok ? r.reason : '', re, u);
  }
  assert.equal(checkWsUrl('ws://127.0.0.1:4500/daemon/shutdown').ok, false);
});

// ---------------------------------------------------------------- ws transports

/** A JSON-RPC server on a ws server: answers requests, and on `poke` notifies and asks the client. */
function serveJsonRpc(wss: WebSocketServer, seen: { paths: string[]; conns: MessageConnection[] }) {
  wss.on('connection', (ws: WebSocket, req) => {
    seen.paths.push(req.url ?? '');
    const conn = createMessageConnection(new WebSocketMessageReader(ws), new WebSocketMessageWriter(ws));
    seen.conns.push(conn);
    conn.onRequest('initialize', (p: { clientInfo: { name: string } }) => ({ userAgent: `ua/${p.clientInfo.name}` }));
    conn.onNotification('poke', async () => {
      await conn.sendNotification('thread/status/changed', { threadId: 't', status: { type: 'idle' } });
      const answer = await conn.sendRequest('item/tool/requestUserInput', { q: 'why?' });
      await conn.sendNotification('answered', { answer });
    });
    conn.listen();
  });
}

async function exerciseClient(t: Transport): Promise<void> {
  const client = createMessageConnection(t.reader, t.writer);
  const status = new Promise((r) => client.onNotification('thread/status/changed', r));
  const answered = new Promise((r) => client.onNotification('answered', r));
  client.onRequest('item/tool/requestUserInput', (p: { q: string }) => ({ text: `because ${p.q}` }));
  client.listen();
  const init = await client.sendRequest('initialize', { clientInfo: { name: 'cgr' } });
  assert.deepEqual(init, { userAgent: 'ua/cgr' });
  await client.sendNotification('poke', {});
  assert.deepEqual(await status, { threadId: 't', status: { type: 'idle' } });
  assert.deepEqual(await answered, { answer: { text: 'because why?' } });
}

test('url transport: round trip over ws on 127.0.0.1:0; server close fires onClose once', async () => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const seen = { paths: [] as string[], conns: [] as MessageConnection[] };
  serveJsonRpc(wss, seen);
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
  const t = await openTransport({ kind: 'url', url }, { connectTimeoutMs: 2000 });
  assert.equal(t.describe, url);
  const reasons: string[] = [];
  t.onClose((r) => reasons.push(r));
  await exerciseClient(t);
  for (const ws of wss.clients) ws.close(4000, 'bye');
  await sleep(50);
  assert.equal(reasons.length, 1);
  assert.match(reasons[0], /connection closed \(code 4000: bye\)/);
  await t.close(); // idempotent after remote close
  const late: string[] = [];
  t.onClose((r) => late.push(r));
  await sleep(1);
  assert.deepEqual(late, reasons, 'late subscribers get the reason');
  await closeServer(wss);
});

test('socket transport: WebSocket over a Unix socket in a 0700 dir, path "/", client close', async () => {
  const dir = tempDir('cgr-t-');
  const sock = path.join(dir, 'app-server-control.sock');
  const httpServer = http.createServer((_req, res) => res.writeHead(404).end());
  await new Promise<void>((r) => httpServer.listen(sock, () => r()));
  const wss = new WebSocketServer({ server: httpServer });
  const seen = { paths: [] as string[], conns: [] as MessageConnection[] };
  serveJsonRpc(wss, seen);
  try {
    const t = await openTransport({ kind: 'socket', path: sock }, { connectTimeoutMs: 2000 });
    assert.match(t.describe, /Codex daemon socket .*app-server-control\.sock/);
    const reasons: string[] = [];
    t.onClose((r) => reasons.push(r));
    await exerciseClient(t);
    assert.deepEqual(seen.paths, ['/']);
    const serverClosed = new Promise<void>((r) => seen.conns[0].onClose(() => r()));
    await t.close();
    await serverClosed;
    assert.equal(reasons.length, 1);
    assert.match(reasons[0], /closed by client/);
  } finally {
    for (const ws of wss.clients) ws.terminate();
    await closeServer(wss);
    await closeServer(httpServer);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('socket transport errors: missing, unsafe, stale socket refused', async () => {
  const dir = tempDir('cgr-t-');
  try {
    await expectTransportError(
      openTransport({ kind: 'socket', path: path.join(dir, 'none.sock') }),
      'missing',
      /daemon start/,
    );

    const sock = path.join(dir, 's.sock');
    // A socket file left behind by a process that died: nobody listens.
    const script = `require('net').createServer().listen(${JSON.stringify(sock)}, () => console.log('ready'))`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((r) => child.stdout.once('data', () => r()));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    assert.ok(fs.statSync(sock).isSocket());
    await expectTransportError(openTransport({ kind: 'socket', path: sock }), 'refused', /not running/);

    fs.chmodSync(dir, 0o777);
    await expectTransportError(openTransport({ kind: 'socket', path: sock }), 'unsafe', /writable by group or others/);
  } finally {
    fs.chmodSync(dir, 0o700);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('url transport errors: non-loopback, refused, upgrade rejected, handshake timeout, oversize frame', async () => {
  await expectTransportError(openTransport({ kind: 'url', url: 'ws://192.0.2.1:1' }), 'unsafe', /non-loopback/);

  const tmp = net.createServer();
  await new Promise<void>((r) => tmp.listen(0, '127.0.0.1', () => r()));
  const freePort = (tmp.address() as AddressInfo).port;
  await closeServer(tmp);
  await expectTransportError(openTransport({ kind: 'url', url: `ws://127.0.0.1:${freePort}` }), 'refused', /refused/);

  const plain = http.createServer((_req, res) => res.writeHead(404).end());
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', () => r()));
  await expectTransportError(
    openTransport({ kind: 'url', url: `ws://127.0.0.1:${(plain.address() as AddressInfo).port}` }),
    'refused',
    /HTTP 404/,
  );
  plain.closeAllConnections();
  await closeServer(plain);

  const sockets: net.Socket[] = [];
  const silent = net.createServer((s) => sockets.push(s)); // accepts, never answers the upgrade
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  const started = Date.now();
  await expectTransportError(
    openTransport(
      { kind: 'url', url: `ws://127.0.0.1:${(silent.address() as AddressInfo).port}` },
      { connectTimeoutMs: 200 },
    ),
    'timeout',
  );
  assert.ok(Date.now() - started < 1500);
  for (const s of sockets) s.destroy();
  await closeServer(silent);
});

test('url transport: a frame above maxMessageBytes closes with 1009 and is reported, even if sent right after the upgrade', async () => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  // Sent immediately on connection: may arrive in the same packet as the 101 response,
  // i.e. before the caller could call reader.listen(); the reader buffers it.
  wss.on('connection', (ws) => {
    ws.send(JSON.stringify({ method: 'first', params: {} }));
    ws.send(JSON.stringify({ method: 'big', params: { x: 'x'.repeat(4096) } }));
  });
  try {
    const t = await openTransport(
      { kind: 'url', url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}` },
      { maxMessageBytes: 1024 },
    );
    const readerErrors: Error[] = [];
    const got: string[] = [];
    t.reader.onError((e) => readerErrors.push(e));
    const readerClosed = new Promise<void>((r) => t.reader.onClose(() => r()));
    t.reader.listen((m) => got.push((m as unknown as { method: string }).method));
    const reason = await new Promise<string>((r) => t.onClose(r));
    await readerClosed;
    assert.match(reason, /1009|payload/i);
    assert.deepEqual(got, ['first']);
    assert.ok(
      readerErrors.some((e) => /payload/i.test(e.message)),
      readerErrors.map(String).join(),
    );
  } finally {
    for (const ws of wss.clients) ws.terminate();
    await closeServer(wss);
  }
});

// ---------------------------------------------------------------- stdio transport

const ECHO_CHILD = `
const rl = require('readline').createInterface({ input: process.stdin });
process.stderr.write('child ready\\n');
rl.on('line', (l) => {
  const m = JSON.parse(l);
  if (m.method === 'crash') process.exit(3);
  if (m.id !== undefined && m.method) process.stdout.write(JSON.stringify({ id: m.id, result: { echo: m.params } }) + '\\n');
  else if (m.method) process.stdout.write(JSON.stringify({ method: 'echoed', params: m.params, emittedAtMs: Date.now() }) + '\\n');
});
`;

test('stdio transport: echo child, stderr lines, exit reported once', async () => {
  const stderr: string[] = [];
  const t = await openTransport(
    { kind: 'stdio', command: process.execPath, args: ['-e', ECHO_CHILD] },
    { onStderr: (l) => stderr.push(l) },
  );
  assert.equal(typeof t.pid, 'number');
  assert.match(t.describe, /\(pid \d+\)/);
  const reasons: string[] = [];
  t.onClose((r) => reasons.push(r));
  const client = createMessageConnection(t.reader, t.writer);
  const echoed = new Promise((r) => client.onNotification('echoed', r));
  client.listen();
  assert.deepEqual(await client.sendRequest('thread/loaded/list', { limit: 5 }), { echo: { limit: 5 } });
  await client.sendNotification('hello', { a: 1 });
  assert.deepEqual(await echoed, { a: 1 });
  await client.sendNotification('crash', {});
  await new Promise<void>((r) => t.onClose(() => r()));
  assert.equal(reasons.length, 1);
  assert.match(reasons[0], /exited with code 3/);
  assert.ok(stderr.includes('child ready'), JSON.stringify(stderr));
  client.dispose();
  await t.close();
});

test('stdio transport: close() kills the whole process group, escalating to SIGKILL', async () => {
  const script = `
    process.on('SIGTERM', () => {}); // stubborn: only SIGKILL works
    const g = require('child_process').spawn(process.execPath, ['-e', 'process.on("SIGTERM", () => {}); setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    process.stderr.write('grandchild ' + g.pid + '\\n');
    setInterval(() => {}, 1000);
  `;
  let grandchild: number | undefined;
  const gotPid = new Promise<void>((resolve) => {
    void openTransport(
      { kind: 'stdio', command: process.execPath, args: ['-e', script] },
      {
        killGraceMs: 300,
        onStderr: (l) => {
          const m = /^grandchild (\d+)$/.exec(l);
          if (m) {
            grandchild = Number(m[1]);
            resolve();
          }
        },
      },
    ).then((t) => (transport = t));
  });
  let transport: Transport | undefined;
  await gotPid;
  while (!transport) await sleep(5);
  const pid = transport.pid!;
  assert.ok(!isDead(pid) && !isDead(grandchild!));
  const reasons: string[] = [];
  transport.onClose((r) => reasons.push(r));
  const started = Date.now();
  await transport.close();
  assert.ok(Date.now() - started < 2000);
  for (let i = 0; i < 100 && !(isDead(pid) && isDead(grandchild!)); i++) await sleep(10);
  assert.ok(isDead(pid), 'child killed');
  assert.ok(isDead(grandchild!), 'grandchild in the same group killed');
  assert.equal(reasons.length, 1);
  assert.match(reasons[0], /closed by client \(was killed by signal SIGKILL\)/);
  await transport.close(); // idempotent
});

test('stdio transport: missing command', async () => {
  await expectTransportError(
    openTransport({ kind: 'stdio', command: '/nonexistent/codex-binary', args: ['app-server'] }),
    'missing',
    /ENOENT/,
  );
});
