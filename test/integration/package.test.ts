// The .vsix a user installs, built the way `npm run package` builds it (from a clean copy of the
// working tree: vsce runs `vscode:prepublish`, the release build): only what runs and what the
// extension page shows goes in, vsce has nothing to warn about, every image of the README is in
// the package and every link reaches the repository (the manual, docs/, and its headings), the
// icon is a PNG made from media/icon.svg, and the CHANGELOG is Keep a Changelog with the
// manifest's version on top.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  headingSlugs,
  imagesBaseUrl,
  isRelative,
  markdownTargets,
  packageFromCleanCopy,
  pngInfo,
  REPO,
  repositoryUrl,
  zipEntries,
  type PackagedVsix,
} from '../support/packaging';

interface Manifest {
  version: string;
  icon?: string;
  categories?: string[];
  scripts: Record<string, string>;
  capabilities?: { virtualWorkspaces?: boolean };
}

/** Where vsce points the README's relative links: the repository's files (package.json `repository`). */
const REPOSITORY_BLOB = `${repositoryUrl()}/blob/HEAD/`;

/** A relative link of the Markdown file `from` names a file of the repository, and a heading of it. */
function assertResolves(from: string, link: string): void {
  const [file, anchor] = link.split('#');
  const target = file === '' ? from : path.join(path.dirname(from), decodeURI(file));
  assert.ok(fs.existsSync(path.join(REPO, target)), `${from} links to ${link}: no such file`);
  if (anchor === undefined || !target.endsWith('.md')) return;
  const slugs = headingSlugs(fs.readFileSync(path.join(REPO, target), 'utf8'));
  assert.ok(slugs.includes(anchor), `${from} links to ${link}: no such heading (${slugs.join(', ')})`);
}

