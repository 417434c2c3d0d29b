// Fault injection, item 7: security. The daemon's control socket is trusted only when nobody else
// could have planted or swapped it; nothing ever listens on a network port; a ws:// URL to
// another host is refused unless allowed explicitly (and the runner's command line has no way
// to allow it); where the daemon is and what runs come from machine settings only, never from a
// workspace; the leader election's directory and socket are private.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as dgram from 'node:dgram';
import * as fs from 'node:fs';
import * as http from 'node:http';
import Module from 'node:module';
import * as net from 'node:net';
import netModule from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import tlsModule from 'node:tls';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { LeaderElection } from '../../src/leader/election';
import { connectDaemon, startSession } from '../../src/protocol/client';
import { checkWsUrl, DAEMON_SHUTDOWN_PATH } from '../../src/protocol/socketSafety';
import { openTransport, TransportError } from '../../src/protocol/transport';
import { parseCli, UsageError } from '../../src/runner/args';
import { makeHarness } from '../support/engineHarness';
import { CLI, RunnerProcess } from '../support/runnerProcess';
import { RecordingListener } from '../support/wireFuzz';
import { tempDir, until } from '../support/wait';

const ROOT = process.getuid?.() === 0;
const NOBODY = 65534;

// ---- a daemon on a Unix socket that answers just enough for a client to connect ------------------

interface MiniDaemon {
  socketPath: string;
  connections: number;
  close(): Promise<void>;
}

/** A WebSocket JSON-RPC server on `<dir>/<name>`: answers initialize and an empty thread list. */
async function miniDaemon(dir: string, name = 'app-server-control.sock'): Promise<MiniDaemon> {
  const socketPath = path.join(dir, name);
  const server = http.createServer((_req, res) => res.writeHead(404).end());
  await new Promise<void>((resolve) => server.listen(socketPath, () => resolve()));
  fs.chmodSync(socketPath, 0o600);
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  const d: MiniDaemon = {
    socketPath,
    connections: 0,
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  wss.on('connection', (ws: WebSocket) => {
    d.connections++;
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString()) as { id?: number | string; method?: string };
      if (m.id === undefined || m.method === undefined) return;
      const reply = (body: object) => ws.send(JSON.stringify({ id: m.id, ...body }));
      if (m.method === 'initialize') reply({ result: { userAgent: 'mini/1', codexHome: dir } });
      else if (m.method === 'thread/loaded/list') reply({ result: { data: [], nextCursor: null } });
      else reply({ error: { code: -32601, message: `not in this mini daemon: ${m.method}` } });
    });
  });
  return d;
}

// ---- 1. the control socket ----------------------------------------------------------------------

interface SocketCase {
  name: string;
  dirMode: number;
  sockMode: number;
  owner?: 'dir' | 'socket';
  refused: RegExp | null;
}

