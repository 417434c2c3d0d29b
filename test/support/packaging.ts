// The .vsix as `npm run package` makes it, built from a clean copy of the working tree (so the
// repository's dist/ is left alone): vsce runs the manifest's `vscode:prepublish` (the release
// build) there, through the `package` script's own scripts/package.mjs. Also readers for the
// .vsix's files, PNG headers and a README's image and link targets.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { inflateRawSync } from 'node:zlib';

export const REPO = path.resolve(__dirname, '..', '..', '..');

/** What never goes into the copy: built output, dependencies (linked instead), VCS, artifacts. */
const NOT_COPIED = new Set(['.git', 'node_modules', 'out', 'dist', 'test-artifacts', 'bench']);

export interface PackagedVsix {
  vsix: string;
  /** Everything vsce printed, both streams. */
  output: string;
  dir: string;
  cleanup(): void;
}

/**
 * Where the packaged README's images point: a registry's URL for this version's own files
 * (scripts/package.mjs rewrites the README's relative `media/…` images to it).
 */
export function imagesBaseUrl(): string {
  const m = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
    name: string;
    publisher: string;
    version: string;
  };
  return `https://open-vsx.org/api/${m.publisher}/${m.name}/${m.version}/file`;
}

/**
 * A copy of the working tree at `dir/src-tree` without built output (dist/ is made again by what
 * runs there), its node_modules a link to the repository's.
 */
export function cleanCopy(dir: string): string {
  const src = path.join(dir, 'src-tree');
  fs.cpSync(REPO, src, {
    recursive: true,
    filter: (from) => {
      const rel = path.relative(REPO, from);
      if (rel === '') return true;
      return !NOT_COPIED.has(rel.split(path.sep)[0]) && !rel.endsWith('.vsix') && !rel.endsWith('.tgz');
    },
  });
  fs.symlinkSync(path.join(REPO, 'node_modules'), path.join(src, 'node_modules'), 'dir');
  return src;
}

export function packageFromCleanCopy(): PackagedVsix {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-package-'));
  const src = cleanCopy(dir);
  const vsix = path.join(dir, 'codex-goal-recovery.vsix');
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  assert.equal(manifest.scripts.package, 'node scripts/package.mjs', 'npm run package changed: follow it here');
  const r = spawnSync(process.execPath, [path.join(src, 'scripts', 'package.mjs'), '--out', vsix], {
    cwd: src,
    encoding: 'utf8',
    timeout: 300_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = `${r.stdout}${r.stderr}`;
  if (r.status !== 0) throw new Error(`vsce package failed (${r.status ?? r.signal}):\n${output}`);
  return { vsix, output, dir: src, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** The entries of a zip file (a .vsix), read from its central directory, with their contents. */
export function zipEntries(file: string): Map<string, Buffer> {
  const buf = fs.readFileSync(file);
  let end = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i--) {
    if (buf.readUInt32LE(i) === 0x06054b50) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new Error(`${file} is not a zip (no end-of-central-directory record)`);
  const count = buf.readUInt16LE(end + 10);
  let at = buf.readUInt32LE(end + 16);
  const entries = new Map<string, Buffer>();
  for (let n = 0; n < count; n++) {
    if (buf.readUInt32LE(at) !== 0x02014b50) throw new Error(`${file}: bad central directory entry ${n}`);
    const method = buf.readUInt16LE(at + 10);
    const compressed = buf.readUInt32LE(at + 20);
    const nameLen = buf.readUInt16LE(at + 28);
    const extraLen = buf.readUInt16LE(at + 30);
    const commentLen = buf.readUInt16LE(at + 32);
    const local = buf.readUInt32LE(at + 42);
    const name = buf.toString('utf8', at + 46, at + 46 + nameLen);
    const dataAt = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const raw = buf.subarray(dataAt, dataAt + compressed);
    if (method !== 0 && method !== 8) throw new Error(`${file}: ${name} uses compression method ${method}`);
    entries.set(name, method === 8 ? inflateRawSync(raw) : Buffer.from(raw));
    at += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

/** Width, height and tEXt chunks of a PNG. */
export function pngInfo(png: Buffer): { width: number; height: number; text: Map<string, string> } {
  if (!png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    throw new Error('not a PNG');
  const text = new Map<string, string>();
  let at = 8;
  let width = 0;
  let height = 0;
  while (at + 8 <= png.length) {
    const len = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
    } else if (type === 'tEXt') {
      const nul = data.indexOf(0);
      text.set(data.toString('latin1', 0, nul), data.toString('latin1', nul + 1));
    } else if (type === 'IEND') break;
    at += 12 + len;
  }
  return { width, height, text };
}

/** The targets of a Markdown file's images and links (not #anchors). */
export function markdownTargets(md: string): { images: string[]; links: string[] } {
  const images: string[] = [];
  const links: string[] = [];
  const withoutCode = md.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  for (const m of withoutCode.matchAll(/(!?)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    (m[1] === '!' ? images : links).push(m[2]);
  }
  for (const m of withoutCode.matchAll(/<img\b[^>]*\bsrc="([^"]+)"/g)) images.push(m[1]);
  return { images, links: links.filter((t) => !t.startsWith('#')) };
}

/** The repository package.json names, as an https URL without `.git` (vsce's base for links). */
export function repositoryUrl(): string {
  const m = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
    repository?: { url?: string };
  };
  const url = m.repository?.url ?? '';
  assert.match(url, /^git\+https:\/\/github\.com\/[^/]+\/[^/]+\.git$/, `package.json repository: ${url}`);
  return url.replace(/^git\+/, '').replace(/\.git$/, '');
}

/** GitHub's anchors of a Markdown file's headings (lower case, punctuation dropped, spaces to -). */
export function headingSlugs(md: string): string[] {
  const withoutCode = md.replace(/```[\s\S]*?```/g, '');
  return [...withoutCode.matchAll(/^#{1,6} (.*)$/gm)].map((m) =>
    m[1]
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-'),
  );
}

/** A link or image target without a scheme: a path. */
export function isRelative(target: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:/i.test(target);
}
