/**
 * Calendar periods in a time zone: the day, ISO week, month or year that contains an instant,
 * as [start, end) in epoch ms, anchored (see anchor.ts). Periods are numbered; each number's
 * start is a local date-time, turned into an instant by zone.ts (a start in a gap is the instant
 * after it, one that occurs twice its first occurrence), so starts never go backwards and
 * consecutive periods tile time. A period whose whole local span was skipped (Pacific/Apia's
 * 2011-12-30) is empty, and so contains no instant.
 */
import { type Anchor, daysInMonth, utcDate } from './anchor.js';
import { instantOf, localOf } from './zone.js';

export type PeriodName = 'day' | 'week' | 'month' | 'year';
export const PERIOD_NAMES: readonly PeriodName[] = ['day', 'week', 'month', 'year'];

/** A period as [start, end) in epoch ms. */
export interface PeriodSpan {
  readonly start: number;
  readonly end: number;
}

/** One rule's calendar: the period containing any instant. */
export interface Calendar {
  readonly period: PeriodName;
  readonly timeZone: string;
  /** The anchor as the rule gave it, or undefined for the calendar's own start. */
  readonly anchor: string | undefined;
  /** The period containing `now` (epoch ms): `start <= now < end`. */
  at(now: number): PeriodSpan;
}

const DAY_MS = 86_400_000;
/** 1970-01-05, the first Monday after the epoch: ISO weeks are counted from it. */
const FIRST_MONDAY = 4 * DAY_MS;

/** The local start (epoch ms of local fields read as UTC) of period number `index`. */
function localStart(period: PeriodName, anchor: Anchor, index: number): number {
  switch (period) {
    case 'day':
      return index * DAY_MS + anchor.timeMs;
    case 'week':
      return FIRST_MONDAY + (index * 7 + anchor.weekday) * DAY_MS + anchor.timeMs;
    case 'month': {
      const year = Math.floor(index / 12);
      const month = index - year * 12;
      return clamped(year, month, anchor);
    }
    case 'year':
      return clamped(index, anchor.month, anchor);
  }
}

/** The anchor's day and time in `month` of `year`, on the month's last day when it is shorter. */
function clamped(year: number, month: number, anchor: Anchor): number {
  return utcDate(year, month, Math.min(anchor.day, daysInMonth(year, month))) + anchor.timeMs;
}

/** The number of the period whose local span holds the local time `local`. */
function indexOf(period: PeriodName, anchor: Anchor, local: number): number {
  switch (period) {
    case 'day':
      return Math.floor((local - anchor.timeMs) / DAY_MS);
    case 'week':
      return Math.floor((local - FIRST_MONDAY - anchor.weekday * DAY_MS - anchor.timeMs) / (7 * DAY_MS));
    case 'month':
    case 'year': {
      const date = new Date(local);
      const guess =
        period === 'month' ? date.getUTCFullYear() * 12 + date.getUTCMonth() : date.getUTCFullYear();
      return local < localStart(period, anchor, guess) ? guess - 1 : guess;
    }
  }
}

/**
 * The calendar of `period` in `timeZone` (a name the platform knows, see isTimeZone) from
 * `anchor` (parsed from `anchorText`). It remembers the last period it found: checks ask for the
 * same one again and again.
 */
export function createCalendar(
  period: PeriodName,
  timeZone: string,
  anchor: Anchor,
  anchorText?: string,
): Calendar {
  const startOf = (index: number): number => instantOf(timeZone, localStart(period, anchor, index));
  let last: PeriodSpan = { start: 0, end: 0 };
  return {
    period,
    timeZone,
    anchor: anchorText,
    at(now) {
      if (last.start <= now && now < last.end) return last;
      // The local reading guesses; the instants decide (around a change the two can disagree).
      let index = indexOf(period, anchor, localOf(timeZone, now));
      let start = startOf(index);
      while (start > now) start = startOf(--index);
      let end = startOf(index + 1);
      while (end <= now) {
        start = end;
        end = startOf(++index + 1);
      }
      last = { start, end };
      return last;
    },
  };
}
