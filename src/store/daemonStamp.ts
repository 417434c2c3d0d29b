// Which daemon a state file is kept for. The runner stamps its file's snapshots with the daemon's
// address (src/runner/stateFile.ts, `daemonKey`), among their first fields as the term is
// (./guard.ts; both read back by ./snapshotHead.ts); a store given that address refuses a file
// stamped for another daemon, at load and before each snapshot it writes (./jsonFileStore.ts), so
// two daemons' engines never share a file.

/** Thrown by a load or a write on a state file that another daemon's engine keeps. */
export class OtherDaemonError extends Error {
  constructor(path: string, theirs: string, mine: string) {
    super(
      `state file ${path} keeps the state of another daemon (${theirs}), not of ${mine}: each daemon needs a state file of its own (leave out --state and each gets one)`,
    );
    this.name = 'OtherDaemonError';
  }
}

/** Throws OtherDaemonError when `stamped` names a daemon other than `mine` (null: not stamped, taken). */
export function checkDaemon(path: string, stamped: string | null, mine: string | undefined): void {
  if (mine !== undefined && stamped !== null && stamped !== mine) throw new OtherDaemonError(path, stamped, mine);
}
