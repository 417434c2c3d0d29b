// A person's view of VS Code for UI tests: code-server + Debian's Chromium through
// playwright-core. Workbench.open() starts both (optionally with an extension loaded in
// development mode), and the helpers do what a person does: open an activity-bar container,
// read a view's tree rows, read a status-bar item, run a command by title through F1, take
// a screenshot. Everything lands in test-artifacts/ (git-ignored).
import type { Browser, Locator, Page } from 'playwright-core';
import { guardProcess } from '../cleanup';
import { extensionLogTails } from '../exthost';
import { injectSmokeTestDriver, launchChromium, screenshot as takeScreenshot } from '../browser';
import { startCodeServer, type CodeServer } from '../launch';
import { assertInstalled } from '../paths';

export interface WorkbenchOptions {
  /** An extension to load in development mode (e.g. REPO_ROOT; its `main` must be built). */
  extensionDevelopmentPath?: string;
  /** The folder to open (default: an empty temp folder). */
  folder?: string;
  /** Added to the environment of code-server and its extension host. */
  env?: Record<string, string>;
  /** Merged into the user settings.json. */
  settings?: Record<string, unknown>;
  viewport?: { width: number; height: number };
  /** How long to wait for the workbench (default 90 s). */
  timeoutMs?: number;
  /** Extra code-server arguments (e.g. `--reconnection-grace-time 1`). */
  args?: string[];
  /** .vsix files to install (as a user does) before the server starts. */
  installVsix?: string[];
}

export interface TreeRow {
  label: string;
  level: number;
  expanded: boolean | undefined;
  selected: boolean;
}

const verbose = process.env.CGR_VSCODE_VERBOSE === '1';

/** window in a workbench page with the smoke-test driver on. */
interface SmokeWindow {
  driver?: { whenWorkbenchRestored(): Promise<void> };
}

export class Workbench {
  /** What the browser console printed (errors and warnings), for failure messages. */
  readonly consoleLines: string[] = [];

  private constructor(
    readonly server: CodeServer,
    readonly browser: Browser,
    /** The window's page (replaced by reopenCrashed()). */
    public page: Page,
    /** A second window shares the first one's code-server and browser: closing it closes only its page. */
    private readonly owner = true,
  ) {}

  /**
   * Another window on the same code-server and folder: a workbench of its own, with its own
   * extension host (as a second VS Code window has).
   */
  async openWindow(timeoutMs = 90_000): Promise<Workbench> {
    const page = await this.browser.newPage({ viewport: this.page.viewportSize() ?? { width: 1400, height: 900 } });
    const wb = new Workbench(this.server, this.browser, page, false);
    await loadWorkbench(page, this.server, timeoutMs);
    return wb;
  }

  static async open(options: WorkbenchOptions = {}): Promise<Workbench> {
    const timeout = options.timeoutMs ?? 90_000;
    assertInstalled({ codeServer: true, chromium: true, playwright: true });
    guardProcess();
    const server = await startCodeServer({
      ...(options.folder !== undefined && { folder: options.folder }),
      ...(options.extensionDevelopmentPath !== undefined && {
        extensionDevelopmentPath: options.extensionDevelopmentPath,
      }),
      ...(options.env !== undefined && { env: options.env }),
      ...(options.settings !== undefined && { settings: options.settings }),
      ...(options.args !== undefined && { args: options.args }),
      ...(options.installVsix !== undefined && { installVsix: options.installVsix }),
      ...(verbose && { onLog: (line: string) => console.log(`[code-server] ${line}`) }),
    });
    let browser: Browser | undefined;
    try {
      browser = await launchChromium();
      // A context of its own (not browser.newPage()'s): reopenCrashed() opens a page in it again.
      const context = await browser.newContext({ viewport: options.viewport ?? { width: 1400, height: 900 } });
      const page = await context.newPage();
      const wb = new Workbench(server, browser, page);
      page.on('console', (msg) => {
        const line = `[browser ${msg.type()}] ${msg.text()}`;
        if (verbose) console.log(line);
        if (msg.type() === 'error' || msg.type() === 'warning') {
          wb.consoleLines.push(line);
          if (wb.consoleLines.length > 100) wb.consoleLines.shift();
        }
      });
      page.on('pageerror', (err) => wb.consoleLines.push(`[page error] ${err.message}`));
      await loadWorkbench(page, server, timeout);
      return wb;
    } catch (err) {
      if (browser) {
        const pages = browser.contexts().flatMap((c) => c.pages());
        if (pages[0]) await takeScreenshot(pages[0], 'workbench-open-failed');
      }
      await browser?.close().catch(() => undefined);
      await server.stop();
      throw err;
    }
  }

