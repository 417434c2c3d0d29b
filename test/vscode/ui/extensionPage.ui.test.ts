// The package as a user meets it: the .vsix that `npm run package` makes (built from a clean copy
// of the tree) installed into code-server with its own CLI, as `code --install-extension` does;
// the extension activates from the installed copy, and its extension page shows the icon, the
// categories and every image of the README.
//
// VS Code's extension page shows a README image only from an https URL (its sanitizer drops
// relative and data: sources, measured with code-server 4.139.1), so the package points the
// README's media/ images at the registry's URL for this version's own files (scripts/package.mjs).
// This machine has no internet: the browser's requests to that registry URL are answered here
// from the files inside the .vsix, standing in for the registry, and nothing else is answered.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Frame } from 'playwright-core';
import {
  imagesBaseUrl,
  markdownTargets,
  packageFromCleanCopy,
  zipEntries,
  type PackagedVsix,
} from '../../support/packaging';
import { makeTempDir, removeTempDir } from '../cleanup';
import { REPO_ROOT } from '../paths';
import { eventually, Workbench } from './workbench';

interface PageImage {
  src: string;
  complete: boolean;
  width: number;
  alt: string;
}

describe('the .vsix installed as a user installs it', { timeout: 300_000 }, () => {
  let temp: string;
  let packaged: PackagedVsix;
  let wb: Workbench;
  const served: string[] = [];

  before(
    async () => {
      packaged = packageFromCleanCopy();
      temp = makeTempDir('cgr-vsix-');
      const folder = path.join(temp, 'project');
      fs.mkdirSync(folder);
      fs.mkdirSync(path.join(temp, 'codex-home')); // no daemon: the page is what is looked at
      wb = await Workbench.open({
        folder,
        installVsix: [packaged.vsix],
        settings: { 'codexGoalRecovery.codexHome': path.join(temp, 'codex-home') },
      });
      const entries = zipEntries(packaged.vsix);
      const base = imagesBaseUrl();
      await wb.page.context().route(`${base}/**`, async (route) => {
        const rel = route
          .request()
          .url()
          .slice(base.length + 1);
        const body = entries.get(`extension/${rel}`);
        served.push(rel);
        await route.fulfill(body ? { status: 200, contentType: 'image/png', body } : { status: 404 });
      });
    },
    { timeout: 240_000 },
  );

  after(async () => {
    await wb?.close();
    if (temp) removeTempDir(temp);
    packaged?.cleanup();
  });

  it('activates from the installed copy (not a development path)', () =>
    wb.guard('vsix-activates', async () => {
      await wb.waitForStatusBarText('codex-goal-recovery.status', (t) => t !== '');
      const installed = fs.readdirSync(wb.server.extensionsDir).filter((d) => d.startsWith('codex-goal-recovery.'));
      const version = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string })
        .version;
      assert.deepEqual(installed, [`codex-goal-recovery.codex-goal-recovery-${version}`]);
    }));

  it('its extension page shows the icon, the categories and every README image', () =>
    wb.guard('vsix-extension-page', async () => {
      await wb.runCommand('Extensions: Show Installed Extensions');
      const row = wb.page.locator('.extensions-viewlet .monaco-list-row').filter({ hasText: 'Codex Goal Recovery' });
      await row.first().click({ timeout: 30_000 });
      const editor = wb.page.locator('.extension-editor');
      await editor.waitFor({ state: 'visible', timeout: 30_000 });
      const icon = editor.locator('.header .icon-container img.icon');
      await eventually(
        () => icon.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
        (w) => w === 256,
        30_000,
        'the 256×256 PNG icon in the page header',
      );
      const categories = await editor.locator('.categories-container .category').allInnerTexts();
      assert.deepEqual(categories, ['AI', 'Other']);

      const readme = markdownTargets(fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8'));
      const images = await eventually(
        () => readmeImages(wb.page.frames()),
        (imgs) => imgs.length === readme.images.length && imgs.every((i) => i.complete && i.width > 0),
        30_000,
        `the README's ${readme.images.length} image(s) loaded in the extension page`,
      );
      assert.deepEqual(
        images.map((i) => i.src),
        readme.images.map((i) => `${imagesBaseUrl()}/${i}`),
      );
      assert.deepEqual([...new Set(served)].sort(), [...readme.images].sort());
      for (const image of images) assert.ok(image.alt.length > 20, `image ${image.src} has no useful alt text`);
    }));
});

/** The <img> elements of the frame that renders the README (the one that has the README's title). */
async function readmeImages(frames: Frame[]): Promise<PageImage[]> {
  for (const frame of frames) {
    const found = await frame
      .evaluate(() => {
        const doc = (globalThis as unknown as { document: DocLike }).document;
        if (!doc.querySelector('h1')?.textContent?.includes('Codex Goal Recovery')) return null;
        return Array.from(doc.images).map((img) => ({
          src: img.src,
          complete: img.complete,
          width: img.naturalWidth,
          alt: img.alt,
        }));
      })
      .catch(() => null);
    if (found) return found;
  }
  return [];
}

/** The little of a DOM document this reads (no DOM lib in this tsconfig). */
interface DocLike {
  querySelector(sel: string): { textContent: string | null } | null;
  images: ArrayLike<{ src: string; complete: boolean; naturalWidth: number; alt: string }>;
}
