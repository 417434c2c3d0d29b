// The house rules of src/, checked (docs/architecture.md, "Layers"): imports only point down the
// layer table; the decision table (src/core/policy.ts) imports nothing that does I/O; no file is
// far above 400 lines. The layer list is test/support/layers.ts (docs/architecture.md's table,
// checked against it by architectureDoc.test.ts).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { FACES, LAYERS, layerOf, ROOT, sources, SRC } from '../support/layers';

const root = ROOT;
const src = SRC;

function imports(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(/^(?:import|export)\s[^;]*?from\s+'([^']+)'/gms)].map((m) => m[1]);
}

test('imports only point down the layer table', () => {
  const wrong: string[] = [];
  for (const file of sources(src)) {
    const layer = layerOf(file);
    if (FACES.has(layer)) continue;
    const allowed = LAYERS[layer];
    if (!allowed) {
      wrong.push(`${path.relative(root, file)}: its layer ${layer} is not in the table`);
      continue;
    }
    for (const spec of imports(file)) {
      if (!spec.startsWith('.')) continue; // packages
      const resolved = path.resolve(path.dirname(file), spec);
      if (!resolved.startsWith(src + path.sep)) continue; // package.json (the version)
      const target = layerOf(resolved);
      if (target !== layer && !allowed.includes(target))
        wrong.push(`${path.relative(root, file)} (${layer}) imports ${spec} (${target})`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('the decision table imports nothing that does I/O', () => {
  const policy = path.join(src, 'core', 'policy.ts');
  const allowed = [
    '../model/watch',
    '../model/queries',
    './classify',
    './live',
    './options',
    './outage',
    './rateLimits',
  ];
  assert.deepEqual(
    imports(policy).filter((s) => !allowed.includes(s)),
    [],
    'policy.ts imports beyond the pure model and its queries, classification, live facts, options, outage rules and rate-limit readings',
  );
  // The usage-limit row (usagePlan.ts) asks the table and the rate-limit readings, nothing else.
  const plan = path.join(src, 'core', 'usagePlan.ts');
  assert.deepEqual(
    imports(plan).filter((s) => !['./options', './policy', './rateLimits'].includes(s)),
    [],
    'usagePlan.ts imports beyond the table, options and rate-limit readings',
  );
  for (const pure of ['classify.ts', 'live.ts', 'options.ts', 'outage.ts', 'rateLimits.ts']) {
    const own = imports(path.join(src, 'core', pure)).filter((s) => !s.startsWith('../model/'));
    for (const spec of own)
      assert.match(
        fs.readFileSync(path.join(src, 'core', pure), 'utf8'),
        new RegExp(`import type [^;]*'${spec}'`),
        `${pure} imports ${spec} for more than types`,
      );
  }
  // Its rows for goals outside the daemon (elsewherePolicy.ts): the same pure imports.
  const outside = path.join(src, 'core', 'elsewherePolicy.ts');
  assert.deepEqual(
    imports(outside).filter((s) => !allowed.includes(s)),
    [],
    'elsewherePolicy.ts imports beyond the pure model, classification, live facts and options',
  );
  for (const file of [policy, outside, plan, ...['rateLimits.ts', 'outage.ts'].map((f) => path.join(src, 'core', f))]) {
    const code = fs
      .readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/\/\/.*$/gm, '');
    assert.doesNotMatch(
      code,
      /\bawait\b|Date\.now\(|performance\.now\(|node:/,
      `${file}: no await, no clock, no node API`,
    );
  }
});

test('no file in src/ is far above 400 lines', () => {
  const long = sources(src)
    .map((file) => ({ file: path.relative(root, file), lines: fs.readFileSync(file, 'utf8').split('\n').length }))
    .filter((f) => f.lines > 440);
  assert.deepEqual(long, []);
});