  /** Reloads the window (a new extension host), waiting until the workbench is back. */
  async reload(timeoutMs = 90_000): Promise<void> {
    await this.page.evaluate(() => (globalThis as unknown as { location: { reload(): void } }).location.reload());
    await this.page.waitForLoadState('domcontentloaded', { timeout: timeoutMs });
    await this.page.waitForFunction(
      () => typeof (globalThis as unknown as SmokeWindow).driver?.whenWorkbenchRestored === 'function',
      null,
      { timeout: timeoutMs },
    );
    await this.page.evaluate(() => (globalThis as unknown as SmokeWindow).driver!.whenWorkbenchRestored());
    await this.page.locator('.monaco-workbench .part.statusbar').waitFor({ state: 'visible', timeout: timeoutMs });
  }

  /**
   * After the window's renderer crashed (CDP Page.crash): opens the workbench again in a new page
   * of the same browser profile (its storage, IndexedDB included), as a person reopens a window.
   */
  async reopenCrashed(timeoutMs = 90_000): Promise<void> {
    const crashed = this.page;
    const page = await crashed.context().newPage();
    await crashed.close().catch(() => undefined);
    this.page = page;
    await loadWorkbench(page, this.server, timeoutMs);
  }

  /** Closes this window only (its page), as a person closes one VS Code window of several. */
  async closeWindow(): Promise<void> {
    await this.page.close().catch(() => undefined);
  }

  /** Closes the browser and stops code-server (the whole process group). */
  async close(): Promise<void> {
    if (!this.owner) return this.closeWindow();
    await this.browser.close().catch(() => undefined);
    await this.server.stop();
  }

  /**
   * The activity-bar entry whose title is `title` (tooltips add " (Ctrl+Shift+E)", and a badge's
   * description: " - 1 goal needs attention").
   */
  activityBarItem(title: string): Locator {
    const exact = new RegExp(`^${escapeRegExp(title)}( \\(.*\\))?( - .*)?$`);
    return this.page
      .locator('.part.activitybar .action-item')
      .filter({ has: this.page.locator('.action-label').and(this.page.getByLabel(exact)) });
  }

  /**
   * Shows the view container whose activity-bar entry has this title ("Explorer", "Codex Goal
   * Recovery"). Does nothing if it is already showing (a click would hide the side bar).
   */
  async openViewContainer(title: string, timeoutMs = 30_000): Promise<void> {
    const item = this.activityBarItem(title).first();
    await item.waitFor({ state: 'visible', timeout: timeoutMs });
    const checked =
      (await item.getAttribute('aria-checked')) === 'true' ||
      /\bchecked\b/.test((await item.getAttribute('class')) ?? '');
    const sidebarVisible = await this.page.locator('.part.sidebar').isVisible();
    if (!checked || !sidebarVisible) await item.click();
    await this.page
      .locator('.part.sidebar .composite.title')
      .filter({ hasText: new RegExp(`^\\s*${escapeRegExp(title)}`, 'i') })
      .first()
      .waitFor({ state: 'visible', timeout: timeoutMs });
  }

  /**
   * The pane of a view, by the title its header shows (case-insensitive): the manifest's name
   * ("Watched goals"), or the folder's name for the Explorer's folder view. The header is in the
   * DOM even when a lone view merges it into the container's title.
   */
  view(name: string): Locator {
    return this.page.locator('.part.sidebar .pane, .part.panel .pane, .part.auxiliarybar .pane').filter({
      has: this.page.locator(':scope > .pane-header h3.title', {
        hasText: new RegExp(`^\\s*${escapeRegExp(name)}\\s*$`, 'i'),
      }),
    });
  }

