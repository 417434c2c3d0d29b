// The baseline for the write-ahead bench: the runner's store as it was before the crash journal,
// every save one whole state written atomically (temp file, fsync, rename, directory fsync), the
// watches that did not change re-serialized from the serializer's cache (the `changed` hint).
import { promises as fsp } from 'node:fs';
import * as nodePath from 'node:path';
import type { PersistedState } from '../../../src/model/watch';
import { StateSerializer } from '../../../src/store/store';

export class WholeStateStore {
  // Each watch's JSON kept: the watches that did not change are joined, not serialized again.
  private readonly serializer = new StateSerializer({ keepJson: true });
  private n = 0;

  constructor(readonly path: string) {}

  async save(state: PersistedState, changed?: ReadonlySet<string>): Promise<void> {
    const json = this.serializer.serialize(state, changed);
    const dir = nodePath.dirname(this.path);
    const tmp = `${this.path}.tmp-${process.pid}-${++this.n}`;
    const fh = await fsp.open(tmp, 'wx', 0o600);
    try {
      await fh.writeFile(json, 'utf8');
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, this.path);
    const d = await fsp.open(dir, 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
  }
}
