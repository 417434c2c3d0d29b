// Starts a real VS Code (code-server) on 127.0.0.1 for tests, in its own process group and
// with throwaway user data, extensions and XDG data dirs; stop() kills the whole group and
// removes what it created.
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTempDir, removeTempDir, trackGroup, untrackGroup } from './cleanup';
import { assertInstalled, codeServerEntry, node24Path } from './paths';

/** User settings for a quiet, deterministic workbench. */
export const DEFAULT_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  'telemetry.telemetryLevel': 'off',
  'telemetry.feedback.enabled': false,
  'update.mode': 'none',
  'update.showReleaseNotes': false,
  'extensions.autoUpdate': false,
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'chat.disableAIFeatures': true,
  'chat.commandCenter.enabled': false,
  'security.workspace.trust.enabled': false,
  'git.enabled': false,
  'git.autoRepositoryDetection': false,
  'npm.autoDetect': 'off',
  'typescript.tsserver.experimental.enableProjectDiagnostics': false,
  'editor.accessibilitySupport': 'off',
  'accessibility.signalOptions.volume': 0,
  'workbench.editor.enablePreview': false,
  'files.simpleDialog.enable': true,
};

export interface StartOptions {
  /** The workspace folder to open (default: a new empty temp folder, removed by stop()). */
  folder?: string;
  /**
   * The extension to load in development mode. code-server's CLI has no flag for it: it goes
   * into the `payload` of `url`, which the workbench honours only with the smoke-test driver on
   * (see openWorkbench in browser.ts, which turns it on).
   */
  extensionDevelopmentPath?: string;
  /** Added to code-server's environment, which its extension hosts inherit. */
  env?: Record<string, string>;
  /** Merged over DEFAULT_SETTINGS into the user settings.json. */
  settings?: Record<string, unknown>;
  /** Use these instead of temp dirs (not removed by stop()). */
  userDataDir?: string;
  extensionsDir?: string;
  /** Extra code-server arguments (before the folder). */
  args?: string[];
  /**
   * .vsix files installed before the server starts, with code-server's own CLI
   * (`--install-extension`, as a user installs a package) into the extensions dir.
   */
  installVsix?: string[];
  /** Receives every line code-server prints (default: only kept for error messages). */
  onLog?: (line: string) => void;
  /** Milliseconds to wait for /healthz (default 60 s). */
  timeoutMs?: number;
}

export interface CodeServer {
  /** http://127.0.0.1:PORT/?folder=…[&payload=…]: the workbench, ready to open in a browser. */
  url: string;
  /** http://127.0.0.1:PORT */
  origin: string;
  port: number;
  /** code-server's process group id (= its wrapper's pid). */
  pgid: number;
  /** The authority of vscode-remote:// URIs in this server's payloads (`remote` for code-server). */
  remoteAuthority: string;
  folder: string;
  userDataDir: string;
  extensionsDir: string;
  /** The extension hosts' os.tmpdir() (their TMPDIR). */
  tmpDir: string;
  /** A workbench URL with more payload entries (extensionTestsPath, extensionEnvironment, …). */
  workbenchUrl(payload?: Array<[string, string]>): string;
  /** A local path as the vscode-remote:// URI the workbench understands. */
  remoteUri(absPath: string): string;
  /** The last lines code-server printed. */
  logTail(lines?: number): string;
  /** Kills the process group (TERM, then KILL after 5 s) and removes the temp dirs. Idempotent. */
  stop(): Promise<void>;
}

