/// <reference types="mocha" />
// Smoke test in the real extension host: the extension is there, activates, and every command
// its manifest contributes is registered.
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';

const EXTENSION_ID = 'codex-goal-recovery.codex-goal-recovery';

interface Manifest {
  contributes?: { commands?: Array<{ command: string }> };
}

suite('activation', () => {
  test(`${EXTENSION_ID} is loaded`, () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, `extension ${EXTENSION_ID} not found; loaded: ${vscode.extensions.all.map((e) => e.id).join(', ')}`);
  });

  test('it activates', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
    await ext.activate();
    assert.equal(ext.isActive, true);
  });

  test('every command in contributes.commands is registered', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
    await ext.activate();
    const declared = ((ext.packageJSON as Manifest).contributes?.commands ?? []).map((c) => c.command);
    assert.ok(declared.length > 0, 'package.json contributes no commands');
    const registered = new Set(await vscode.commands.getCommands(true));
    const missing = declared.filter((id) => !registered.has(id));
    assert.deepEqual(missing, [], `declared in package.json but not registered: ${missing.join(', ')}`);
  });
});
