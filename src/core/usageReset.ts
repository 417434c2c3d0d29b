// When a usage limit resets, by the turn's error message: the last source, after the daemon's
// `account/rateLimits/updated` and `account/rateLimits/read` (src/core/rateLimits.ts). The message
// names the reset as local clock text rounded DOWN to the minute (measured: a reset at 20:37:57
// reads 8:37 PM), e.g.
//   "… or try again at 9:08 AM."   "… or try again at Jul 9th, 2026 1:47 AM."
//   "… or try again at Aug 10, 2026, 11:12 AM."

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
// The spaces are Codex's own (single ones); before AM/PM any, as some clocks put a narrow one there.
const PATTERN =
  /try again at (?:([A-Za-z]{3}) (\d{1,2})(?:st|nd|rd|th)?, (\d{4}),? )?(\d{1,2}):(\d{2})\s*([AaPp][Mm])?/;

const MINUTE = 60_000;

/**
 * The latest the reset named in a message can be (ms since the epoch, local time of this
 * machine), or null: the end of the minute it names, as the reset lies somewhere within it and
 * a goal must never be resumed before it. A time of day alone is today's when it names this
 * minute or one at most a minute past (a reset seconds away in the same clock minute), and
 * tomorrow's only when it is more than a minute past.
 */
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
    return new Date(Number(year), month, Number(day), hour, minute, 0, 0).getTime() + MINUTE;
  }
  const at = new Date(now);
  at.setHours(hour, minute, 0, 0);
  if (now - at.getTime() > MINUTE) at.setDate(at.getDate() + 1);
  return at.getTime() + MINUTE;
}
