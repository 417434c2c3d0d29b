// The CHANGELOG's section for one version, without its heading: the release notes.
//
//   node scripts/changelogSection.mjs 0.4.0     prints the section of `## [0.4.0] - …`
//
// Exits 1, saying so, when the CHANGELOG has no section for that version (a tag pushed before
// its CHANGELOG entry) or the section is empty.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The body of `## [version]`'s section in `changelog`, or null. */
export function changelogSection(changelog, version) {
  const lines = changelog.split('\n');
  const start = lines.findIndex((l) => l.startsWith(`## [${version}]`));
  if (start < 0) return null;
  const end = lines.findIndex((l, i) => i > start && l.startsWith('## '));
  const body = lines
    .slice(start + 1, end < 0 ? undefined : end)
    .join('\n')
    .trim();
  return body === '' ? null : body;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const version = process.argv[2];
  const file = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'CHANGELOG.md');
  const body = version ? changelogSection(fs.readFileSync(file, 'utf8'), version) : null;
  if (body === null) {
    console.error(`CHANGELOG.md has no section for ${version ?? '(no version given)'}`);
    process.exit(1);
  }
  process.stdout.write(`${body}\n`);
}
