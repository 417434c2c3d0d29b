// Shared by the extension-host suite (test/vscode/suite/) and its driver (codeShim.ts).

/**
 * Lines the suite prints start with this, so the driver can tell test output from everything
 * else the extension host logs. The driver prints them without it.
 */
export const TEST_OUTPUT_PREFIX = '[cgr-test] ';

/** JSON of the env that runExtensionTests hands to the extension host (payload extensionEnvironment). */
export const EXTENSION_ENV_VAR = 'CGR_VSCODE_EXTENSION_ENV';

/**
 * Everything else the extension host writes to its console while the suite runs (the
 * extension's own console.log included), so the driver can print it apart from the rest of
 * the workbench's log: `[cgr-exthost] <level> <text>`.
 */
export const EXTHOST_OUTPUT_PREFIX = '[cgr-exthost] ';
