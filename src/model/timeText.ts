// Times and durations in words for the views, the CLI and the log: how long ago, when, how long.

/** `40 s`, `12 min`, `3 h`, `2 d`: how long ago, roughly. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86_400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** `14:05` for a time today, `Dec 1, 14:05` for another day (local time). */
export function formatClock(at: number, now: number): string {
  const d = new Date(at);
  const hm = `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
  if (d.toDateString() === new Date(now).toDateString()) return hm;
  return `${d.toLocaleString('en-US', { month: 'short' })} ${d.getDate()}, ${hm}`;
}

/** `m:ss` (or `h:mm:ss`) for a duration in ms; never negative. */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const ss = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}
