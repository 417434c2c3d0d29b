// The daily Codex check's decision (.github/workflows/codex-latest.yml): does the README's "Works
// with" line name the Codex version npm calls latest? The versions it names are the ones tested
// end to end (the pinned @openai/codex and the codex-latest alias in package.json; test/unit/
// codexLatest.test.ts keeps them equal); a latest it does not name is a Codex users may already
// run that no release of this project was tested against, so the workflow opens or updates its
// issue. How a maintainer adds a version: CONTRIBUTING.md, "A new Codex".
//
//   node scripts/codexLatest.mjs VERSION [README]   exit 0: named; 1: not named (stderr says
//                                                   which are); 2: usage, or no "Works with" line
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

/**
 * The Codex versions the README's "Works with" line names, in its order: the bold versions of
 * the paragraph that starts with "Codex" in the "## Works with" section. Throws when there is no
 * such section, line, or version in it.
 */
export function worksWithVersions(readme) {
  const section = /^## Works with\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(readme)?.[1];
  if (section === undefined) throw new Error('the README has no "## Works with" section');
  const line = section
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .find((p) => p.startsWith('Codex '));
  if (line === undefined) throw new Error('the "Works with" section has no paragraph that starts with "Codex"');
  const versions = [...line.matchAll(/\*\*([^*]+)\*\*/g)].map((m) => m[1]).filter((v) => VERSION.test(v));
  if (versions.length === 0) throw new Error('the "Works with" line names no Codex version in bold');
  return versions;
}

/** Whether the README's "Works with" line names exactly this version (0.171.0 is not 0.171.1). */
export function namesVersion(readme, version) {
  if (!VERSION.test(version)) throw new Error(`not a version: ${JSON.stringify(version)}`);
  return worksWithVersions(readme).includes(version);
}

function main(argv) {
  const [version, readmePath = path.join(ROOT, 'README.md')] = argv;
  if (!version || argv.length > 2) {
    console.error('usage: node scripts/codexLatest.mjs VERSION [README]');
    return 2;
  }
  let named;
  let versions;
  try {
    const readme = fs.readFileSync(readmePath, 'utf8');
    named = namesVersion(readme, version);
    versions = worksWithVersions(readme);
  } catch (e) {
    console.error(`codexLatest: ${e instanceof Error ? e.message : String(e)}`);
    return 2;
  }
  if (named) {
    console.log(`Codex ${version}: the README's "Works with" names it (${versions.join(', ')})`);
    return 0;
  }
  console.error(`Codex ${version}: the README's "Works with" does not name it (it names ${versions.join(', ')})`);
  return 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}