export async function startCodeServer(options: StartOptions = {}): Promise<CodeServer> {
  assertInstalled({ codeServer: true });

  // Short: the extension host's os.tmpdir() is in here, and Unix socket paths max out at 107.
  const tempRoot = makeTempDir('cgr-cs-');
  const userDataDir = options.userDataDir ?? path.join(tempRoot, 'user-data');
  const extensionsDir = options.extensionsDir ?? path.join(tempRoot, 'extensions');
  const folder = path.resolve(options.folder ?? path.join(tempRoot, 'workspace'));
  const xdgData = path.join(tempRoot, 'xdg-data');
  const xdgCache = path.join(tempRoot, 'xdg-cache');
  const tmpDir = path.join(tempRoot, 'tmp');
  const configFile = path.join(tempRoot, 'config.yaml');
  for (const dir of [path.join(userDataDir, 'User'), extensionsDir, folder, xdgData, xdgCache, tmpDir]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  const settingsFile = path.join(userDataDir, 'User', 'settings.json');
  let existing: Record<string, unknown> = {};
  try {
    existing = JSON.parse(fs.readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
  } catch {
    /* none yet */
  }
  fs.writeFileSync(settingsFile, JSON.stringify({ ...DEFAULT_SETTINGS, ...existing, ...options.settings }, null, 2));
  // A code-server window is a remote window: machine-scoped settings (where the Codex daemon
  // is, which executable runs) come from the remote machine's settings, not the user's.
  const machineDir = path.join(userDataDir, 'Machine');
  fs.mkdirSync(machineDir, { recursive: true });
  const machineFile = path.join(machineDir, 'settings.json');
  let machine: Record<string, unknown> = {};
  try {
    machine = JSON.parse(fs.readFileSync(machineFile, 'utf8')) as Record<string, unknown>;
  } catch {
    /* none yet */
  }
  fs.writeFileSync(machineFile, JSON.stringify({ ...machine, ...options.settings }, null, 2));
  // Without --config code-server writes ~/.config/code-server/config.yaml.
  fs.writeFileSync(configFile, 'auth: none\ncert: false\n');

  const args = [
    codeServerEntry(),
    '--config',
    configFile,
    '--auth',
    'none',
    '--bind-addr',
    '127.0.0.1:0', // the kernel picks a free port; code-server prints it
    '--user-data-dir',
    userDataDir,
    '--extensions-dir',
    extensionsDir,
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--disable-getting-started-override',
    ...(options.args ?? []),
    folder,
  ];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // code-server keeps logs and a heartbeat in $XDG_DATA_HOME/code-server, a device id in
    // $XDG_CACHE_HOME/Microsoft; the server and its extension hosts leave vscode-ipc-*.sock,
    // vscode-typescript*/ … in $TMPDIR. None of it belongs in the user's home.
    XDG_DATA_HOME: xdgData,
    XDG_CACHE_HOME: xdgCache,
    TMPDIR: tmpDir,
    ...options.env,
  };
  // Never hand a parent VS Code's IPC hooks to the server.
  for (const key of Object.keys(env)) {
    if (key.startsWith('VSCODE_') && !(options.env && key in options.env)) delete env[key];
  }
  delete env.ELECTRON_RUN_AS_NODE;

  for (const vsix of options.installVsix ?? []) {
    const common = ['--config', configFile, '--user-data-dir', userDataDir, '--extensions-dir', extensionsDir];
    const installed = spawnSync(node24Path(), [codeServerEntry(), ...common, '--install-extension', vsix], {
      cwd: tempRoot,
      env,
      encoding: 'utf8',
      timeout: 180_000,
    });
    if (installed.status !== 0) {
      removeTempDir(tempRoot);
      throw new Error(`code-server --install-extension ${vsix} failed:\n${installed.stdout}${installed.stderr}`);
    }
  }

  const child = spawn(node24Path(), args, {
    cwd: tempRoot,
    env,
    detached: true, // setsid(): its own process group, so stop() can kill extension hosts too
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pgid = child.pid;
  if (pgid === undefined) {
    removeTempDir(tempRoot);
    throw new Error(`could not start code-server (${node24Path()})`);
  }
  trackGroup(pgid);

  const tail: string[] = [];
  let portResolve: (port: number) => void = () => undefined;
  const portPromise = new Promise<number>((resolve) => (portResolve = resolve));
  const onLine = (line: string): void => {
    tail.push(line);
    if (tail.length > 200) tail.shift();
    options.onLog?.(line);
    const m = /HTTP server listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
    if (m) portResolve(Number(m[1]));
  };
  lineReader(child.stdout, onLine);
  lineReader(child.stderr, onLine);
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => resolve(`code-server exited (${signal ?? code}) before it was ready`));
    child.once('error', (err) => resolve(`code-server failed to start: ${err.message}`));
  });

  let stopped = false;
  const logTail = (lines = 40): string => tail.slice(-lines).join('\n');
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await killGroup(pgid);
    untrackGroup(pgid);
    removeTempDir(tempRoot);
  };

  const timeoutMs = options.timeoutMs ?? 60_000;
  try {
    const port = await race(portPromise, exited, timeoutMs, 'code-server did not print its port');
    const origin = `http://127.0.0.1:${port}`;
    await race(waitForHealth(origin, timeoutMs), exited, timeoutMs, 'code-server /healthz did not answer');
    const remoteAuthority = await readRemoteAuthority(`${origin}/?folder=${encodeURIComponent(folder)}`);
    const remoteUri = (absPath: string): string =>
      `vscode-remote://${remoteAuthority}${encodeURI(path.resolve(absPath))}`;
    const workbenchUrl = (payload: Array<[string, string]> = []): string => {
      const all: Array<[string, string]> = [];
      if (options.extensionDevelopmentPath) {
        all.push(['extensionDevelopmentPath', remoteUri(options.extensionDevelopmentPath)]);
      }
      all.push(...payload);
      let url = `${origin}/?folder=${encodeURIComponent(folder)}`;
      if (all.length > 0) url += `&payload=${encodeURIComponent(JSON.stringify(all))}`;
      return url;
    };
    return {
      url: workbenchUrl(),
      origin,
      port,
      pgid,
      remoteAuthority,
      folder,
      userDataDir,
      extensionsDir,
      tmpDir,
      workbenchUrl,
      remoteUri,
      logTail,
      stop,
    };
  } catch (err) {
    await stop();
    const msg = err instanceof Error ? err.message : String(err);
    throw new Error(`${msg}\n--- code-server output ---\n${logTail()}`, { cause: err });
  }
}