describe('packaging: the .vsix as npm run package makes it', () => {
  let packaged: PackagedVsix;
  let entries: Map<string, Buffer>;
  const file = (name: string): Buffer => {
    const b = entries.get(`extension/${name}`);
    assert.ok(b, `extension/${name} is not in the .vsix: ${[...entries.keys()].join(', ')}`);
    return b;
  };

  before(() => {
    packaged = packageFromCleanCopy();
    entries = zipEntries(packaged.vsix);
  });
  after(() => packaged?.cleanup());

  it('vsce prints no warning', () => {
    assert.doesNotMatch(packaged.output, /WARNING/, packaged.output);
    assert.match(packaged.output, /Executing prepublish script/, 'vscode:prepublish did not run');
  });

  it('holds exactly the files that run or that the extension page shows', () => {
    // Every file under media/, its subdirectories' too (the walkthrough's steps: media/walkthrough/).
    const media = fs
      .readdirSync(path.join(REPO, 'media'), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => `extension/${path.relative(REPO, path.join(e.parentPath, e.name)).split(path.sep).join('/')}`)
      .sort();
    const names = [...entries.keys()].sort();
    assert.deepEqual(
      names.filter((n) => !n.startsWith('extension/media/')),
      [
        '[Content_Types].xml',
        'extension.vsixmanifest',
        'extension/LICENSE.txt',
        'extension/changelog.md',
        'extension/dist/extension.js',
        'extension/dist/telemetry.js',
        'extension/l10n/bundle.l10n.json',
        'extension/package.json',
        'extension/readme.md',
        ...(fs.existsSync(path.join(REPO, 'package.nls.json')) ? ['extension/package.nls.json'] : []),
      ].sort(),
    );
    assert.deepEqual(
      names.filter((n) => n.startsWith('extension/media/')),
      media,
    );
  });

  it('ships the release bundle: minified, no source map, vscode left external', () => {
    const bundle = file('dist/extension.js').toString('utf8');
    assert.match(bundle, /require\("vscode"\)/);
    assert.doesNotMatch(bundle, /sourceMappingURL/);
    const meanLine = bundle.length / bundle.split('\n').length;
    assert.ok(
      meanLine > 1000,
      `dist/extension.js: lines of ${Math.round(meanLine)} characters on average: not minified`,
    );
    // The target (the activation bench reports it too): zod's full build would add
    // 400 KiB, vscode-jsonrpc 60, ws's server 7.
    assert.ok(bundle.length < 250 * 1024, `dist/extension.js is ${(bundle.length / 1024).toFixed(1)} KiB`);
  });

  it("the README's images are files in the .vsix, shown through the registry's https URL; its links reach the repository", () => {
    // VS Code's extension page (and the Marketplace) show an image only from https: the README's
    // relative media/ images are rewritten to the registry's URL of this version's own files.
    const source = markdownTargets(fs.readFileSync(path.join(REPO, 'README.md'), 'utf8'));
    const shipped = markdownTargets(file('readme.md').toString('utf8'));
    assert.ok(source.images.length >= 1, 'the README shows no image');
    for (const image of source.images) {
      assert.ok(isRelative(image), `README image ${image} is not a path`);
      assert.ok(entries.has(`extension/${image.replace(/^\.\//, '')}`), `README image ${image} is not in the .vsix`);
      assert.match(image, /\.(png|gif|jpe?g)$/i, `${image}: the Marketplace shows no SVG`);
    }
    assert.deepEqual(
      shipped.images,
      source.images.map((i) => `${imagesBaseUrl()}/${i.replace(/^\.\//, '')}`),
    );
    // Links: the manual (docs/) is not in the .vsix; on a registry's page a relative link goes to
    // the repository's copy (vsce rewrites it from package.json `repository`).
    const relative = source.links.filter(isRelative);
    assert.ok(
      relative.some((l) => l.startsWith('docs/')),
      'the README links to no page of the manual',
    );
    for (const link of relative) assertResolves('README.md', link);
    assert.deepEqual(
      shipped.links.filter((l) => l.startsWith(REPOSITORY_BLOB)),
      relative.map((l) => `${REPOSITORY_BLOB}${l.replace(/^\.\//, '')}`),
    );
    assert.deepEqual(shipped.links.filter(isRelative), [], 'a relative link is left in the packaged README');
  });

  it('every page of the manual links only to files and headings that exist', () => {
    const pages = fs.readdirSync(path.join(REPO, 'docs')).filter((f) => f.endsWith('.md'));
    for (const page of ['CONTRIBUTING.md', ...pages.map((p) => `docs/${p}`)])
      for (const link of markdownTargets(fs.readFileSync(path.join(REPO, page), 'utf8')).links.filter(isRelative))
        assertResolves(page, link);
  });

  it('the manifest: a PNG icon, categories AI and Other, the release build before publishing', () => {
    const manifest = JSON.parse(file('package.json').toString('utf8')) as Manifest;
    assert.deepEqual(manifest.categories, ['AI', 'Other']);
    assert.equal(manifest.scripts['vscode:prepublish'], 'node scripts/build.mjs --release');
    assert.equal(manifest.capabilities?.virtualWorkspaces, true);
    const iconPath = manifest.icon ?? '';
    assert.ok(iconPath.endsWith('.png'), `icon: ${iconPath}`);
    const icon = pngInfo(file(iconPath));
    assert.ok(icon.width >= 128 && icon.width === icon.height, `icon is ${icon.width}×${icon.height}`);
    const svg = fs.readFileSync(path.join(REPO, 'media', 'icon.svg'));
    assert.equal(
      icon.text.get('source-sha256'),
      createHash('sha256').update(svg).digest('hex'),
      'media/icon.png was not made from the current media/icon.svg: run `npm run icon`',
    );
  });

  it('the CHANGELOG is Keep a Changelog, dated and versioned, the manifest version first', () => {
    const manifest = JSON.parse(file('package.json').toString('utf8')) as Manifest;
    const changelog = file('changelog.md').toString('utf8');
    const versions = [...changelog.matchAll(/^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$/gm)];
    const headings = changelog.match(/^## .*$/gm) ?? [];
    assert.equal(
      versions.length,
      headings.length,
      `a version heading is not "## [x.y.z] - YYYY-MM-DD": ${headings.join(' | ')}`,
    );
    const released = versions.filter((v) => v[1] !== 'Unreleased');
    assert.equal(released[0]?.[1], manifest.version, 'the newest released section is not the manifest version');
    for (const v of released) assert.ok(v[2], `## [${v[1]}] has no date`);
    const dates = released.map((v) => v[2]);
    assert.deepEqual([...dates].sort().reverse(), dates, 'versions are not newest first');
    const sections = changelog.split(/^## /m).slice(1);
    for (const section of sections) {
      const kinds = (section.match(/^### .*$/gm) ?? []).map((h) => h.slice(4));
      for (const kind of kinds)
        assert.ok(
          ['Added', 'Changed', 'Deprecated', 'Removed', 'Fixed', 'Security'].includes(kind),
          `"### ${kind}" in ## ${section.split('\n')[0]}`,
        );
      assert.equal(new Set(kinds).size, kinds.length, `a heading repeats in ## ${section.split('\n')[0]}`);
    }
  });
});