  /** Expands a view's pane if it is collapsed; returns its locator. */
  async showView(name: string, timeoutMs = 30_000): Promise<Locator> {
    const pane = this.view(name).first();
    await pane.waitFor({ state: 'attached', timeout: timeoutMs });
    const header = pane.locator(':scope > .pane-header');
    if ((await header.getAttribute('aria-expanded')) === 'false') await header.click();
    return pane;
  }

  /** The tree rows a view shows, top to bottom (their aria labels: what a screen reader says). */
  async treeRows(viewName: string): Promise<string[]> {
    return (await this.treeItems(viewName)).map((r) => r.label);
  }

  async treeItems(viewName: string): Promise<TreeRow[]> {
    const pane = await this.showView(viewName);
    return pane.locator('.monaco-list-row').evaluateAll((rows) =>
      rows
        .map((row) => ({
          top: parseFloat((row as unknown as { style: { top: string } }).style.top || '0'),
          item: {
            label: (row.getAttribute('aria-label') ?? row.textContent ?? '').trim(),
            level: Number(row.getAttribute('aria-level') ?? '1'),
            expanded: row.hasAttribute('aria-expanded') ? row.getAttribute('aria-expanded') === 'true' : undefined,
            selected: row.getAttribute('aria-selected') === 'true',
          },
        }))
        .sort((a, b) => a.top - b.top)
        .map(({ item }) => item),
    );
  }

  /**
   * The messages in this window's notification center (what it notified, shown or not as a toast:
   * in headless Chromium the toasts do not show). Opens the center, reads it, closes it.
   */
  async notificationCenterMessages(): Promise<string[]> {
    await this.runCommand('Notifications: Show Notifications');
    const center = this.page.locator('.notifications-center');
    await center.waitFor({ state: 'visible', timeout: 10_000 });
    const messages = (await center.locator('.notification-list-item-message').allTextContents()).map((t) => t.trim());
    await this.runCommand('Notifications: Hide Notifications');
    return messages;
  }

  /** Waits until the view's rows satisfy `check`; returns them. */
  async waitForTreeRows(viewName: string, check: (rows: string[]) => boolean, timeoutMs = 30_000): Promise<string[]> {
    const where = this.owner ? 'the first window' : 'a window opened after it';
    return eventually(() => this.treeRows(viewName), check, timeoutMs, `rows of view "${viewName}" in ${where}`);
  }

  /** A row of a view by its exact aria label. */
  treeRow(viewName: string, label: string): Locator {
    return this.view(viewName)
      .locator('.monaco-list-row')
      .and(this.page.getByLabel(label, { exact: true }))
      .first();
  }

  /** The text of a view's welcome content (viewsWelcome), '' if it shows none. */
  async viewWelcomeText(viewName: string): Promise<string> {
    const pane = await this.showView(viewName);
    const welcome = pane.locator('.welcome-view-content');
    if ((await welcome.count()) === 0) return '';
    return (await welcome.first().innerText()).trim();
  }

  /**
   * A status-bar item by the id given to createStatusBarItem ('codex-goal-recovery.status'); the
   * workbench prefixes it with the extension id, so the DOM id ends with it. Built-in items have
   * ids like 'status.editor.selection'.
   */
  statusBarItem(id: string): Locator {
    return this.page
      .locator(
        `.part.statusbar .statusbar-item[id="${cssString(id)}"], .part.statusbar .statusbar-item[id$=".${cssString(id)}"]`,
      )
      .first();
  }

  /** The item's visible text (icons are glyphs, not text), trimmed. */
  async statusBarText(id: string, timeoutMs = 30_000): Promise<string> {
    const item = this.statusBarItem(id);
    await item.waitFor({ state: 'attached', timeout: timeoutMs });
    return (await item.innerText()).replace(/\s+/g, ' ').trim();
  }