const socketCases: SocketCase[] = [
  { name: 'dir 0700, socket 0600 (what the Codex daemon makes)', dirMode: 0o700, sockMode: 0o600, refused: null },
  { name: 'dir 0755, socket 0755 (readable by others: no risk)', dirMode: 0o755, sockMode: 0o755, refused: null },
  {
    name: 'dir 0750, socket 0660 (a group the user shares the daemon with)',
    dirMode: 0o750,
    sockMode: 0o660,
    refused: null,
  },
  {
    name: 'dir 0770 (group-writable)',
    dirMode: 0o770,
    sockMode: 0o600,
    refused: /its directory .* is writable by group or others \(mode 0770\); fix it with `chmod go-w /,
  },
  {
    name: 'dir 0702 (writable by others)',
    dirMode: 0o702,
    sockMode: 0o600,
    refused: /is writable by group or others \(mode 0702\)/,
  },
  { name: 'dir 0777', dirMode: 0o777, sockMode: 0o600, refused: /is writable by group or others \(mode 0777\)/ },
  {
    name: 'dir 1777 (sticky, like /tmp)',
    dirMode: 0o1777,
    sockMode: 0o600,
    refused: /is writable by group or others \(mode 01777\)/,
  },
  {
    name: 'socket 0602 (writable by others)',
    dirMode: 0o700,
    sockMode: 0o602,
    refused: /it is writable by others \(mode 0602\), so any local user could drive your Codex threads through it/,
  },
  { name: 'socket 0666', dirMode: 0o700, sockMode: 0o666, refused: /it is writable by others \(mode 0666\)/ },
  { name: 'socket 0777', dirMode: 0o700, sockMode: 0o777, refused: /it is writable by others \(mode 0777\)/ },
];
/** Another user's socket or directory: only root can make one (chown), so these run as root only. */
const ownerCases: SocketCase[] = [
  {
    name: 'socket owned by another user (uid 65534)',
    dirMode: 0o700,
    sockMode: 0o600,
    owner: 'socket',
    refused: /it is owned by uid 65534, not by you \(uid 0\)/,
  },
  {
    name: 'directory owned by another user (uid 65534)',
    dirMode: 0o700,
    sockMode: 0o600,
    owner: 'dir',
    refused: /its directory .* is owned by uid 65534, not by you \(uid 0\)/,
  },
];
/** Why the tests of another user's files do not run: not root, this process cannot make one. */
const NEEDS_ROOT = ROOT
  ? false
  : `needs root: only root can give a file to another user (chown to uid ${NOBODY}), and this runs as uid ${process.getuid?.() ?? 'unknown'}`;

/** Sets up one case's socket and directory and checks that it is refused or accepted as it should be. */
async function socketCase(c: SocketCase): Promise<void> {
  const dir = tempDir('cgr-sec-');
  const d = await miniDaemon(dir);
  try {
    fs.chmodSync(d.socketPath, c.sockMode);
    fs.chmodSync(dir, c.dirMode);
    if (c.owner === 'socket') fs.lchownSync(d.socketPath, NOBODY, NOBODY);
    if (c.owner === 'dir') fs.chownSync(dir, NOBODY, NOBODY);
    if (c.refused) {
      await assert.rejects(
        openTransport({ kind: 'socket', path: d.socketPath }, { connectTimeoutMs: 2000 }),
        (e: unknown) => {
          assert.ok(e instanceof TransportError, String(e));
          assert.equal(e.code, 'unsafe', `${c.name}: ${e.message}`);
          assert.match(e.message, /^refusing Codex daemon socket /, c.name);
          assert.match(e.message, c.refused!, c.name);
          return true;
        },
        c.name,
      );
      assert.equal(d.connections, 0, `${c.name}: nothing may be sent to a socket that is refused`);
    } else {
      const listener = new RecordingListener();
      const transport = await openTransport({ kind: 'socket', path: d.socketPath }, { connectTimeoutMs: 2000 });
      const session = await startSession(transport, listener, { clientVersion: 'sec' });
      assert.deepEqual(await session.listLoaded(), []);
      await session.close();
      assert.equal(d.connections, 1, c.name);
    }
  } finally {
    if (c.owner) fs.chownSync(dir, 0, 0);
    fs.chmodSync(dir, 0o700);
    await d.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test(`Invariant: the daemon socket is refused, before any connection is made, when it is writable by others or its directory by group or others; a private socket is accepted and serves a session (${socketCases.length} cases)`, async () => {
  for (const c of socketCases) await socketCase(c);
});

test(
  `Invariant: the daemon socket is refused, before any connection is made, when it or its directory belongs to another user (${ownerCases.length} cases)`,
  { skip: NEEDS_ROOT },
  async () => {
    for (const c of ownerCases) await socketCase(c);
  },
);

test('Invariant: through a symbolic link, it is the real socket and its real directory that are checked (and connected to)', async () => {
  const unsafe = tempDir('cgr-sec-');
  const safe = tempDir('cgr-sec-');
  const d = await miniDaemon(unsafe);
  try {
    // A link in a private directory to a socket in a world-writable one: refused.
    fs.chmodSync(unsafe, 0o777);
    const link = path.join(safe, 'app-server-control.sock');
    fs.symlinkSync(d.socketPath, link);
    await assert.rejects(
      openTransport({ kind: 'socket', path: link }),
      /refusing Codex daemon socket .*\(-> .*\): its directory .* is writable by group or others/,
    );
    assert.equal(d.connections, 0);
    // A link in a world-writable directory to a private socket: the socket is what is used.
    fs.chmodSync(unsafe, 0o700);
    fs.chmodSync(safe, 0o777);
    const t = await openTransport({ kind: 'socket', path: link });
    assert.equal(t.describe, `Codex daemon socket ${fs.realpathSync(d.socketPath)}`);
    await t.close();
  } finally {
    fs.chmodSync(unsafe, 0o700);
    fs.chmodSync(safe, 0o700);
    await d.close();
    fs.rmSync(unsafe, { recursive: true, force: true });
    fs.rmSync(safe, { recursive: true, force: true });
  }
});

// ---- 2. ws:// URLs --------------------------------------------------------------------------------

const LOOPBACK_URLS = [
  'ws://127.0.0.1:4500',
  'ws://127.9.8.7:1/',
  'ws://127.1:4500',
  'ws://0x7f000001:4500',
  'ws://2130706433:4500',
  'ws://localhost:4500',
  'wss://LOCALHOST.:4500',
  'ws://[::1]:4500',
  'ws://[::ffff:127.0.0.1]:4500',
  'ws://[0:0:0:0:0:0:0:1]:4500',
];
const REMOTE_URLS = [
  'ws://example.com:4500',
  'ws://10.0.0.1:4500',
  'ws://192.168.1.4:80',
  'ws://0.0.0.0:4500',
  'ws://[::]:4500',
  'ws://[fe80::1]:4500',
  'ws://[::ffff:10.0.0.1]:4500',
  'ws://127.0.0.1.nip.io:4500',
  'ws://localhost.evil.example:4500',
  'ws://127.0.0.1@evil.example:4500',
  'ws://evil.example:4500#@127.0.0.1',
  'ws://evil.example\\@127.0.0.1:4500',
  'wss://8.8.8.8',
];
const SHUTDOWN_URLS = [
  `ws://127.0.0.1:4500${DAEMON_SHUTDOWN_PATH}`,
  'ws://127.0.0.1:4500/daemon/shutdown/',
  'ws://127.0.0.1:4500//daemon//shutdown',
  'ws://127.0.0.1:4500/daemon/./shutdown',
  'ws://127.0.0.1:4500/x/../daemon/shutdown',
  'ws://127.0.0.1:4500/daemon/shutdown?now=1',
];

/**
 * Counts outgoing TCP/TLS connections made while `fn` runs (ws connects through net.connect /
 * tls.connect). A failure of `fn` (an assertion inside it) is the test's failure: it is thrown
 * once the spies are removed, never swallowed.
 */
async function countConnects(fn: () => Promise<unknown>): Promise<number> {
  // The modules themselves, as default imports (an `import * as` namespace is a copy with read-only bindings).
  const modules = [netModule, tlsModule] as unknown as Array<{ connect: (...a: unknown[]) => unknown }>;
  const originals = modules.map((m) => m.connect);
  let n = 0;
  modules.forEach((m, i) => {
    m.connect = (...args: unknown[]) => {
      n++;
      return originals[i].apply(m, args);
    };
  });
  try {
    await fn();
  } finally {
    modules.forEach((m, i) => {
      m.connect = originals[i]!;
    });
  }
  return n;
}

test(`Invariant: a ws:// URL to another host is refused, without any connection attempt, unless remote hosts are allowed explicitly; the daemon's shutdown path never (${LOOPBACK_URLS.length + REMOTE_URLS.length + SHUTDOWN_URLS.length} URLs)`, async () => {
  for (const url of LOOPBACK_URLS) assert.deepEqual(checkWsUrl(url), { ok: true }, url);
  for (const url of REMOTE_URLS) {
    const r = checkWsUrl(url);
    assert.equal(r.ok, false, url);
    assert.match(
      !r.ok ? r.reason : '',
      /^refusing non-loopback app-server URL .*: host .* is not 127\.0\.0\.0\/8, ::1 or localhost \(the app-server has no authentication, so only a daemon on this machine is reached; for one on another machine, run the runner there, or forward its port: ssh -L PORT:127\.0\.0\.1:PORT HOST\)$/,
      url,
    );
    const connects = await countConnects(() =>
      assert.rejects(
        openTransport({ kind: 'url', url }, { connectTimeoutMs: 500 }),
        (e: unknown) => e instanceof TransportError && e.code === 'unsafe',
      ),
    );
    assert.equal(connects, 0, `${url}: no connection may be attempted`);
  }
  for (const url of SHUTDOWN_URLS) {
    const r = checkWsUrl(url);
    assert.match(!r.ok ? r.reason : '', /\/daemon\/shutdown would stop the daemon|refusing non-loopback/, url);
  }
  // The spy sees real connections: a loopback URL is connected to.
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  try {
    const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
    const connects = await countConnects(async () =>
      (await openTransport({ kind: 'url', url }, { connectTimeoutMs: 2000 })).close(),
    );
    assert.equal(connects, 1, 'the connection counter works');
  } finally {
    await new Promise<void>((r) => wss.close(() => r()));
  }
});

test("Invariant: the runner's command line (a public contract) offers no way to allow a remote URL: --url to another host is a usage error, exit 2, before anything connects", () => {
  for (const url of REMOTE_URLS) {
    assert.throws(
      () => parseCli(['watch', '--url', url], {}),
      (e: unknown) => e instanceof UsageError && /refusing non-loopback app-server URL/.test(e.message),
      url,
    );
  }
  for (const flag of ['--allow-remote', '--insecure', '--remote']) {
    assert.throws(() => parseCli(['watch', '--url', REMOTE_URLS[0], flag], {}), UsageError, flag);
  }
  const r = spawnSync(
    process.execPath,
    [CLI, 'watch', '--url', 'ws://10.1.2.3:4500', '--state', path.join(os.tmpdir(), 'cgr-never.json')],
    { encoding: 'utf8', timeout: 20_000 },
  );
  assert.equal(r.status, 2, r.stderr);
  assert.match(
    r.stderr,
    /^codex-goal-recovery: refusing non-loopback app-server URL ws:\/\/10\.1\.2\.3:4500: host 10\.1\.2\.3 is not 127\.0\.0\.0\/8/,
  );
  assert.equal(fs.existsSync(path.join(os.tmpdir(), 'cgr-never.json')), false, 'nothing was started');
});

// ---- 3. settings: machine scope, never a workspace's ---------------------------------------------

interface ManifestProperty {
  type?: string;
  scope?: string;
  enum?: unknown[];
}

test('Invariant: every free-text setting (a path, a socket, an executable, a collector URL) is machine-scoped in the manifest, so a workspace cannot set it', () => {
  const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as {
    contributes: { configuration: { properties: Record<string, ManifestProperty> } };
    capabilities: { untrustedWorkspaces: { supported: boolean | string } };
  };
  const props = manifest.contributes.configuration.properties;
  const freeText = Object.entries(props)
    .filter(([, p]) => p.type === 'string' && p.enum === undefined)
    .map(([k]) => k)
    .sort();
  assert.deepEqual(freeText, [
    'codexGoalRecovery.codexHome',
    'codexGoalRecovery.codexPath',
    'codexGoalRecovery.socketPath',
    'codexGoalRecovery.telemetry.otlpEndpoint',
  ]);
  for (const key of freeText) assert.equal(props[key].scope, 'machine', key);
  // Nothing is read from the workspace, so untrusted workspaces are fine.
  assert.equal(manifest.capabilities.untrustedWorkspaces.supported, true);
});

test("Invariant: settings.ts takes codexPath, codexHome and socketPath from the user's (or remote machine's) settings or the default, never from a workspace or folder value, even one that get() would return", () => {
  // src/config/settings imports 'vscode' (absent outside VS Code): give it a stand-in.
  const mod = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = mod._load;
  mod._load = function (request: string, ...rest: unknown[]) {
    if (request === 'vscode')
      return {
        workspace: {
          getConfiguration: () => {
            throw new Error('not in VS Code');
          },
        },
      };
    return load.call(this, request, ...rest);
  };
  let settings: typeof import('../../src/config/settings');
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded now, under the patched loader
    settings = require('../../src/config/settings') as typeof import('../../src/config/settings');
  } finally {
    mod._load = load;
  }
  const defaults: Record<string, unknown> = { codexHome: '', socketPath: '', codexPath: 'codex' };
  /** A WorkspaceConfiguration where the workspace (and a folder) set everything, and the user some. */
  const config = (user: Record<string, unknown>) => {
    const workspace: Record<string, unknown> = {
      codexHome: '/workspace/evil-home',
      socketPath: '/workspace/evil.sock',
      codexPath: '/workspace/evil-codex',
    };
    return {
      get: <T>(key: string, fallback?: T) => (workspace[key] ?? user[key] ?? defaults[key] ?? fallback) as T,
      has: () => true,
      inspect: (key: string) => ({
        key,
        defaultValue: defaults[key],
        globalValue: user[key],
        workspaceValue: workspace[key],
        workspaceFolderValue: workspace[key],
      }),
      update: () => Promise.resolve(),
    } as unknown as import('vscode').WorkspaceConfiguration;
  };
  const env = { HOME: '/home/u' };
  const byDefault = settings.readSettings(config({}), env);
  assert.equal(byDefault.codexHome, '/home/u/.codex');
  assert.equal(byDefault.socketPath, '/home/u/.codex/app-server-control/app-server-control.sock');
  assert.equal(byDefault.codexPath, 'codex');
  const byUser = settings.readSettings(
    config({ codexHome: '/opt/codex-home', codexPath: '/usr/local/bin/codex' }),
    env,
  );
  assert.equal(byUser.codexHome, '/opt/codex-home');
  assert.equal(byUser.socketPath, '/opt/codex-home/app-server-control/app-server-control.sock');
  assert.equal(byUser.codexPath, '/usr/local/bin/codex');
  assert.deepEqual(settings.targetOf(byUser), {
    kind: 'socket',
    path: '/opt/codex-home/app-server-control/app-server-control.sock',
  });
  for (const s of [byDefault, byUser])
    assert.ok(![s.codexHome, s.socketPath, s.codexPath].some((v) => v.includes('/workspace/')), JSON.stringify(s));
});

