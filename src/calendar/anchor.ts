/**
 * A calendar rule's `anchor`: a local date-time without offset (`'2026-01-31T09:30'`), read in
 * the rule's time zone. It sets the time of day (every period), the weekday (weeks), the day of
 * the month (months, years) and the month (years).
 */

const DAY_MS = 86_400_000;
const ANCHOR = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?$/;

/** The parts of an anchor the periods use. */
export interface Anchor {
  /** 0 (January) to 11. */
  readonly month: number;
  /** 1 to 31: clamped to a shorter month's last day. */
  readonly day: number;
  /** ISO weekday from 0 (Monday) to 6 (Sunday). */
  readonly weekday: number;
  /** Milliseconds after local midnight. */
  readonly timeMs: number;
}

/** The calendar's own start: midnight, Monday, the 1st, January 1st. */
export const NO_ANCHOR: Anchor = { month: 0, day: 1, weekday: 0, timeMs: 0 };

/**
 * The anchor in `text` (`YYYY-MM-DD`, optionally `THH:mm`, `:ss`, `.sss`, no offset), or
 * undefined when it is malformed or names no real date or time (`2026-02-30`, `24:00`).
 */
export function parseAnchor(text: string): Anchor | undefined {
  const match = ANCHOR.exec(text);
  if (match === null) return undefined;
  const numbers = match.slice(1, 7).map((part) => Number(part ?? 0));
  const [y, mo, d, h, mi, s] = numbers as [number, number, number, number, number, number];
  const ms = Number((match[7] ?? '0').padEnd(3, '0'));
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo - 1) || h > 23 || mi > 59 || s > 59)
    return undefined;
  const date = utcDate(y, mo - 1, d);
  return {
    month: mo - 1,
    day: d,
    weekday: (new Date(date).getUTCDay() + 6) % 7,
    timeMs: ((h * 60 + mi) * 60 + s) * 1000 + ms,
  };
}

/** Days in `month` (0-11) of `year`. */
export function daysInMonth(year: number, month: number): number {
  return (utcDate(year, month + 1, 1) - utcDate(year, month, 1)) / DAY_MS;
}

/** Epoch ms of a date at UTC midnight, for any year (Date.UTC reads 0-99 as 1900-1999). */
export function utcDate(year: number, month: number, day: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  return date.getTime();
}