  /** The item's accessible label (it names icons: "shield Goals: 2 watched"). */
  async statusBarAriaLabel(id: string, timeoutMs = 30_000): Promise<string> {
    const item = this.statusBarItem(id);
    await item.waitFor({ state: 'attached', timeout: timeoutMs });
    const label = item.locator('[aria-label]').first();
    return ((await label.count()) > 0 ? ((await label.getAttribute('aria-label')) ?? '') : '').trim();
  }

  async waitForStatusBarText(id: string, check: (text: string) => boolean, timeoutMs = 30_000): Promise<string> {
    return eventually(
      () => this.statusBarText(id, timeoutMs).catch(() => ''),
      check,
      timeoutMs,
      `status bar item ${id}`,
    );
  }

  async isStatusBarVisible(): Promise<boolean> {
    return this.page.locator('.monaco-workbench .part.statusbar').isVisible();
  }

  /**
   * Runs a command by its title as the command palette shows it ("View: Toggle Status Bar
   * Visibility", "Codex Goal Recovery: Refresh"): F1, type, click the exact match.
   */
  async runCommand(title: string, timeoutMs = 30_000): Promise<void> {
    const widget = this.page.locator('.quick-input-widget');
    const input = widget.locator('.quick-input-box input');
    // The palette closes when a webview (an extension page, a walkthrough's media) takes the focus
    // as it loads, as it does for a person, who presses F1 again: so does this, up to three times.
    for (let attempt = 1; ; attempt++) {
      await this.page.keyboard.press('F1');
      await input.waitFor({ state: 'visible', timeout: timeoutMs });
      try {
        await input.fill(`>${title}`, { timeout: 5_000 });
        break;
      } catch (err) {
        if (attempt >= 3 || (await input.isVisible())) throw err;
      }
    }
    const row = this.quickPickRow(title);
    try {
      await row.waitFor({ state: 'visible', timeout: timeoutMs });
    } catch (err) {
      const shown = await widget.locator('.quick-input-list .monaco-list-row .label-name').allInnerTexts();
      await this.page.keyboard.press('Escape');
      throw new Error(
        `no command titled "${title}" in the command palette (it shows: ${shown.slice(0, 10).join(' | ') || 'nothing'})`,
        { cause: err },
      );
    }
    await row.click();
    // The palette closes, unless the command opens another quick input.
    await widget.waitFor({ state: 'hidden', timeout: 2_000 }).catch(() => undefined);
  }