/** SIGTERM the group, wait up to 5 s for all of it to go, then SIGKILL. */
export async function killGroup(pgid: number, graceMs = 5000): Promise<void> {
  if (!signalGroup(pgid, 'SIGTERM')) return;
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    await sleep(100);
    if (!signalGroup(pgid, 0)) return;
  }
  signalGroup(pgid, 'SIGKILL');
  const hard = Date.now() + 2000;
  while (Date.now() < hard && signalGroup(pgid, 0)) await sleep(50);
}

/** false when no process of the group is left. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

async function waitForHealth(origin: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(2000) });
      await res.text();
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(200);
  }
  throw new Error(`code-server /healthz did not answer in ${timeoutMs} ms (${last})`);
}

/** The workbench configuration meta tag says which authority vscode-remote:// URIs must use. */
async function readRemoteAuthority(url: string): Promise<string> {
  const html = await (await fetch(url, { signal: AbortSignal.timeout(10_000) })).text();
  const config = parseWorkbenchConfig(html);
  const authority = config?.remoteAuthority;
  if (typeof authority !== 'string' || authority === '') {
    throw new Error("code-server's workbench page has no remoteAuthority in its configuration meta tag");
  }
  return authority;
}

const META_RE = /(<meta id="vscode-workbench-web-configuration" data-settings=")([^"]*)(")/;

export function parseWorkbenchConfig(html: string): Record<string, unknown> | undefined {
  const m = META_RE.exec(html);
  if (!m) return undefined;
  return JSON.parse(htmlUnescape(m[2])) as Record<string, unknown>;
}

/**
 * The workbench page with `developmentOptions.enableSmokeTestDriver` on: only then does a built
 * VS Code honour the `payload` URL parameter (extensionDevelopmentPath, extensionTestsPath, …),
 * and code-server's CLI refuses --enable-smoke-test-driver.
 */
export function enableSmokeTestDriver(html: string): string {
  const m = META_RE.exec(html);
  if (!m) throw new Error('no vscode-workbench-web-configuration meta tag in the workbench page');
  const config = JSON.parse(htmlUnescape(m[2])) as Record<string, unknown>;
  const dev = (config.developmentOptions ?? {}) as Record<string, unknown>;
  config.developmentOptions = { ...dev, enableSmokeTestDriver: true };
  return html.replace(META_RE, (_all, a: string, _b: string, c: string) => a + htmlEscape(JSON.stringify(config)) + c);
}

function htmlUnescape(s: string): string {
  return s.replace(
    /&(quot|amp|lt|gt|#39|#x27);/g,
    (_m, e: string) => ({ quot: '"', amp: '&', lt: '<', gt: '>', '#39': "'", '#x27': "'" })[e] ?? _m,
  );
}

function htmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function lineReader(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (!stream) return;
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buf += chunk;
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      onLine(buf.slice(0, i).replace(/\r$/, ''));
      buf = buf.slice(i + 1);
    }
  });
  stream.on('end', () => {
    if (buf) onLine(buf);
    buf = '';
  });
}

async function race<T>(work: Promise<T>, exited: Promise<string>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      exited.then((msg) => Promise.reject(new Error(msg))),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
