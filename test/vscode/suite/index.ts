// The extension-host test entry: VS Code require()s this module (extensionTestsPath) inside
// the extension host and calls run(). mocha 11 (12 is ESM-only), TDD UI (suite/test), every
// test/vscode/suite/**/*.test.js.
//
// The extension host forwards console output to the workbench with printf-style arguments
// left unformatted, so every line is formatted here (util.format) and prefixed with
// TEST_OUTPUT_PREFIX; the driver (codeShim.ts) prints those lines without the prefix.
import Mocha from 'mocha';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as util from 'node:util';
import * as vscode from 'vscode';
import { EXTHOST_OUTPUT_PREFIX, TEST_OUTPUT_PREFIX } from '../protocol';

type Level = 'log' | 'info' | 'warn' | 'error' | 'debug';
const LEVELS: Level[] = ['log', 'info', 'warn', 'error', 'debug'];
/** The extension host's own console methods (they forward to the workbench). */
const original = Object.fromEntries(LEVELS.map((l) => [l, console[l].bind(console)])) as Record<
  Level,
  (...args: unknown[]) => void
>;

function print(...args: unknown[]): void {
  const text = util.format(...args);
  for (const line of text.split('\n')) original.log.call(console, TEST_OUTPUT_PREFIX + line);
}

/**
 * Routes every other console call in the extension host (the extension's too) through the
 * driver, formatted. The extension host installs its console methods as accessors with a no-op
 * setter (assignment is silently ignored), so they are redefined instead.
 */
function captureConsole(): () => void {
  const saved = new Map<Level, PropertyDescriptor>();
  for (const level of LEVELS) {
    const descriptor = Object.getOwnPropertyDescriptor(console, level);
    if (descriptor && !descriptor.configurable) continue;
    if (descriptor) saved.set(level, descriptor);
    Object.defineProperty(console, level, {
      configurable: true,
      enumerable: true,
      writable: true,
      value: (...args: unknown[]): void => {
        const text = util.format(...args);
        for (const line of text.split('\n')) original.log.call(console, `${EXTHOST_OUTPUT_PREFIX}${level} ${line}`);
      },
    });
  }
  return () => {
    for (const [level, descriptor] of saved) Object.defineProperty(console, level, descriptor);
  };
}

function findTests(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...findTests(full));
    else if (entry.isFile() && entry.name.endsWith('.test.js')) found.push(full);
  }
  return found.sort();
}

export function run(): Promise<void> {
  // Mocha's reporters print through Base.consoleLog (console.log by default).
  Mocha.reporters.Base.consoleLog = print;
  Mocha.reporters.Base.useColors = false;
  const mocha = new Mocha({
    ui: 'tdd',
    reporter: 'spec',
    color: false,
    timeout: Number(process.env.CGR_TEST_TIMEOUT_MS) || 30_000,
    ...(process.env.CGR_TEST_GREP ? { grep: process.env.CGR_TEST_GREP } : {}),
  });
  const files = findTests(__dirname);
  if (files.length === 0) {
    print('no *.test.js under %s', __dirname);
    return Promise.reject(new Error(`no *.test.js under ${__dirname}`));
  }
  for (const file of files) mocha.addFile(file);
  print('extension host: node %s, VS Code %s, %d test file(s)', process.version, vscode.version, files.length);

  const restoreConsole = captureConsole();
  return new Promise<void>((resolve, reject) => {
    try {
      mocha.run((failures) => {
        restoreConsole();
        if (failures > 0) reject(new Error(`${failures} test(s) failed`));
        else resolve();
      });
    } catch (err) {
      restoreConsole();
      print('%s', err instanceof Error ? err.stack : String(err));
      reject(err instanceof Error ? err : new Error(String(err)));
    }
  });
}
