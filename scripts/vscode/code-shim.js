#!/usr/bin/env node
// The executable handed to @vscode/test-electron's runTests({ vscodeExecutablePath }) in place
// of a desktop VS Code (none can be downloaded here): it receives VS Code's test arguments and
// runs the suite in code-server + Chromium. The logic is test/vscode/codeShim.ts (compiled by
// `npm run compile` to out/test/vscode/codeShim.js).
'use strict';
const path = require('node:path');

const compiled = path.join(__dirname, '..', '..', 'out', 'test', 'vscode', 'codeShim.js');
let shim;
try {
  shim = require(compiled);
} catch (err) {
  process.stderr.write(`code-shim: cannot load ${compiled} (run npm run compile): ${err.message}\n`);
  process.exit(2);
}
shim.main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`code-shim: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  },
);