// ---- 4. nothing listens on a network port -------------------------------------------------------

/** Inodes of the sockets a process holds (/proc/<pid>/fd/* -> socket:[inode]). */
function socketInodes(pid: number | 'self'): Set<string> {
  const inodes = new Set<string>();
  const dir = `/proc/${pid}/fd`;
  for (const fd of fs.readdirSync(dir)) {
    let target: string;
    try {
      target = fs.readlinkSync(path.join(dir, fd));
    } catch {
      continue; // closed meanwhile
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m) inodes.add(m[1]);
  }
  return inodes;
}

interface NetSocket {
  table: string;
  local: string;
  state: string;
  inode: string;
}

/** Every TCP and UDP socket of the network namespace, from /proc/net. */
function netSockets(): NetSocket[] {
  const out: NetSocket[] = [];
  for (const table of ['tcp', 'tcp6', 'udp', 'udp6']) {
    let text: string;
    try {
      text = fs.readFileSync(`/proc/net/${table}`, 'utf8');
    } catch {
      continue; // no IPv6 in this kernel
    }
    for (const line of text.trim().split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      out.push({ table, local: f[1], state: f[3], inode: f[9] });
    }
  }
  return out;
}

/** What a process exposes to the network: TCP sockets in LISTEN (state 0A), and any UDP socket. */
function exposed(pid: number | 'self'): NetSocket[] {
  const mine = socketInodes(pid);
  return netSockets().filter((s) => mine.has(s.inode) && (s.table.startsWith('udp') || s.state === '0A'));
}

