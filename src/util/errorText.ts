// What an error says, for a log line or a message: its message, or the thrown value as text.
// Imports nothing.

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
