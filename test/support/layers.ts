// The layers of src/ (docs/architecture.md, "Layers"): the one list that test/unit/layers.test.ts
// checks the imports against and test/unit/architectureDoc.test.ts checks the document against.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The repository (this file runs from out/test/support/). */
export const ROOT = path.resolve(__dirname, '../../..');
export const SRC = path.join(ROOT, 'src');

/** Each layer, and the layers it may import from (docs/architecture.md's table). */
export const LAYERS: Record<string, string[]> = {
  util: [],
  version: [],
  model: ['util'],
  protocol: ['util', 'model'],
  store: ['util', 'model', 'protocol'],
  rollout: ['util', 'model', 'protocol'],
  core: ['util', 'model', 'protocol', 'store', 'rollout'],
  leader: ['util', 'model', 'protocol', 'store', 'rollout', 'core', 'version'],
  telemetry: ['util', 'model', 'version'],
  config: ['util', 'core', 'protocol', 'model'],
  host: ['util', 'model', 'protocol', 'store', 'rollout', 'core', 'leader', 'config', 'version', 'telemetry'],
  views: ['util', 'model', 'config'],
  commands: ['util', 'model', 'config', 'host', 'views'],
};
/** The faces import everything below them. */
export const FACES = new Set(['runner', 'demo', 'extension']);

/** A file's layer: its directory under src/, or its name for a file at the top of src/. */
export function layerOf(file: string): string {
  const rel = path.relative(SRC, file).split(path.sep);
  return rel.length === 1 ? rel[0].replace(/\.ts$/, '') : rel[0];
}

/** Every .ts file under `dir`, as absolute paths. */
export function sources(dir: string = SRC): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
    );
}
