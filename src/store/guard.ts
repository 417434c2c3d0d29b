// What keeps a stale leader's late save off the disk (src/leader/lease.ts). A leader stopped or
// blocked past its lease may wake in the middle of a save, after another engine took over and
// saved to the same store (two runners on one state file; two windows on one globalState). So a
// store given a guard asks it right before each write that lands (the snapshot's rename, a
// journal append, the globalState update), with no `await` in between, stamps its term into the
// snapshot, and never replaces a snapshot of a newer term (read from its head: ./snapshotHead.ts).

export interface WriteGuard {
  /** Null while the writer may write; else why not (its lease ran out, it no longer leads). */
  fence(): string | null;
  /** The writer's term, or null (no election: a private daemon, or none could run). */
  term(): Term | null;
}

/**
 * A term of one election (`of`: its name, one per daemon). Terms of different elections are not
 * comparable: one store (the window's globalState, the runner's default state file) may be written
 * by the engines of several daemons, one after another.
 */
export interface Term {
  n: number;
  of: string;
}

/** How a term is stamped into the state: "5@<election>". */
export const termText = (t: Term): string => `${t.n}@${t.of}`;

/** A stamped term read back, or null (none, or not one). */
export function parseTerm(value: unknown): Term | null {
  const m = typeof value === 'string' ? /^(\d{1,15})@([A-Za-z0-9_-]{1,64})$/.exec(value) : null;
  return m ? { n: Number(m[1]), of: m[2] } : null;
}

/** A save refused because its writer may not write any more. */
export class FencedError extends Error {
  constructor(reason: string) {
    super(`not saved: ${reason}`);
    this.name = 'FencedError';
  }
}

/** Throws FencedError when the guard says no. */
export function checkFence(guard: WriteGuard | undefined): void {
  const reason = guard?.fence() ?? null;
  if (reason !== null) throw new FencedError(reason);
}

/** Throws FencedError when the stored document's term is a newer one of the writer's own election. */
export function checkTerm(guard: WriteGuard | undefined, stored: Term | null, where: string): void {
  const mine = guard?.term() ?? null;
  if (mine !== null && stored !== null && stored.of === mine.of && stored.n > mine.n) {
    throw new FencedError(`${where} was written by a newer term (${stored.n}) than this engine's (${mine.n})`);
  }
}
