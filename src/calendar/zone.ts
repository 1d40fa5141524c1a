/**
 * Wall-clock time in an IANA time zone from the platform's `Intl` alone (no time-zone database in
 * the package): the offset at an instant, and the instant of a local date-time, which needs a
 * search because the offset can change at that very moment (a DST change, a skipped day).
 */

const DAY_MS = 86_400_000;
/**
 * How far either side of a local time the offsets before and after a change are read: wider than
 * the largest change ever made (Pacific/Apia skipped a whole day in 2011), narrower than the
 * shortest time between two changes.
 */
const SPAN_MS = 2 * DAY_MS;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The zone's formatter (one per zone: building one costs far more than using it). */
function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Whether the platform knows `timeZone` as an IANA zone name (case as the user wrote it). */
export function isTimeZone(timeZone: string): boolean {
  try {
    formatterOf(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at `instant` (epoch ms), in ms: local time = instant + offset. */
export function offsetAt(timeZone: string, instant: number): number {
  const fields: Record<string, number> = {};
  let bc = false;
  for (const part of formatterOf(timeZone).formatToParts(instant)) {
    if (part.type === 'era') bc = part.value === 'BC' || part.value === 'B';
    else if (part.type !== 'literal') fields[part.type] = Number(part.value);
  }
  const year = bc ? 1 - (fields.year as number) : (fields.year as number);
  const date = new Date(0);
  date.setUTCFullYear(year, (fields.month as number) - 1, fields.day as number);
  date.setUTCHours(fields.hour as number, fields.minute as number, fields.second as number, 0);
  // The formatter drops milliseconds: compare with the instant's whole second.
  return date.getTime() - (instant - mod(instant, 1000));
}

/** The local wall-clock time of `instant`, as epoch ms of the same fields read as UTC. */
export function localOf(timeZone: string, instant: number): number {
  return instant + offsetAt(timeZone, instant);
}

/**
 * The instant of the local wall-clock time `local` (epoch ms of its fields read as UTC). A time
 * that occurs twice (clocks turned back) is its first occurrence; one that does not exist (clocks
 * turned forward over it) is the first instant after the gap, the moment of the change.
 */
export function instantOf(timeZone: string, local: number): number {
  const before = offsetAt(timeZone, local - SPAN_MS);
  const after = offsetAt(timeZone, local + SPAN_MS);
  const early = local - Math.max(before, after);
  const late = local - Math.min(before, after);
  // The earlier reading first: when both hold, the time occurs twice.
  if (offsetAt(timeZone, early) === Math.max(before, after)) return early;
  if (offsetAt(timeZone, late) === Math.min(before, after)) return late;
  return changeBetween(timeZone, early, late, offsetAt(timeZone, early));
}

/** The first instant in (from, to] whose offset differs from `first`, the offset at `from`. */
function changeBetween(timeZone: string, from: number, to: number, first: number): number {
  let low = from;
  let high = to;
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (offsetAt(timeZone, middle) === first) low = middle;
    else high = middle;
  }
  return high;
}

/** `instant` as local wall-clock time in `timeZone` with its offset: `2026-03-08 03:00:00-04:00`. */
export function formatLocal(timeZone: string, instant: number): string {
  const offset = offsetAt(timeZone, instant);
  const text = new Date(instant + offset).toISOString().slice(0, 19).replace('T', ' ');
  const minutes = Math.round(Math.abs(offset) / 60_000);
  const hh = String(Math.floor(minutes / 60)).padStart(2, '0');
  const mm = String(minutes % 60).padStart(2, '0');
  return `${text}${offset < 0 ? '-' : '+'}${hh}:${mm}`;
}

/** `a mod b` for negative `a` too. */
function mod(a: number, b: number): number {
  return ((a % b) + b) % b;
}
