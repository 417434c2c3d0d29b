// The daily Codex check's decision (scripts/codexLatest.mjs, run by .github/workflows/codex-latest.yml):
// whether the README's "Works with" line names the version npm calls latest. The line names
// exactly the builds the integration suite runs (package.json's pinned @openai/codex and its
// codex-latest alias, which test/unit/codexVersion.test.ts ties to TESTED_CODEX), so "named" means
// "tested end to end". The workflow's issue is opened when the script exits 1, and it must not
// open one when the README could not be read (exit 2 fails the run instead).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { TESTED_CODEX } from '../../src/model/codexVersion';

const root = path.resolve(__dirname, '../../..');
const SCRIPT = path.join(root, 'scripts/codexLatest.mjs');
const README = fs.readFileSync(path.join(root, 'README.md'), 'utf8');

interface CodexLatest {
  worksWithVersions: (readme: string) => string[];
  namesVersion: (readme: string, version: string) => boolean;
}
const load = () => import(SCRIPT) as Promise<CodexLatest>;
const run = (...args: string[]) => spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8', cwd: root });

/** A README with this "Works with" section, between two other sections. */
const readmeWith = (worksWith: string) =>
  `# Title\n\nCodex **9.9.9** is in the intro.\n\n## Works with\n\n${worksWith}\n\n## The manual\n\nCodex **8.8.8**\n`;

describe('the README names the tested Codex builds', () => {
  it('its "Works with" line names the pinned build and the codex-latest alias, in that order', async () => {
    const { worksWithVersions } = await load();
    assert.deepEqual(worksWithVersions(README), [TESTED_CODEX.oldest, TESTED_CODEX.newest]);
  });

  it('the script says so for each, exit 0, and exit 1 for the next version', () => {
    for (const v of [TESTED_CODEX.oldest, TESTED_CODEX.newest]) {
      const r = run(v);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`Codex ${v.replace(/\./g, '\\.')}: the README's "Works with" names it`));
    }
    const [major, minor] = TESTED_CODEX.newest.split('.').map(Number);
    const next = `${major}.${minor + 1}.0`;
    const r = run(next);
    assert.equal(r.status, 1, r.stdout);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      new RegExp(`does not name it \\(it names ${TESTED_CODEX.oldest}, ${TESTED_CODEX.newest}\\)`),
    );
  });
});

describe('namesVersion', () => {
  const readme = readmeWith(
    'Codex **0.169.0** and **0.171.0** (each tested end to end); VS Code **1.100** or later; Node 20 or later.',
  );

  it('names exactly the bold versions of the line', async () => {
    const { namesVersion, worksWithVersions } = await load();
    assert.deepEqual(worksWithVersions(readme), ['0.169.0', '0.171.0']);
    assert.equal(namesVersion(readme, '0.169.0'), true);
    assert.equal(namesVersion(readme, '0.171.0'), true);
  });

  it('not a neighbour, a prefix, a pre-release of it, nor a bold version outside the section', async () => {
    const { namesVersion } = await load();
    for (const v of ['0.170.0', '0.171.1', '0.17.0', '0.1.0', '0.171.0-alpha.1', '9.9.9', '8.8.8', '1.100.0'])
      assert.equal(namesVersion(readme, v), false, v);
  });

  it('a pre-release is named when the line names it', async () => {
    const { namesVersion } = await load();
    const preRelease = readmeWith('Codex **0.172.0-alpha.3** (tested).');
    assert.equal(namesVersion(preRelease, '0.172.0-alpha.3'), true);
    assert.equal(namesVersion(preRelease, '0.172.0'), false, 'the release is not its pre-release');
  });

  it('reads the section when it is the last one', async () => {
    const { worksWithVersions } = await load();
    assert.deepEqual(worksWithVersions('# T\n\n## Works with\n\nCodex **0.180.0**; Node 22.\n'), ['0.180.0']);
  });

  it('a README without the section, the line or a version in it is an error, not "not named"', async () => {
    const { namesVersion } = await load();
    assert.throws(() => namesVersion('# T\n\n## Install\n\nCodex **0.169.0**\n', '0.169.0'), /no "## Works with"/);
    assert.throws(() => namesVersion(readmeWith('VS Code 1.100 or later.'), '0.169.0'), /no paragraph that starts/);
    assert.throws(() => namesVersion(readmeWith('Codex 0.169.0, tested.'), '0.169.0'), /names no Codex version/);
    assert.throws(() => namesVersion(readme, 'latest'), /not a version/);
  });
});

describe('the script', () => {
  it('exit 2, not 1, when it cannot decide: no argument, no such README, no "Works with"', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-codex-latest-'));
    try {
      const noSection = path.join(dir, 'README.md');
      fs.writeFileSync(noSection, '# T\n\nCodex **0.172.0**\n');
      for (const args of [[], ['0.172.0', path.join(dir, 'missing.md')], ['0.172.0', noSection]]) {
        const r = run(...args);
        assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      }
      const named = path.join(dir, 'named.md');
      fs.writeFileSync(named, readmeWith('Codex **0.172.0** (tested).'));
      assert.equal(run('0.172.0', named).status, 0);
      assert.equal(run('0.171.0', named).status, 1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
