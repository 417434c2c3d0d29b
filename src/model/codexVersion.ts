// Which Codex the daemon is, from `initialize`'s `userAgent`, and whether the product was tested
// against that version: the pinned `@openai/codex` and the `codex-latest` alias in package.json
// (a unit test keeps them equal).

/** The oldest and newest Codex versions the integration suite runs against. */
export const TESTED_CODEX = { oldest: '0.169.0', newest: '0.171.0' } as const;

/** The version in a userAgent such as "codex_cli_rs/0.171.0 (Ubuntu 24.4.0; x86_64) …", or null. */
export function daemonVersion(userAgent: string): string | null {
  const m = /^[^/\s]+\/(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)/.exec(userAgent.trim());
  return m ? m[1] : null;
}

/** Negative, zero or positive as a is older than, the same as or newer than b (release part only). */
export function compareVersions(a: string, b: string): number {
  const [x, y] = [a, b].map((v) => v.split('-')[0].split('.').map(Number));
  for (let i = 0; i < 3; i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** null when the version is inside the tested range; else (an unknown version too) the warning to log and show. */
export function untestedVersionWarning(version: string | null): string | null {
  const range = `${TESTED_CODEX.oldest}–${TESTED_CODEX.newest}`;
  if (version === null) return `the daemon did not say its Codex version; this extension is tested with Codex ${range}`;
  if (compareVersions(version, TESTED_CODEX.oldest) < 0)
    return `Codex ${version} is older than the tested ${range}: update Codex (npm i -g @openai/codex)`;
  if (compareVersions(version, TESTED_CODEX.newest) > 0)
    return `Codex ${version} is newer than the tested ${range}: recovery should work, but report anything odd`;
  return null;
}
