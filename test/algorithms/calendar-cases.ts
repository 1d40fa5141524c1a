/**
 * Calendar rules in the specification table: each case starts at its own instant (`base`) near a
 * month end, a DST change, a skipped day or a leap day, and every reset is the period's exact end.
 */
import { no, ok, type SpecCase } from './spec-cases.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = (iso: string): number => Date.parse(iso);

/** A day rule (limit 2) in `timeZone` over the local midnight at `midnight`, whose day lasts `hours`. */
function dayAcross(timeZone: string, midnight: string, hours: number, what: string): SpecCase {
  return {
    name: `calendar day in ${timeZone} over ${what}: the day is ${hours} hours long`,
    base: at(midnight) - 1000,
    rules: { name: 'daily', algorithm: 'fixed-window', limit: 2, period: 'day', timeZone },
    steps: [
      // Redis expires a state at its period's end on its own clock: no step reads one written
      // a millisecond before the end.
      { at: 0, expect: ok(1, 1000) },
      { at: 0, expect: ok(0, 1000) },
      { at: 500, expect: no(0, 500, 500) },
      { at: 1000, expect: ok(1, hours * HOUR) },
      { at: hours * HOUR, expect: ok(0, 1000) },
      { at: hours * HOUR, op: 'peek', expect: no(0, 1000, 1000) },
      { at: 1000 + hours * HOUR, expect: ok(1, DAY) },
    ],
  };
}

export const CALENDAR_CASES: SpecCase[] = [
  {
    name: 'calendar month anchored on the 31st: ends on Feb 28, the next on Mar 31; settles in its period only',
    base: at('2026-02-27T23:00Z'),
    rules: { name: 'monthly', algorithm: 'fixed-window', limit: 5, period: 'month', anchor: '2026-01-31' },
    steps: [
      { at: 0, cost: 2, expect: ok(3, HOUR) },
      { at: 1000, op: 'settle', settles: 0, actual: 4 },
      { at: 1000, expect: ok(0, HOUR - 1000) },
      { at: 2000, expect: no(0, HOUR - 2000, HOUR - 2000) },
      { at: 3000, cost: 6, expect: no(0, HOUR - 3000, Number.POSITIVE_INFINITY) },
      { at: HOUR, cost: 3, expect: ok(2, 31 * DAY) },
      // A refund of a reservation from the last period gives nothing back.
      { at: HOUR + 1, op: 'refund', settles: 2 },
      { at: HOUR + 1, op: 'peek', expect: ok(1, 31 * DAY - 1) },
    ],
  },
  {
    name: 'calendar month anchored on the 29th: Feb 28 in a common year, then back to the 29th',
    base: at('2026-02-27T12:00Z'),
    rules: { name: 'monthly', algorithm: 'fixed-window', limit: 1, period: 'month', anchor: '2026-01-29' },
    steps: [
      { at: 0, expect: ok(0, 12 * HOUR) },
      { at: 12 * HOUR, expect: ok(0, 29 * DAY) },
      { at: 12 * HOUR, expect: no(0, 29 * DAY, 29 * DAY) },
    ],
  },
  dayAcross('America/New_York', '2026-03-08T05:00Z', 23, 'the spring change'),
  dayAcross('America/New_York', '2026-11-01T04:00Z', 25, 'the autumn change'),
  dayAcross('Europe/Berlin', '2026-03-28T23:00Z', 23, 'the spring change'),
  dayAcross('Europe/Berlin', '2026-10-24T22:00Z', 25, 'the autumn change'),
  {
    name: 'calendar day anchored at 02:30 in America/New_York: the skipped start is 03:00 EDT',
    base: at('2026-03-08T06:59:59Z'),
    rules: {
      name: 'daily',
      algorithm: 'fixed-window',
      limit: 1,
      period: 'day',
      timeZone: 'America/New_York',
      anchor: '2026-01-01T02:30',
    },
    steps: [
      { at: 0, expect: ok(0, 1000) },
      { at: 1000, expect: ok(0, 23.5 * HOUR) },
    ],
  },
  {
    name: 'calendar week in Asia/Kolkata (+05:30) over a year end: Monday 00:00 IST',
    base: at('2025-12-31T18:30Z'),
    rules: { name: 'weekly', algorithm: 'fixed-window', limit: 2, period: 'week', timeZone: 'Asia/Kolkata' },
    steps: [
      { at: 0, expect: ok(1, 4 * DAY) },
      { at: 4 * DAY - 1, expect: ok(0, 1) },
      { at: 4 * DAY, expect: ok(1, 7 * DAY) },
    ],
  },
  {
    name: 'calendar day in Pacific/Apia over the skipped 2011-12-30: Dec 29 ends where Dec 31 begins',
    base: at('2011-12-30T09:59:59Z'),
    rules: { name: 'daily', algorithm: 'fixed-window', limit: 1, period: 'day', timeZone: 'Pacific/Apia' },
    steps: [
      { at: 0, expect: ok(0, 1000) },
      { at: 1000, expect: ok(0, DAY) },
    ],
  },
  {
    name: 'calendar year anchored on Feb 29: Feb 28 in common years, Feb 29 in 2028',
    base: at('2028-02-28T23:59:59Z'),
    rules: { name: 'yearly', algorithm: 'fixed-window', limit: 1, period: 'year', anchor: '2024-02-29' },
    steps: [
      { at: 0, expect: ok(0, 1000) },
      { at: 1000, expect: ok(0, 365 * DAY) },
      { at: 1000, op: 'peek', expect: no(0, 365 * DAY, 365 * DAY) },
    ],
  },
];
