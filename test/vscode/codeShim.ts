// The "VS Code executable" that @vscode/test-electron's runTests() starts (through
// scripts/vscode/code-shim.js): it takes VS Code's test arguments and runs the tests in a
// real VS Code here — code-server with Debian's Chromium, driven by playwright-core — and exits
// with the code the workbench reports.
//
//   --extensionDevelopmentPath=DIR (repeatable)  --extensionTestsPath=MODULE
//   --user-data-dir=DIR  --extensions-dir=DIR  [FOLDER]     (other VS Code flags are ignored)
//
// The suite's output (lines prefixed with TEST_OUTPUT_PREFIX) goes to stdout as is; other
// extension-host lines go to stdout prefixed with "[extension host] ". A failed or timed-out run
// leaves a screenshot and the workbench logs in test-artifacts/.
import type { Browser, ConsoleMessage } from 'playwright-core';
import { launchChromium, injectSmokeTestDriver, saveLogs, saveServerLogs, screenshot } from './browser';
import { startCodeServer, type CodeServer } from './launch';
import { MissingToolError, assertInstalled } from './paths';
import { EXTENSION_ENV_VAR, EXTHOST_OUTPUT_PREFIX, TEST_OUTPUT_PREFIX } from './protocol';

interface ShimArgs {
  extensionDevelopmentPaths: string[];
  extensionTestsPath?: string;
  userDataDir?: string;
  extensionsDir?: string;
  folder?: string;
  ignored: string[];
}

const VALUE_FLAGS = new Set(['extensionDevelopmentPath', 'extensionTestsPath', 'user-data-dir', 'extensions-dir']);

export function parseArgs(argv: string[]): ShimArgs {
  const out: ShimArgs = { extensionDevelopmentPaths: [], ignored: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) {
      out.folder ??= arg;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    if (!VALUE_FLAGS.has(name)) {
      out.ignored.push(arg);
      continue;
    }
    const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new Error(`${arg} needs a value`);
    if (name === 'extensionDevelopmentPath') out.extensionDevelopmentPaths.push(value);
    else if (name === 'extensionTestsPath') out.extensionTestsPath = value;
    else if (name === 'user-data-dir') out.userDataDir = value;
    else out.extensionsDir = value;
  }
  return out;
}

const verbose = process.env.CGR_VSCODE_VERBOSE === '1';
/** Set by the first line the suite prints. */
let suiteStarted = false;
/** The workbench's recent error messages, shown when the run fails. */
const workbenchErrors: string[] = [];
/** Errors any offline code-server logs: the extension gallery and GitHub sign-in. */
const OFFLINE_NOISE = /ENOTFOUND|open-vsx\.org|authentication provider 'github'/;

