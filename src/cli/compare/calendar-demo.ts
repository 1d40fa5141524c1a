/**
 * `floodgate compare --calendar`: a calendar rule beside a fixed window of the nominal length,
 * on the same checks across a DST change (a 23-hour day in America/New_York) and a month end (a
 * billing month anchored on the 31st, in February). On an in-process store with a moved clock,
 * so it runs in a moment and shows exact reset times.
 */
import { createLimiter, memoryStore, type RuleOptions } from '../../index.js';
import { formatLocal } from '../../internal.js';
import { renderTable } from '../table.js';

interface DemoCase {
  readonly title: string;
  readonly timeZone: string;
  readonly rules: readonly RuleOptions[];
  /** The instants checked, ISO 8601. */
  readonly at: readonly string[];
}

const CASES: readonly DemoCase[] = [
  {
    title: 'a day in America/New_York over the spring change (2026-03-08 has 23 hours)',
    timeZone: 'America/New_York',
    rules: [
      {
        name: 'calendar-day',
        algorithm: 'fixed-window',
        limit: 2,
        period: 'day',
        timeZone: 'America/New_York',
      },
      { name: 'window-24h', algorithm: 'fixed-window', limit: 2, window: '1d' },
    ],
    at: [
      '2026-03-07T23:30:00-05:00',
      '2026-03-08T00:30:00-05:00',
      '2026-03-08T20:30:00-04:00',
      '2026-03-09T00:30:00-04:00',
    ],
  },
  {
    title: 'a month anchored on the 31st over February (it ends on the 28th, the next on March 31)',
    timeZone: 'UTC',
    rules: [
      { name: 'calendar-month', algorithm: 'fixed-window', limit: 2, period: 'month', anchor: '2026-01-31' },
      { name: 'window-30d', algorithm: 'fixed-window', limit: 2, window: '30d' },
    ],
    at: ['2026-02-27T12:00:00Z', '2026-02-27T18:00:00Z', '2026-02-28T00:00:00Z', '2026-03-30T12:00:00Z'],
  },
];

/** One check of one rule: where the demo shows it. */
export interface CalendarDemoRow {
  readonly case: string;
  readonly at: string;
  readonly rule: string;
  readonly allowed: boolean;
  readonly remaining: number;
  /** When the rule's quota is fully back, in the case's time zone. */
  readonly resetsAt: string;
}

/** Every case's checks, each rule counted on its own limiter (so one's denial never stops the other). */
export async function runCalendarDemo(): Promise<CalendarDemoRow[]> {
  const rows: CalendarDemoRow[] = [];
  for (const demo of CASES) {
    let now = 0;
    const store = memoryStore({ clock: () => now });
    const limiters = demo.rules.map((rule) => createLimiter({ store, rules: rule, denyCache: false }));
    for (const iso of demo.at) {
      now = Date.parse(iso);
      for (const limiter of limiters) {
        const decision = await limiter.check('demo');
        rows.push({
          case: demo.title,
          at: formatLocal(demo.timeZone, now),
          rule: decision.rule,
          allowed: decision.allowed,
          remaining: decision.remaining,
          resetsAt: formatLocal(demo.timeZone, now + decision.resetMs),
        });
      }
    }
    await Promise.all(limiters.map((limiter) => limiter.close()));
  }
  return rows;
}

/** The demo as text: one table per case. */
export function calendarDemoText(rows: readonly CalendarDemoRow[]): string {
  const lines = [
    'floodgate compare --calendar: a calendar rule and a fixed window on the same checks (limit 2)',
    '',
  ];
  for (const title of new Set(rows.map((row) => row.case))) {
    lines.push(
      title,
      renderTable(
        ['check at', 'rule', 'answer', 'remaining', 'quota back at'],
        rows
          .filter((row) => row.case === title)
          .map((row) => [
            row.at,
            row.rule,
            row.allowed ? 'allowed' : 'denied',
            String(row.remaining),
            row.resetsAt,
          ]),
        ['left', 'left', 'left', 'right', 'left'],
      ),
      '',
    );
  }
  return `${lines.join('\n')}`;
}
