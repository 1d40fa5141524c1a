/**
 * Calendar periods against hand-checked boundaries: month ends, both DST changes in two zones, a
 * half-hour zone, a zone that skipped a day, ISO weeks over a year end, leap years; then the
 * property that consecutive periods tile time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createCalendar,
  localOf,
  NO_ANCHOR,
  PERIOD_NAMES,
  type PeriodName,
  parseAnchor,
} from '../../src/calendar/index.js';

const at = (iso: string): number => Date.parse(iso);

/** The period containing `instant` as ISO strings, for readable failures. */
function span(period: PeriodName, timeZone: string, anchor: string | undefined, instant: string) {
  const calendar = createCalendar(
    period,
    timeZone,
    anchor === undefined ? NO_ANCHOR : (parseAnchor(anchor) ?? NO_ANCHOR),
  );
  const { start, end } = calendar.at(at(instant));
  return [new Date(start).toISOString(), new Date(end).toISOString()];
}

describe('calendar periods', () => {
  it.each([
    // [period, zone, anchor, instant, start, end]
    ['month', 'UTC', undefined, '2026-02-14T10:00Z', '2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
    [
      'month',
      'UTC',
      undefined,
      '2026-02-28T23:59:59.999Z',
      '2026-02-01T00:00:00.000Z',
      '2026-03-01T00:00:00.000Z',
    ],
    ['month', 'UTC', undefined, '2026-03-01T00:00Z', '2026-03-01T00:00:00.000Z', '2026-04-01T00:00:00.000Z'],
    // 31st anchor: 31 Jan, then the last day of February (28 and, in 2028, 29), back on 31 March
    [
      'month',
      'UTC',
      '2026-01-31',
      '2026-02-10T00:00Z',
      '2026-01-31T00:00:00.000Z',
      '2026-02-28T00:00:00.000Z',
    ],
    [
      'month',
      'UTC',
      '2026-01-31',
      '2026-03-01T00:00Z',
      '2026-02-28T00:00:00.000Z',
      '2026-03-31T00:00:00.000Z',
    ],
    [
      'month',
      'UTC',
      '2026-01-31',
      '2028-03-01T00:00Z',
      '2028-02-29T00:00:00.000Z',
      '2028-03-31T00:00:00.000Z',
    ],
    [
      'month',
      'UTC',
      '2026-01-31',
      '2026-04-30T12:00Z',
      '2026-04-30T00:00:00.000Z',
      '2026-05-31T00:00:00.000Z',
    ],
    // 30th and 29th anchors in February, common and leap years
    [
      'month',
      'UTC',
      '2026-01-30',
      '2026-03-29T00:00Z',
      '2026-02-28T00:00:00.000Z',
      '2026-03-30T00:00:00.000Z',
    ],
    [
      'month',
      'UTC',
      '2026-01-29',
      '2026-03-01T00:00Z',
      '2026-02-28T00:00:00.000Z',
      '2026-03-29T00:00:00.000Z',
    ],
    [
      'month',
      'UTC',
      '2026-01-29',
      '2028-03-01T00:00Z',
      '2028-02-29T00:00:00.000Z',
      '2028-03-29T00:00:00.000Z',
    ],
    // a 30-day month with a 31st anchor: the 30th
    [
      'month',
      'UTC',
      '2026-01-31T09:30',
      '2026-06-30T09:29Z',
      '2026-05-31T09:30:00.000Z',
      '2026-06-30T09:30:00.000Z',
    ],
    // America/New_York: 23-hour day on 2026-03-08, 25-hour day on 2026-11-01
    [
      'day',
      'America/New_York',
      undefined,
      '2026-03-08T12:00Z',
      '2026-03-08T05:00:00.000Z',
      '2026-03-09T04:00:00.000Z',
    ],
    [
      'day',
      'America/New_York',
      undefined,
      '2026-11-01T12:00Z',
      '2026-11-01T04:00:00.000Z',
      '2026-11-02T05:00:00.000Z',
    ],
    // a start inside the spring gap (02:30 does not exist): the first instant after it, 03:00 EDT
    [
      'day',
      'America/New_York',
      '2026-01-01T02:30',
      '2026-03-08T12:00Z',
      '2026-03-08T07:00:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ],
    // a start that occurs twice (01:30 on 2026-11-01): its first occurrence, in EDT
    [
      'day',
      'America/New_York',
      '2026-01-01T01:30',
      '2026-11-01T06:10Z',
      '2026-11-01T05:30:00.000Z',
      '2026-11-02T06:30:00.000Z',
    ],
    // Europe/Berlin: 2026-03-29 and 2026-10-25
    [
      'day',
      'Europe/Berlin',
      undefined,
      '2026-03-29T12:00Z',
      '2026-03-28T23:00:00.000Z',
      '2026-03-29T22:00:00.000Z',
    ],
    [
      'day',
      'Europe/Berlin',
      undefined,
      '2026-10-25T12:00Z',
      '2026-10-24T22:00:00.000Z',
      '2026-10-25T23:00:00.000Z',
    ],
    [
      'day',
      'Europe/Berlin',
      '2026-01-01T02:30',
      '2026-03-29T12:00Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ],
    [
      'day',
      'Europe/Berlin',
      '2026-01-01T02:30',
      '2026-10-25T12:00Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ],
    [
      'month',
      'Europe/Berlin',
      undefined,
      '2026-03-31T21:59Z',
      '2026-02-28T23:00:00.000Z',
      '2026-03-31T22:00:00.000Z',
    ],
    // Asia/Kolkata, +05:30
    [
      'day',
      'Asia/Kolkata',
      undefined,
      '2026-05-01T18:29:59.999Z',
      '2026-04-30T18:30:00.000Z',
      '2026-05-01T18:30:00.000Z',
    ],
    [
      'month',
      'Asia/Kolkata',
      '2026-01-31T09:30',
      '2026-02-15T00:00Z',
      '2026-01-31T04:00:00.000Z',
      '2026-02-28T04:00:00.000Z',
    ],
    // Pacific/Apia skipped 2011-12-30 (-10 to +14): the 29th ends where the 31st begins
    [
      'day',
      'Pacific/Apia',
      undefined,
      '2011-12-30T09:59:59.999Z',
      '2011-12-29T10:00:00.000Z',
      '2011-12-30T10:00:00.000Z',
    ],
    [
      'day',
      'Pacific/Apia',
      undefined,
      '2011-12-30T10:00Z',
      '2011-12-30T10:00:00.000Z',
      '2011-12-31T10:00:00.000Z',
    ],
    [
      'month',
      'Pacific/Apia',
      '2011-01-30',
      '2011-12-30T12:00Z',
      '2011-12-30T10:00:00.000Z',
      '2012-01-29T10:00:00.000Z',
    ],
    // Europe/Moscow: +04 from 2011-03-27, +03 from 2014-10-26 (01:00 occurred twice)
    [
      'day',
      'Europe/Moscow',
      undefined,
      '2012-06-01T12:00Z',
      '2012-05-31T20:00:00.000Z',
      '2012-06-01T20:00:00.000Z',
    ],
    [
      'day',
      'Europe/Moscow',
      '2014-01-01T01:30',
      '2014-10-25T21:29Z',
      '2014-10-24T21:30:00.000Z',
      '2014-10-25T21:30:00.000Z',
    ],
    [
      'day',
      'Europe/Moscow',
      '2014-01-01T01:30',
      '2014-10-25T22:30Z',
      '2014-10-25T21:30:00.000Z',
      '2014-10-26T22:30:00.000Z',
    ],
    // ISO weeks over a year end: Monday 2025-12-29 to Monday 2026-01-05; anchored on a Friday
    [
      'week',
      'Europe/Berlin',
      undefined,
      '2026-01-01T00:00Z',
      '2025-12-28T23:00:00.000Z',
      '2026-01-04T23:00:00.000Z',
    ],
    ['week', 'UTC', undefined, '2027-01-03T23:59Z', '2026-12-28T00:00:00.000Z', '2027-01-04T00:00:00.000Z'],
    [
      'week',
      'UTC',
      '2026-01-02T18:00',
      '2026-01-01T00:00Z',
      '2025-12-26T18:00:00.000Z',
      '2026-01-02T18:00:00.000Z',
    ],
    // years: leap years, and a Feb 29 anchor on Feb 28 in other years
    ['year', 'UTC', undefined, '2028-12-31T23:59Z', '2028-01-01T00:00:00.000Z', '2029-01-01T00:00:00.000Z'],
    [
      'year',
      'UTC',
      '2024-02-29',
      '2025-06-01T00:00Z',
      '2025-02-28T00:00:00.000Z',
      '2026-02-28T00:00:00.000Z',
    ],
    [
      'year',
      'UTC',
      '2024-02-29',
      '2028-03-01T00:00Z',
      '2028-02-29T00:00:00.000Z',
      '2029-02-28T00:00:00.000Z',
    ],
    [
      'year',
      'America/New_York',
      undefined,
      '2027-01-01T04:59Z',
      '2026-01-01T05:00:00.000Z',
      '2027-01-01T05:00:00.000Z',
    ],
  ] as const)('%s in %s anchored %s at %s: [%s, %s)', (period, zone, anchor, instant, start, end) => {
    expect(span(period, zone, anchor, instant)).toEqual([start, end]);
  });

  it('reads anchors strictly: local date-times without offset, real dates only', () => {
    expect(parseAnchor('2026-01-31T09:30')).toEqual({ month: 0, day: 31, weekday: 5, timeMs: 34_200_000 });
    expect(parseAnchor('2026-01-05')).toEqual({ month: 0, day: 5, weekday: 0, timeMs: 0 });
    expect(parseAnchor('2024-02-29T00:00:00.5')?.timeMs).toBe(500);
    for (const bad of [
      '2026-02-30',
      '2025-02-29',
      '2026-01-31T24:00',
      '2026-01-31T09:30Z',
      '2026-01-31T09:30+01:00',
      '31/01/2026',
      '2026-1-31',
      '',
    ])
      expect(parseAnchor(bad), bad).toBeUndefined();
  });
});

const ZONES = [
  'UTC',
  'America/New_York',
  'Europe/Berlin',
  'Asia/Kolkata',
  'Pacific/Apia',
  'Europe/Moscow',
  'Australia/Lord_Howe',
  'America/Santiago',
  'Pacific/Chatham',
];
const FROM = at('1995-01-01T00:00Z');
const TO = at('2045-01-01T00:00Z');

const calendarArb = fc.record({
  period: fc.constantFrom(...PERIOD_NAMES),
  zone: fc.constantFrom(...ZONES),
  anchor: fc.option(fc.date({ min: new Date(FROM), max: new Date(TO), noInvalidDate: true }), {
    nil: undefined,
  }),
  instant: fc.integer({ min: FROM, max: TO }),
});

describe('calendar periods (properties)', () => {
  it('contain the instant, and consecutive periods tile time with no gap or overlap', () => {
    fc.assert(
      fc.property(calendarArb, ({ period, zone, anchor, instant }) => {
        const text = anchor?.toISOString().slice(0, 23);
        const calendar = createCalendar(
          period,
          zone,
          text === undefined ? NO_ANCHOR : (parseAnchor(text) ?? NO_ANCHOR),
        );
        const here = calendar.at(instant);
        expect(here.start <= instant && instant < here.end).toBe(true);
        const next = calendar.at(here.end);
        const previous = calendar.at(here.start - 1);
        expect(next.start).toBe(here.end);
        expect(previous.end).toBe(here.start);
        // Never empty (an empty period holds no instant), never longer than a year and a day.
        expect(here.end - here.start).toBeGreaterThan(0);
        expect(here.end - here.start).toBeLessThanOrEqual(367 * 86_400_000);
      }),
      { numRuns: 300 },
    );
  });

  it('start days on the anchor time of day, unless that time was skipped', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ZONES),
        fc.integer({ min: 0, max: 86_399 }),
        fc.integer({ min: FROM, max: TO }),
        (zone, second, instant) => {
          const time = new Date(second * 1000).toISOString().slice(11, 19);
          const calendar = createCalendar('day', zone, parseAnchor(`2026-01-01T${time}`) ?? NO_ANCHOR);
          const { start } = calendar.at(instant);
          const local = localOf(zone, start) % 86_400_000;
          // Either the anchor's time, or later on the same day when a change skipped it.
          if (local !== second * 1000)
            expect(localOf(zone, start - 1) % 86_400_000).toBeLessThan(second * 1000);
        },
      ),
      { numRuns: 300 },
    );
  });
});
