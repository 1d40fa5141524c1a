/** Calendar periods from the platform's `Intl`: what rules.ts, the stores and the CLI use. */
export { type Anchor, NO_ANCHOR, parseAnchor } from './anchor.js';
export { type Calendar, createCalendar, PERIOD_NAMES, type PeriodName, type PeriodSpan } from './periods.js';
export { formatLocal, isTimeZone, localOf } from './zone.js';
