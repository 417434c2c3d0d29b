// Debian's Chromium driven by playwright-core (no browser download), and the one trick that
// makes code-server's built workbench honour the `payload` URL parameter.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { makeTempDir, removeTempDir } from './cleanup';
import { enableSmokeTestDriver } from './launch';
import { ARTIFACTS_DIR, artifactName, assertInstalled, chromiumPath } from './paths';

export const CHROMIUM_ARGS = [
  '--no-sandbox', // CI runs as root
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--no-default-browser-check',
  // Chromium's local-network-access checks can keep the rewritten page from connecting back
  // to 127.0.0.1.
  '--disable-features=LocalNetworkAccessChecks',
];

export async function launchChromium(): Promise<Browser> {
  assertInstalled({ codeServer: false, chromium: true, playwright: true });
  // Loaded here, not at the top, so a missing package gets the message above.
  const { chromium } = await import('playwright-core');
  // Chromium keeps its crash-report database under $XDG_CONFIG_HOME/chromium even with a
  // throwaway profile: point it at a temp dir that goes with the browser.
  const home = makeTempDir('cgr-chromium-');
  try {
    const browser = await chromium.launch({
      executablePath: chromiumPath(),
      headless: true,
      args: CHROMIUM_ARGS,
      env: { ...process.env, XDG_CONFIG_HOME: path.join(home, 'config'), XDG_CACHE_HOME: path.join(home, 'cache') },
      // The test process decides when the browser goes (it closes it in finally blocks).
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
    browser.on('disconnected', () => removeTempDir(home));
    return browser;
  } catch (err) {
    removeTempDir(home);
    throw err;
  }
}

/**
 * Serve the workbench page at `origin`/ with `developmentOptions.enableSmokeTestDriver` on: a
 * built VS Code reads the `payload` URL parameter (extensionDevelopmentPath,
 * extensionTestsPath, extensionEnvironment) only then. Call before page.goto.
 */
export async function injectSmokeTestDriver(page: Page, origin: string): Promise<void> {
  await page.route(
    (url) => url.origin === origin && url.pathname === '/',
    async (route) => {
      const response = await route.fetch();
      const body = await response.text();
      await route.fulfill({ response, body: enableSmokeTestDriver(body) });
    },
  );
}

/** A PNG of the page in test-artifacts/; returns its path (undefined if the page is gone). */
export async function screenshot(page: Page, title: string): Promise<string | undefined> {
  fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const file = artifactName(title, 'png');
  try {
    await page.screenshot({ path: file, timeout: 10_000 });
    return file;
  } catch {
    return undefined;
  }
}

/** Writes the workbench's log files (as handed to codeAutomationExit) under test-artifacts/. */
export function saveLogs(title: string, logs: Array<{ relativePath: string; contents: string }>): string | undefined {
  if (!Array.isArray(logs) || logs.length === 0) return undefined;
  const dir = artifactName(title, 'logs');
  for (const { relativePath, contents } of logs) {
    const file = path.join(dir, relativePath);
    if (!file.startsWith(dir + path.sep)) continue;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, contents);
  }
  return dir;
}

/** Copies code-server's logs (<user-data-dir>/logs: server, remote extension host, …) to test-artifacts/. */
export function saveServerLogs(title: string, userDataDir: string): string | undefined {
  const from = path.join(userDataDir, 'logs');
  if (!fs.existsSync(from)) return undefined;
  const dir = artifactName(`${title}-server`, 'logs');
  fs.cpSync(from, dir, { recursive: true });
  return dir;
}
