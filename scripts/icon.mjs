// Renders the Marketplace icon, media/icon.png (256×256), from media/icon.svg: the same glyph,
// white on a rounded square, drawn by headless Chromium (the one the UI tests use). The PNG
// carries the SHA-256 of the SVG it came from (a tEXt chunk, "source-sha256"), so a test can
// tell when the SVG changed and the PNG was not made again: run `npm run icon`.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { crc32 } from 'node:zlib';
import { chromium } from 'playwright-core';

const root = path.resolve(import.meta.dirname, '..');
const svgPath = path.join(root, 'media', 'icon.svg');
const pngPath = path.join(root, 'media', 'icon.png');
const SIZE = 256;
const svg = fs.readFileSync(svgPath, 'utf8');
const sourceSha = createHash('sha256').update(svg).digest('hex');

const html = `<!doctype html><html><body style="margin:0;background:transparent">
<div style="width:${SIZE}px;height:${SIZE}px;border-radius:48px;display:flex;align-items:center;
justify-content:center;color:#ffffff;background:linear-gradient(145deg,#1f7a6d,#0e4f63)">
<div style="width:184px;height:184px">${svg.replace('<svg ', '<svg width="184" height="184" ')}</div>
</div></body></html>`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage({ viewport: { width: SIZE, height: SIZE }, deviceScaleFactor: 1 });
  await page.setContent(html);
  const shot = await page.screenshot({ omitBackground: true, clip: { x: 0, y: 0, width: SIZE, height: SIZE } });
  fs.writeFileSync(pngPath, withText(shot, 'source-sha256', sourceSha));
  console.log(`media/icon.png: ${SIZE}×${SIZE}, from media/icon.svg ${sourceSha.slice(0, 12)}…`);
} finally {
  await browser.close();
}

/** The PNG with a tEXt chunk inserted after IHDR (the first chunk, 8 + 25 bytes in). */
function withText(png, key, value) {
  const data = Buffer.concat([Buffer.from(key, 'latin1'), Buffer.from([0]), Buffer.from(value, 'latin1')]);
  const type = Buffer.from('tEXt', 'latin1');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([type, data])) >>> 0);
  const at = 8 + 25;
  return Buffer.concat([png.subarray(0, at), len, type, data, crc, png.subarray(at)]);
}
