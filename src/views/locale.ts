// Times and numbers in the user's locale (VS Code's display language, else the system's), for the
// views only: the runner's text (src/model/timeText.ts) stays as it is, a public contract.
import * as vscode from 'vscode';

/** `format` in VS Code's display language, or in the system's locale when Intl does not know it. */
function localized<T>(format: (language: string | undefined) => T): T {
  try {
    return format(vscode.env.language);
  } catch {
    return format(undefined);
  }
}

let cached: (Record<'time' | 'clock' | 'day', Intl.DateTimeFormat> & { language: string }) | null = null;

function formats(): NonNullable<typeof cached> {
  const language = vscode.env.language;
  if (cached?.language === language) return cached;
  const make = (options: Intl.DateTimeFormatOptions) => localized((l) => new Intl.DateTimeFormat(l, options));
  cached = {
    language,
    time: make({ hour: '2-digit', minute: '2-digit', second: '2-digit' }),
    clock: make({ hour: '2-digit', minute: '2-digit' }),
    day: make({ month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }),
  };
  return cached;
}

/** A time of day with seconds (a history entry). */
export function timeOfDay(at: number): string {
  return formats().time.format(at);
}

/** A time of day today, or the day and time for another day. */
export function clockTime(at: number, now: number): string {
  const sameDay = new Date(at).toDateString() === new Date(now).toDateString();
  return (sameDay ? formats().clock : formats().day).format(at);
}

/** A count in the user's locale (tokens). */
export function count(n: number): string {
  return localized((l) => n.toLocaleString(l));
}

/** A date and time in full (a history entry's tooltip). */
export function dateTime(at: number): string {
  return localized((l) => new Date(at).toLocaleString(l));
}
