// Focused tests for the hardening the security fault suite asked for: a daemon socket writable by
// others is refused, the shutdown path is recognised with doubled slashes, the election socket
// is 0600 whatever the umask, and machine settings ignore workspace values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import Module from 'node:module';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { LeaderElection } from '../../src/leader/election';
import { checkSocketSafety, checkWsUrl } from '../../src/protocol/socketSafety';

test('checkSocketSafety refuses a socket writable by others, and accepts one only its group may write', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-h-'));
  fs.chmodSync(dir, 0o700);
  const sock = path.join(dir, 's.sock');
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(sock, () => r()));
  try {
    fs.chmodSync(sock, 0o666);
    const bad = await checkSocketSafety(sock);
    assert.equal(bad.ok, false);
    assert.equal(
      !bad.ok && bad.reason,
      `refusing Codex daemon socket ${sock}: it is writable by others (mode 0666), so any local user could drive your Codex threads through it; fix it with \`chmod o-w ${fs.realpathSync(sock)}\` or restart the daemon`,
    );
    fs.chmodSync(sock, 0o660);
    assert.equal((await checkSocketSafety(sock)).ok, true);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('checkWsUrl: the shutdown path is refused with doubled or trailing slashes too', () => {
  for (const url of ['ws://127.0.0.1:1//daemon//shutdown', 'ws://127.0.0.1:1/daemon///shutdown//']) {
    const r = checkWsUrl(url);
    assert.match(!r.ok ? r.reason : '', /would stop the daemon/, url);
  }
  assert.deepEqual(checkWsUrl('ws://127.0.0.1:1//daemon/shutdown-not'), { ok: true });
});

test('the election socket is 0600 even under umask 0', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-h-'));
  fs.chmodSync(dir, 0o700);
  const old = process.umask(0);
  const e = new LeaderElection({ dir, name: 'umask' });
  try {
    await e.start();
    process.umask(old);
    assert.equal(fs.statSync(e.socketPath!).mode & 0o777, 0o600);
  } finally {
    process.umask(old);
    await e.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('readSettings: codexPath, codexHome, socketPath and the telemetry settings ignore workspace and folder values', () => {
  const mod = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = mod._load;
  mod._load = function (request: string, ...rest: unknown[]) {
    return request === 'vscode' ? { workspace: {} } : load.call(this, request, ...rest);
  };
  let settings: typeof import('../../src/config/settings');
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded now, under the patched loader
    settings = require('../../src/config/settings') as typeof import('../../src/config/settings');
  } finally {
    mod._load = load;
  }
  // A workspace must not choose what runs, which socket is trusted, nor where this machine's decisions are sent.
  const workspace: Record<string, unknown> = {
    codexHome: '/w/home',
    socketPath: '/w/s.sock',
    codexPath: '/w/codex',
    'telemetry.otlpEndpoint': 'http://collector.example:4318',
    'telemetry.useCodexOtelConfig': true,
  };
  const defaults: Record<string, unknown> = { codexPath: 'codex', 'telemetry.useCodexOtelConfig': false };
  const config = {
    get: <T>(key: string, fallback?: T) => (workspace[key] ?? fallback) as T,
    inspect: (key: string) => ({
      key,
      defaultValue: key in defaults ? defaults[key] : '',
      workspaceValue: workspace[key],
      workspaceFolderValue: workspace[key],
    }),
  } as unknown as import('vscode').WorkspaceConfiguration;
  const s = settings.readSettings(config, { HOME: '/home/u' });
  assert.deepEqual(
    [s.codexHome, s.socketPath, s.codexPath],
    ['/home/u/.codex', '/home/u/.codex/app-server-control/app-server-control.sock', 'codex'],
  );
  assert.deepEqual(s.telemetry, { otlpEndpoint: '', useCodexOtelConfig: false });
});
