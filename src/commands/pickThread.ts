// Which thread a command acts on: the tree row it was run from, or a quick pick.
import * as vscode from 'vscode';
import type { EngineSnapshot } from '../model/snapshot';
import type { Watch } from '../model/watch';
import { heldBy, rowDescription } from '../views/rowText';
import { sortWatches } from '../views/watchTree';

export async function pickThread(
  arg: unknown,
  snapshot: EngineSnapshot,
  title: string,
  applies: (w: Watch) => boolean,
): Promise<Watch | undefined> {
  // A tree row passes its node, `{ threadId }`.
  const fromTree = typeof arg === 'object' && arg !== null ? (arg as { threadId?: unknown }).threadId : undefined;
  if (typeof fromTree === 'string' && fromTree) return snapshot.watches.find((w) => w.threadId === fromTree);
  const candidates = sortWatches(snapshot.watches).filter(applies);
  if (candidates.length === 0) {
    void vscode.window.showInformationMessage(vscode.l10n.t('{0}: no watched thread this applies to.', title));
    return undefined;
  }
  const now = Date.now();
  const picked = await vscode.window.showQuickPick(
    candidates.map((w) => ({
      label: w.title,
      description: rowDescription(w, heldBy(w, snapshot), now),
      detail: w.threadId,
      w,
    })),
    { title, placeHolder: vscode.l10n.t('Choose a watched thread'), matchOnDetail: true },
  );
  return picked?.w;
}
