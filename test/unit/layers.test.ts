// The house rules of src/, checked (docs/architecture.md, "Layers"): imports only point down the
// layer table, and no file's imports lead back to it (no import circle); the decision table
// (src/core/policy.ts) imports nothing that does I/O; no file is far above 400 lines. The layer
// list is test/support/layers.ts (docs/architecture.md's table, checked by architectureDoc.test.ts).
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

/** The file a relative import names (`./x` is `./x.ts` or `./x/index.ts`), or null: not a file of src/. */
function resolveImport(file: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const base = path.resolve(path.dirname(file), spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')])
    if (candidate.startsWith(src + path.sep) && fs.existsSync(candidate)) return candidate;
  return null;
}

/** A graph's circles: files that reach each other (two or more), or one that imports itself (Tarjan). */
export function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    order.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!order.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, order.get(w)!));
    }
    if (low.get(v) !== order.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!order.has(v)) visit(v);
  return found;
}

test('the circle finder finds a circle, a file that imports itself, and none in a tree', () => {
  const g = (edges: Record<string, string[]>) => new Map(Object.entries(edges));
  assert.deepEqual(circles(g({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] })), [['a', 'b', 'c']]);
  assert.deepEqual(circles(g({ a: ['a'], b: [] })), [['a']]);
  assert.deepEqual(circles(g({ a: ['b', 'c'], b: ['c'], c: [] })), []);
});

test('no import circle among the files of src/ (type imports and re-exports count)', () => {
  const graph = new Map<string, string[]>();
  for (const file of sources(src))
    graph.set(
      path.relative(root, file),
      imports(file).flatMap((spec) => {
        const target = resolveImport(file, spec);
        return target ? [path.relative(root, target)] : [];
      }),
    );
  assert.ok(graph.size > 100 && [...graph.values()].some((to) => to.length > 0), 'the import graph is read');
  assert.deepEqual(circles(graph), []);
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
    './stepRules',
  ];
  assert.deepEqual(
    imports(policy).filter((s) => !allowed.includes(s)),
    [],
    'policy.ts imports beyond the pure model and its queries, classification, live facts, options, outage rules, rate-limit readings and step rules',
  );
  // The usage-limit row (usagePlan.ts) asks the step rules and the rate-limit readings, nothing else.
  const plan = path.join(src, 'core', 'usagePlan.ts');
  assert.deepEqual(
    imports(plan).filter((s) => !['./options', './stepRules', './rateLimits'].includes(s)),
    [],
    'usagePlan.ts imports beyond the step rules, options and rate-limit readings',
  );
  // The pure rule modules import the model, each other, and only types of anything else.
  const pures = ['classify.ts', 'live.ts', 'options.ts', 'outage.ts', 'rateLimits.ts'];
  for (const pure of pures) {
    const own = imports(path.join(src, 'core', pure)).filter(
      (s) => !s.startsWith('../model/') && !pures.includes(`${s.slice(2)}.ts`),
    );
    for (const spec of own)
      assert.match(
        fs.readFileSync(path.join(src, 'core', pure), 'utf8'),
        new RegExp(`import type [^;]*'${spec}'`),
        `${pure} imports ${spec} for more than types`,
      );
  }
  // Its rows for goals outside the daemon (elsewherePolicy.ts): the same pure imports, and the table's own.
  const outside = path.join(src, 'core', 'elsewherePolicy.ts');
  assert.deepEqual(
    imports(outside).filter((s) => !allowed.includes(s) && s !== './policy'),
    [],
    'elsewherePolicy.ts imports beyond the pure model, classification, live facts, options and the table',
  );
  // The rules of a recovery's step (stepRules.ts), below the table: the pure model (the budget's
  // list too), outage rules, options and the backoff curve; never the table, which asks them.
  const step = path.join(src, 'core', 'stepRules.ts');
  assert.deepEqual(
    imports(step).filter(
      (s) =>
        !['../model/budget', '../model/queries', '../model/watch', './backoff', './options', './outage'].includes(s),
    ),
    [],
    'stepRules.ts imports beyond the pure model, outage rules, options and the backoff curve',
  );
  // What a rollout's goal lines mean (markerRules.ts): their type alone.
  const marks = path.join(src, 'core', 'markerRules.ts');
  assert.deepEqual(imports(marks), ['../rollout/markers'], 'markerRules.ts imports beyond the goal lines’ type');
  const pureRules = ['rateLimits.ts', 'outage.ts', 'stepRules.ts', 'markerRules.ts'].map((f) =>
    path.join(src, 'core', f),
  );
  for (const file of [policy, outside, plan, ...pureRules]) {
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

test('no file in src/ is over 400 lines', () => {
  const long = sources(src)
    .map((file) => ({
      file: path.relative(root, file),
      lines: fs.readFileSync(file, 'utf8').trimEnd().split('\n').length,
    }))
    .filter((f) => f.lines > 400);
  assert.deepEqual(long, []);
});