/** Inodes of every Unix socket on the machine (/proc/net/unix). */
function unixInodes(): Set<string> {
  return new Set(
    fs
      .readFileSync('/proc/net/unix', 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/)[6]),
  );
}

/** Unix sockets of a process, by path (/proc/net/unix), to show the scan sees its sockets at all. */
function unixSocketPaths(pid: number | 'self'): string[] {
  const mine = socketInodes(pid);
  return fs
    .readFileSync('/proc/net/unix', 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => mine.has(f[6]) && f[7] !== undefined)
    .map((f) => f[7]);
}

test('Invariant (control): the network scan finds a TCP listener and a UDP socket of this process when there is one', async () => {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const udp = dgram.createSocket('udp4');
  await new Promise<void>((r) => udp.bind(0, '127.0.0.1', () => r()));
  try {
    const found = exposed('self');
    assert.ok(
      found.some((s) => s.table === 'tcp' && s.state === '0A'),
      JSON.stringify(found),
    );
    assert.ok(
      found.some((s) => s.table === 'udp'),
      JSON.stringify(found),
    );
  } finally {
    udp.close();
    await new Promise<void>((r) => server.close(() => r()));
  }
  assert.deepEqual(exposed('self'), [], 'and nothing once they are closed');
});

test('Invariant: while an engine is connected to the daemon socket and a leader election runs (a leader and a follower), this process listens on no TCP port and holds no UDP socket', async () => {
  const dir = tempDir('cgr-sec-');
  const d = await miniDaemon(dir);
  const electionDir = path.join(dir, 'election');
  // The harness's engine (the shipped options: only its sockets are looked at) on the mini daemon.
  const h = await makeHarness({
    dir,
    start: false,
    connect: () => (listener) =>
      connectDaemon({ kind: 'socket', path: d.socketPath }, listener, { clientVersion: 'sec' }),
  });
  const { engine, decisions } = h;
  const leader = new LeaderElection({ dir: electionDir, name: 'sec-test' });
  const follower = new LeaderElection({ dir: electionDir, name: 'sec-test' });
  try {
    await engine.start();
    await until(
      `the engine to connect: ${JSON.stringify(decisions)}`,
      () => engine.connectionState().kind === 'connected',
    );
    await leader.start();
    await follower.start();
    assert.equal(leader.role, 'leader');
    assert.equal(follower.role, 'follower');
    // The scan sees this process's sockets: the daemon's and the election's, all Unix sockets.
    const paths = unixSocketPaths('self');
    assert.ok(paths.includes(d.socketPath), `daemon socket among ${JSON.stringify(paths)}`);
    assert.ok(
      paths.some((p) => p.startsWith(`${electionDir}${path.sep}`)),
      `election socket among ${JSON.stringify(paths)}`,
    );
    assert.deepEqual(exposed('self'), []);
  } finally {
    await follower.stop();
    await leader.stop();
    await h.cleanup();
    await d.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('Invariant: the runner, connected to the daemon socket, listens on no TCP port and holds no UDP socket; and a corrupt state file it finds is reported on its output and kept aside', async () => {
  const dir = tempDir('cgr-sec-');
  const d = await miniDaemon(dir);
  const state = path.join(dir, 'state.json');
  fs.writeFileSync(state, '{"version": 1, "watches": {'); // truncated
  const runner = new RunnerProcess(['--socket', d.socketPath, '--state', state]);
  try {
    await runner.connected(20_000);
    const pid = runner.child.pid!;
    const sockets = socketInodes(pid);
    assert.ok(sockets.size > 0, 'the runner holds its connection to the daemon');
    assert.ok(d.connections >= 1);
    assert.deepEqual(exposed(pid), []);
    // Stronger: every socket the runner holds is a Unix socket (its daemon connection, its stdio).
    const unix = unixInodes();
    assert.deepEqual(
      [...sockets].filter((i) => !unix.has(i)),
      [],
      'a socket of the runner that is not a Unix socket',
    );
    const warning = runner.decisions.find((x) => x.type === 'warning' && String(x.message).includes(state));
    assert.ok(warning, runner.transcript());
    assert.match(
      String(warning.message),
      /^state file .* was unusable \(invalid JSON: .*\); kept aside as .*state\.json\.corrupt-[0-9TZ-]+; starting clean$/,
    );
    const kept = fs.readdirSync(dir).filter((n) => n.startsWith('state.json.corrupt-'));
    assert.equal(kept.length, 1);
    assert.equal(fs.readFileSync(path.join(dir, kept[0]), 'utf8'), '{"version": 1, "watches": {');
    assert.equal(await runner.stop(), 0, runner.transcript());
  } finally {
    await runner.kill();
    await d.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---- 5. the leader election is private ----------------------------------------------------------

test('Invariant: the election directory is created 0700 and its socket is 0600, whatever the umask; a directory writable by group or others is refused with a clear message', async () => {
  const parent = tempDir('cgr-sec-');
  const oldUmask = process.umask(0o000); // the most permissive umask: modes must not depend on it
  let election: LeaderElection | undefined;
  try {
    const dir = path.join(parent, 'fresh', 'election');
    election = new LeaderElection({ dir, name: 'private-test' });
    await election.start();
    process.umask(oldUmask);
    assert.equal(election.role, 'leader');
    const dst = fs.statSync(dir);
    assert.equal(dst.mode & 0o7777, 0o700, `directory mode ${(dst.mode & 0o7777).toString(8)}`);
    const sst = fs.statSync(election.socketPath!);
    assert.ok(sst.isSocket());
    assert.equal(sst.mode & 0o7777, 0o600, `socket mode ${(sst.mode & 0o7777).toString(8)}`);
    assert.equal(sst.uid, process.getuid!());
    await election.stop();
    election = undefined;

    for (const mode of [0o770, 0o707, 0o777, 0o1777]) {
      const bad = tempDir('cgr-sec-', { mode });
      try {
        await assert.rejects(
          new LeaderElection({ dir: bad, name: 'x' }).start(),
          new RegExp(
            `leader election: refusing directory ${bad}: it is writable by group or others \\(mode 0${mode.toString(8)}\\); use a private directory \\(chmod 700 `,
          ),
        );
        assert.deepEqual(fs.readdirSync(bad), [], 'no socket was made there');
      } finally {
        fs.rmSync(bad, { recursive: true, force: true });
      }
    }
  } finally {
    process.umask(oldUmask);
    await election?.stop();
    fs.rmSync(parent, { recursive: true, force: true });
  }
});

test(
  'Invariant: an election directory that belongs to another user is refused with a clear message',
  { skip: NEEDS_ROOT },
  async () => {
    const foreign = tempDir('cgr-sec-');
    fs.chownSync(foreign, NOBODY, NOBODY);
    try {
      await assert.rejects(
        new LeaderElection({ dir: foreign, name: 'x' }).start(),
        /leader election: refusing directory .*: it is owned by uid 65534, not by you \(uid 0\)/,
      );
    } finally {
      fs.rmSync(foreign, { recursive: true, force: true });
    }
  },
);
