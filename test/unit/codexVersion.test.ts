// The daemon's Codex version from `initialize`'s userAgent, the warning outside the tested range,
// and the tested range itself: it is the two Codex builds package.json installs (the pinned
// `@openai/codex` and the `codex-latest` alias), so the range and the installs cannot drift apart.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { codexBuilds } from '../../src/demo/codexBinary';
import { compareVersions, daemonVersion, TESTED_CODEX, untestedVersionWarning } from '../../src/model/codexVersion';

const root = path.resolve(__dirname, '../../..');

describe('daemonVersion', () => {
  // Measured: the shared daemon (originator "watcher") and `codex app-server` over stdio, whose
  // originator is the client's name (here this product's), on 0.169.0 and 0.171.0; and the
  // shape of the TUI's (originator codex_cli_rs; the part after the version varies by machine).
  const measured: [string, string][] = [
    ['watcher/0.169.0 (Debian 12.0.0; x86_64) xterm (watcher; 0.0.0)', '0.169.0'],
    ['codex-goal-recovery/0.169.0 (Debian 12.0.0; x86_64) xterm (codex-goal-recovery; 0.1.0)', '0.169.0'],
    ['codex-goal-recovery/0.171.0 (Debian 12.0.0; x86_64) xterm (codex-goal-recovery; 0.1.0)', '0.171.0'],
    ['codex_cli_rs/0.171.0 (Ubuntu 24.4.0; x86_64) xterm', '0.171.0'],
  ];
  for (const [userAgent, version] of measured)
    it(`reads ${version} from "${userAgent}"`, () => assert.equal(daemonVersion(userAgent), version));

  it('keeps a pre-release suffix', () => {
    assert.equal(daemonVersion('codex_cli_rs/0.172.0-alpha.3 (Debian 12.0.0; x86_64)'), '0.172.0-alpha.3');
  });

  it('garbage is null', () => {
    for (const ua of [
      '',
      '   ',
      'codex',
      'codex/',
      'codex/latest (Debian)',
      'mini/1',
      '/0.169.0',
      '0.169.0',
      'a b/0.1.0',
    ])
      assert.equal(daemonVersion(ua), null, JSON.stringify(ua));
  });
});

describe('untestedVersionWarning', () => {
  it('is null inside the tested range, ends included', () => {
    assert.equal(untestedVersionWarning(TESTED_CODEX.oldest), null);
    assert.equal(untestedVersionWarning(TESTED_CODEX.newest), null);
    assert.equal(untestedVersionWarning('0.170.0'), null);
  });

  it('warns below the range: update Codex', () => {
    assert.match(
      untestedVersionWarning('0.168.9') ?? '',
      /0\.168\.9 is older than the tested 0\.169\.0–0\.171\.0.*update/,
    );
    assert.match(
      untestedVersionWarning('0.99.0') ?? '',
      /older/,
      '0.99 is older than 0.169 (numeric, not text, order)',
    );
  });

  it('warns above the range: report anything odd', () => {
    assert.match(untestedVersionWarning('0.172.0') ?? '', /0\.172\.0 is newer than the tested 0\.169\.0–0\.171\.0/);
    assert.match(untestedVersionWarning('1.0.0') ?? '', /newer/);
  });

  it('warns when the daemon did not say its version', () => {
    assert.match(untestedVersionWarning(null) ?? '', /did not say its Codex version.*0\.169\.0–0\.171\.0/);
  });
});

describe('the tested range is what package.json installs', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  };

  it('the pinned @openai/codex is the oldest, the codex-latest alias the newest (exact versions)', () => {
    const pinned = pkg.devDependencies['@openai/codex'];
    const alias = /^npm:@openai\/codex@(.+)$/.exec(pkg.devDependencies['codex-latest'] ?? '')?.[1];
    assert.match(pinned, /^\d+\.\d+\.\d+$/, 'pinned exactly, not a range');
    assert.match(alias ?? '', /^\d+\.\d+\.\d+$/, 'codex-latest is the alias npm:@openai/codex@<exact version>');
    assert.deepEqual({ oldest: pinned, newest: alias }, { ...TESTED_CODEX });
    assert.ok(compareVersions(TESTED_CODEX.oldest, TESTED_CODEX.newest) <= 0, 'oldest is not newer than newest');
  });

  it('and node_modules holds exactly those builds', () => {
    assert.deepEqual(
      codexBuilds().map((b) => `${b.name} ${b.version}`),
      [`pinned ${TESTED_CODEX.oldest}`, `latest ${TESTED_CODEX.newest}`],
    );
  });
});