export async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (!args.extensionTestsPath || args.extensionDevelopmentPaths.length === 0) {
    process.stderr.write('code-shim: needs --extensionTestsPath and --extensionDevelopmentPath\n');
    return 2;
  }
  try {
    assertInstalled({ codeServer: true, chromium: true, playwright: true });
  } catch (err) {
    process.stderr.write(`code-shim: ${(err as Error).message}\n`);
    return 3;
  }
  if (verbose && args.ignored.length > 0) log(`ignoring ${args.ignored.join(' ')}`);

  const extensionEnvironment = parseEnv(process.env[EXTENSION_ENV_VAR]);
  const timeoutMs = Number(process.env.CGR_VSCODE_TIMEOUT_MS) || 10 * 60_000;
  const startTimeoutMs = Number(process.env.CGR_VSCODE_START_TIMEOUT_MS) || 3 * 60_000;
  suiteStarted = false;
  const started = Date.now();

  let server: CodeServer | undefined;
  let browser: Browser | undefined;
  let cleaningUp: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (cleaningUp ??= (async () => {
      await browser?.close().catch(() => undefined);
      await server?.stop();
    })());
  const onSignal = (signal: NodeJS.Signals): void => {
    log(`${signal}: stopping code-server and Chromium`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('SIGHUP', onSignal);
  // Nobody reads our output any more (the runner died): stop rather than run on unobserved.
  const onStdoutError = (): void => {
    void cleanup().finally(() => process.exit(1));
  };
  process.stdout.on('error', onStdoutError);

  try {
    const [first, ...more] = args.extensionDevelopmentPaths;
    server = await startCodeServer({
      extensionDevelopmentPath: first,
      ...(args.folder !== undefined && { folder: args.folder }),
      ...(args.userDataDir !== undefined && { userDataDir: args.userDataDir }),
      ...(args.extensionsDir !== undefined && { extensionsDir: args.extensionsDir }),
      env: extensionEnvironment,
      ...(verbose && { onLog: (line: string) => log(`[code-server] ${line}`) }),
    });
    log(`code-server ${server.origin} ready in ${Date.now() - started} ms (process group ${server.pgid})`);
    const payload: Array<[string, string]> = [
      ...more.map((p): [string, string] => ['extensionDevelopmentPath', server!.remoteUri(p)]),
      ['extensionTestsPath', server.remoteUri(args.extensionTestsPath)],
    ];
    if (Object.keys(extensionEnvironment).length > 0) {
      payload.push(['extensionEnvironment', JSON.stringify(extensionEnvironment)]);
    }

    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await injectSmokeTestDriver(page, server.origin);

    let resolveExit: (result: { code: number; logs: unknown }) => void = () => undefined;
    const exit = new Promise<{ code: number; logs: unknown }>((resolve) => (resolveExit = resolve));
    await page.exposeFunction('codeAutomationExit', (code: unknown, logs: unknown) => {
      resolveExit({ code: typeof code === 'number' ? code : 1, logs });
    });
    await page.exposeFunction('codeAutomationLog', (level: unknown, message: unknown) => {
      forwardLine(String(message), String(level));
    });
    page.on('console', (msg: ConsoleMessage) => {
      if (verbose) log(`[browser ${msg.type()}] ${msg.text()}`);
    });
    page.on('pageerror', (err) => log(`[browser error] ${err.message}`));
    page.on('crash', () => resolveExit({ code: 1, logs: undefined }));

    await page.goto(server.workbenchUrl(payload), { waitUntil: 'domcontentloaded' });
    let timer: NodeJS.Timeout | undefined;
    let startTimer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<{ code: number; logs: unknown }>((resolve) => {
      timer = setTimeout(() => {
        log(`no result after ${timeoutMs} ms (CGR_VSCODE_TIMEOUT_MS): giving up`);
        resolve({ code: 1, logs: undefined });
      }, timeoutMs);
      // A workbench that never gets to the tests (the extension host did not start, the tests
      // module did not load) fails in minutes, not at the overall timeout.
      startTimer = setTimeout(() => {
        if (suiteStarted) return;
        log(
          `the extension host did not start the tests within ${startTimeoutMs} ms (CGR_VSCODE_START_TIMEOUT_MS); ` +
            'rerun with CGR_VSCODE_VERBOSE=1 to see the workbench log',
        );
        resolve({ code: 1, logs: undefined });
      }, startTimeoutMs);
    });
    const result = await Promise.race([exit, timedOut]);
    clearTimeout(timer);
    clearTimeout(startTimer);
    log(`extension tests finished with code ${result.code} in ${Date.now() - started} ms`);
    if (result.code !== 0) {
      if (workbenchErrors.length > 0 && !verbose) {
        log(`the workbench's last errors:\n  ${workbenchErrors.slice(-5).join('\n').replace(/\n/g, '\n  ')}`);
      }
      const png = await screenshot(page, 'vscode-extension-tests');
      if (png) log(`screenshot: ${png}`);
      const dir = saveLogs('vscode-extension-tests', result.logs as Array<{ relativePath: string; contents: string }>);
      if (dir) log(`workbench logs: ${dir}`);
      const serverLogs = saveServerLogs('vscode-extension-tests', server.userDataDir);
      if (serverLogs) log(`code-server logs (extension host included): ${serverLogs}`);
      if (server) log(`code-server output (last lines):\n${server.logTail(20)}`);
    }
    return result.code;
  } catch (err) {
    if (err instanceof MissingToolError) process.stderr.write(`code-shim: ${err.message}\n`);
    else process.stderr.write(`code-shim: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  } finally {
    await cleanup();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    process.removeListener('SIGHUP', onSignal);
    process.stdout.removeListener('error', onStdoutError);
  }
}

/**
 * The workbench's log, as the smoke-test driver hands it over: test lines print as they are,
 * the extension host's console lines as "[extension host] …", the rest (offline gallery and
 * sign-in noise, mostly) only with CGR_VSCODE_VERBOSE=1.
 */
function forwardLine(message: string, level: string): void {
  if (
    level === 'error' &&
    !message.includes(TEST_OUTPUT_PREFIX) &&
    !message.includes(EXTHOST_OUTPUT_PREFIX) &&
    !OFFLINE_NOISE.test(message)
  ) {
    workbenchErrors.push(message.split('\n').slice(0, 8).join('\n'));
    if (workbenchErrors.length > 10) workbenchErrors.shift();
  }
  for (const line of message.split('\n')) {
    let at = line.indexOf(TEST_OUTPUT_PREFIX);
    if (at >= 0) {
      suiteStarted = true;
      process.stdout.write(line.slice(at + TEST_OUTPUT_PREFIX.length) + '\n');
      continue;
    }
    at = line.indexOf(EXTHOST_OUTPUT_PREFIX);
    if (at >= 0) {
      process.stdout.write(`[extension host] ${line.slice(at + EXTHOST_OUTPUT_PREFIX.length)}\n`);
    } else if (verbose) {
      process.stdout.write(`[workbench ${level}] ${line}\n`);
    }
  }
}

function parseEnv(json: string | undefined): Record<string, string> {
  if (!json) return {};
  const parsed = JSON.parse(json) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]));
}

function log(line: string): void {
  process.stdout.write(`[code-shim] ${line}\n`);
}
