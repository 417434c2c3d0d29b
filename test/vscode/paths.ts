// Where the headless VS Code pieces live (installed by .ci/install-vscode.sh), and a loud,
// actionable error when they are not there.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** The repository root (this file runs from out/test/vscode/). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');

/** Screenshots and logs of failed runs (git-ignored). */
export const ARTIFACTS_DIR = path.join(REPO_ROOT, 'test-artifacts');

export const CODE_SERVER_VERSION = '4.139.1';
export const NODE24_VERSION = '24.22.3';

const INSTALL_HINT = 'run .ci/install-vscode.sh (needs apt and the npm registry; about 3 minutes the first time)';

export function cacheDir(): string {
  return process.env.CODEX_GOAL_RECOVERY_CACHE || path.join(os.homedir(), '.cache', 'codex-goal-recovery');
}

/** The Node 24 that code-server 4.139 insists on (the system Node 20 is refused). */
export function node24Path(): string {
  return process.env.CODE_SERVER_NODE || path.join(cacheDir(), 'node24', 'bin', 'node');
}

export function codeServerEntry(): string {
  return (
    process.env.CODE_SERVER_ENTRY ||
    path.join(cacheDir(), 'code-server', 'node_modules', 'code-server', 'out', 'node', 'entry.js')
  );
}

export function chromiumPath(): string {
  return process.env.CHROMIUM_PATH || '/usr/bin/chromium';
}

export class MissingToolError extends Error {
  override name = 'MissingToolError';
}

/** Throws a MissingToolError naming every missing piece and the command that installs it. */
export function assertInstalled(what: { codeServer?: boolean; chromium?: boolean; playwright?: boolean }): void {
  const missing: string[] = [];
  if (what.codeServer !== false) {
    if (!isExecutable(node24Path())) missing.push(`Node ${NODE24_VERSION} for code-server (${node24Path()})`);
    if (!fs.existsSync(codeServerEntry())) missing.push(`code-server ${CODE_SERVER_VERSION} (${codeServerEntry()})`);
  }
  if (what.chromium && !isExecutable(chromiumPath())) missing.push(`Chromium (${chromiumPath()})`);
  if (what.playwright) {
    try {
      require.resolve('playwright-core');
    } catch {
      missing.push('the npm package playwright-core (npm ci)');
    }
  }
  if (missing.length > 0) {
    throw new MissingToolError(
      `A headless VS Code needs what is not installed here:\n  - ${missing.join('\n  - ')}\n` +
        `To install it: ${INSTALL_HINT}.`,
    );
  }
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** A file name safe for test-artifacts/. */
export function artifactName(title: string, ext: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const slug =
    title
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 80) || 'run';
  return path.join(ARTIFACTS_DIR, `${slug}-${stamp}.${ext}`);
}
