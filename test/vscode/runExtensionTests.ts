// The extension-host suite: `node out/test/vscode/runExtensionTests.js` (npm run test:vscode).
// Runs test/vscode/suite/ inside a real VS Code extension host with this repository loaded as
// the development extension, through @vscode/test-electron's runTests. No desktop VS Code can
// be downloaded here, so the "executable" is scripts/vscode/code-shim.js, which runs the same
// arguments in code-server + Chromium (.ci/install-vscode.sh installs both).
//
// Environment:
//   CGR_EXTENSION_PATH     the extension to load (default: the repository root)
//   CGR_TEST_GREP          only tests whose full title matches this regular expression
//   CGR_VSCODE_TIMEOUT_MS  give up after this long (default 10 minutes)
//   CGR_VSCODE_START_TIMEOUT_MS  give up if the suite has printed nothing by then (default 3 min)
//   CGR_VSCODE_VERBOSE=1   also print code-server's output, the browser console and every
//                          extension-host log line
import { runTests, TestRunFailedError } from '@vscode/test-electron';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTempDir, removeTempDir } from './cleanup';
import { MissingToolError, REPO_ROOT, assertInstalled } from './paths';
import { EXTENSION_ENV_VAR } from './protocol';

export const SHIM = path.join(REPO_ROOT, 'scripts', 'vscode', 'code-shim.js');

async function main(): Promise<number> {
  assertInstalled({ codeServer: true, chromium: true, playwright: true });
  const extensionDevelopmentPath = path.resolve(process.env.CGR_EXTENSION_PATH || REPO_ROOT);
  const extensionTestsPath = path.join(__dirname, 'suite', 'index');
  const manifest = path.join(extensionDevelopmentPath, 'package.json');
  const main = (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { main?: string }).main;
  if (main && !fs.existsSync(path.resolve(extensionDevelopmentPath, main))) {
    throw new Error(`the extension's main ${main} does not exist: build it first (npm run build)`);
  }
  // git may not keep the executable bit (and runTests spawns the shim without a shell).
  fs.chmodSync(SHIM, 0o755);

  const temp = makeTempDir('cgr-vscode-tests-');
  const workspace = path.join(temp, 'workspace');
  fs.mkdirSync(workspace);
  // `autoArm: true`, the shipped default, set explicitly: a fresh profile observes until a person
  // chooses (docs/first-run.md), and the suites watch goals armed at first sight. In the user's
  // settings and the remote machine's (where a code-server window reads machine-scoped settings);
  // the code-server launch merges its own over them.
  const userData = path.join(temp, 'user-data');
  for (const dir of ['User', 'Machine']) {
    fs.mkdirSync(path.join(userData, dir), { recursive: true });
    fs.writeFileSync(path.join(userData, dir, 'settings.json'), JSON.stringify({ 'codexGoalRecovery.autoArm': true }));
  }
  // What the tests see in process.env inside the extension host.
  const extensionEnv: Record<string, string> = {
    CGR_VSCODE_TEST: '1',
    CGR_TEST_WORKSPACE: workspace,
    ...(process.env.CGR_TEST_GREP ? { CGR_TEST_GREP: process.env.CGR_TEST_GREP } : {}),
  };
  try {
    await runTests({
      vscodeExecutablePath: SHIM,
      extensionDevelopmentPath,
      extensionTestsPath,
      extensionTestsEnv: { ...extensionEnv, [EXTENSION_ENV_VAR]: JSON.stringify(extensionEnv) },
      launchArgs: [workspace, `--user-data-dir=${userData}`, `--extensions-dir=${path.join(temp, 'extensions')}`],
    });
    return 0;
  } catch (err) {
    if (err instanceof TestRunFailedError) return 1; // the shim has said why
    throw err;
  } finally {
    removeTempDir(temp);
  }
}

// If our reader goes away (`| head`), keep going so the run still cleans up after itself.
process.stdout.on('error', () => undefined);

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof MissingToolError) console.error(`test:vscode: ${err.message}`);
    else console.error('test:vscode:', err);
    process.exitCode = 1;
  },
);