  /**
   * Chooses the item labelled `label` in the quick pick a command opened, once it shows (a
   * command opens it some time after the palette closes: keys typed before would be lost).
   */
  async pick(label: string, timeoutMs = 30_000): Promise<void> {
    const row = this.quickPickRow(label);
    await row.waitFor({ state: 'visible', timeout: timeoutMs });
    await row.click();
    await this.page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: timeoutMs });
  }

  /** The quick input's row whose label is exactly `label`. */
  private quickPickRow(label: string): Locator {
    return this.page
      .locator('.quick-input-widget .quick-input-list .monaco-list-row')
      .filter({ has: this.page.locator('.label-name', { hasText: new RegExp(`^\\s*${escapeRegExp(label)}\\s*$`) }) })
      .first();
  }

  /**
   * The titles the command palette lists for `query` (F1, type it, read the list, Escape): what a
   * person can run from there now, `when` clauses applied. The list is long enough for one
   * extension's commands (all its rows are rendered).
   */
  async paletteCommands(query: string, timeoutMs = 30_000): Promise<string[]> {
    const widget = this.page.locator('.quick-input-widget');
    await this.page.keyboard.press('F1');
    const input = widget.locator('.quick-input-box input');
    await input.waitFor({ state: 'visible', timeout: timeoutMs });
    await input.fill(`>${query}`);
    // The list settles after the filter runs: wait until two reads agree.
    let last = '';
    let titles: string[] = [];
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 250));
      titles = (await widget.locator('.quick-input-list .monaco-list-row .label-name').allInnerTexts()).map((t) =>
        t.replace(/\s+/g, ' ').trim(),
      );
      const now = titles.join('\n');
      if (now === last && titles.length > 0) break;
      last = now;
    }
    await this.page.keyboard.press('Escape');
    await widget.waitFor({ state: 'hidden', timeout: 2_000 }).catch(() => undefined);
    return titles;
  }

  /** The number on an activity-bar entry's badge ('' when it shows none). */
  async activityBarBadge(title: string): Promise<string> {
    const badge = this.activityBarItem(title).first().locator('.badge .badge-content');
    if ((await badge.count()) === 0 || !(await badge.isVisible())) return '';
    return ((await badge.textContent()) ?? '').trim();
  }

  /** The entry's label, with its badge's tooltip ("Codex Goal Recovery - 1 goal needs attention"). */
  async activityBarLabel(title: string): Promise<string> {
    const item = this.activityBarItem(title).first();
    const label = item.locator('.action-label');
    return ((await label.getAttribute('aria-label')) ?? '').trim();
  }

  /**
   * What the page's clipboard holds (the browser's, which VS Code in the browser writes to):
   * reading it needs the permission, granted here for the workbench's origin.
   */
  async readClipboard(): Promise<string> {
    await this.page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: this.server.origin });
    return this.page.evaluate(() =>
      (
        globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
      ).navigator.clipboard.readText(),
    );
  }

  /** Grants the page the clipboard (before a command writes to it: VS Code in the browser writes through it). */
  async allowClipboard(): Promise<void> {
    await this.page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: this.server.origin });
  }

  /** The side bar's width in CSS pixels. */
  async sidebarWidth(): Promise<number> {
    const box = await this.page.locator('.part.sidebar').boundingBox();
    return box?.width ?? 0;
  }

  /** A PNG of the whole window at `file` (a path of the caller's choosing, e.g. media/). */
  async screenshotTo(file: string): Promise<void> {
    await this.page.screenshot({ path: file, timeout: 10_000 });
  }

  /** A PNG of the whole window in test-artifacts/; returns its path. */
  async screenshot(name: string): Promise<string> {
    const file = await takeScreenshot(this.page, name);
    if (!file) throw new Error(`could not take screenshot ${name}`);
    return file;
  }

  /** Runs `fn`; on failure takes a screenshot named after the test and adds its path to the error. */
  async guard<T>(name: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const file = await takeScreenshot(this.page, `ui-${name}`);
      if (err instanceof Error && file) err.message += `\n  screenshot: ${file}`;
      if (err instanceof Error) err.message += extensionLogTails(this.server.userDataDir, 15);
      if (verbose)
        console.error(`browser console (errors, last lines):\n  ${this.consoleLines.slice(-20).join('\n  ')}`);
      throw err;
    }
  }
}

/** Polls `read` until `check` accepts its value; the last value is in the timeout error. */
/** Opens the workbench in `page` and waits until it is restored and shows its status bar. */
async function loadWorkbench(page: Page, server: CodeServer, timeout: number): Promise<void> {
  // The smoke-test driver makes the workbench honour the payload (the development
  // extension) and gives window.driver.whenWorkbenchRestored().
  await injectSmokeTestDriver(page, server.origin);
  await page.goto(server.url, { waitUntil: 'domcontentloaded', timeout });
  // (No DOM lib in this tsconfig: the page's window is globalThis, typed by hand.)
  await page.waitForFunction(
    () => typeof (globalThis as unknown as SmokeWindow).driver?.whenWorkbenchRestored === 'function',
    null,
    { timeout },
  );
  await page.evaluate(() => (globalThis as unknown as SmokeWindow).driver!.whenWorkbenchRestored());
  await page.locator('.monaco-workbench .part.statusbar').waitFor({ state: 'visible', timeout });
}

export async function eventually<T>(
  read: () => Promise<T>,
  check: (value: T) => boolean,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  let lastError: unknown;
  for (;;) {
    try {
      last = await read();
      if (check(last)) return last;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}; last: ${JSON.stringify(last)}` +
          (lastError instanceof Error ? ` (${lastError.message})` : ''),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function cssString(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
}
