// When a usage limit resets. The daemon's rate-limit read needs an account; without one
// the reset is only in the turn's error message, as local clock text, e.g.
//   "… or try again at 9:08 AM."   "… or try again at Jul 9th, 2026 1:47 AM."
//   "… or try again at Aug 10, 2026, 11:12 AM."

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const PATTERN =
  /try again at\s+(?:([A-Za-z]{3})[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4}),?\s+)?(\d{1,2}):(\d{2})\s*([AaPp][Mm])?/;

/** The reset time (ms since the epoch, local time of this machine) named in a message, or null. */
export function resetFromMessage(message: string, now: number): number | null {
  const m = PATTERN.exec(message);
  if (!m) return null;
  const [, monthName, day, year, hourText, minuteText, meridiem] = m;
  let hour = Number(hourText);
  const minute = Number(minuteText);
  if (minute > 59 || hour > 23) return null;
  if (meridiem) {
    if (hour < 1 || hour > 12) return null;
    hour = (hour % 12) + (meridiem.toLowerCase() === 'pm' ? 12 : 0);
  }
  if (monthName !== undefined) {
    const month = MONTHS.indexOf(monthName.toLowerCase());
    if (month < 0) return null;
    const at = new Date(Number(year), month, Number(day), hour, minute, 0, 0).getTime();
    return Number.isFinite(at) ? at : null;
  }
  // A time of day alone: its next occurrence.
  const at = new Date(now);
  at.setHours(hour, minute, 0, 0);
  if (at.getTime() <= now) at.setDate(at.getDate() + 1);
  return at.getTime();
}
