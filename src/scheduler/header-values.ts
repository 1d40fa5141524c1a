/**
 * The value formats upstreams use in rate-limit headers (counts, delay seconds, Go durations,
 * RFC 3339 and HTTP dates) read strictly: a value that does not match its format is ignored,
 * and whatever matches is clamped, so no header can produce a negative, non-finite or absurd
 * count or wait.
 */

/** The longest wait any header can ask for: one day. A longer one is read as this. */
export const MAX_UPSTREAM_WAIT_MS = 86_400_000;
/** The largest count (limit, remaining) any header can give: RFC 9651's largest Integer. */
export const MAX_UPSTREAM_COUNT = 999_999_999_999_999;

/** A wait in whole ms (rounded up), clamped to [0, MAX_UPSTREAM_WAIT_MS]; NaN is no wait at all. */
export function clampWait(ms: number): number | undefined {
  if (Number.isNaN(ms)) return undefined;
  return Math.min(MAX_UPSTREAM_WAIT_MS, Math.max(0, Math.ceil(ms)));
}

/** A count, whole and clamped to [0, MAX_UPSTREAM_COUNT]; a negative or NaN count is unknown. */
export function clampCount(value: number): number | undefined {
  if (Number.isNaN(value) || value < 0) return undefined;
  return Math.min(MAX_UPSTREAM_COUNT, Math.floor(value));
}

const DIGITS = /^\d+$/;

/** A non-negative decimal integer (`42`); `-1`, `4.2`, `1e3` and the empty string are unknown. */
export function readCount(text: string | undefined): number | undefined {
  return text !== undefined && DIGITS.test(text) ? clampCount(Number(text)) : undefined;
}

/** Delay seconds (`120`) as a wait in ms. */
export function readDelaySeconds(text: string | undefined): number | undefined {
  return text !== undefined && DIGITS.test(text) ? clampWait(Number(text) * 1000) : undefined;
}

const GO_UNIT_MS: Record<string, number> = {
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
  us: 0.001,
  µs: 0.001,
  μs: 0.001,
  ns: 0.000_001,
};
const GO_PART = /^(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|μs|ns)/;

/**
 * A Go duration (`12ms`, `1s`, `6m0s`, `1h2m3s`, `1.5s`) as a wait in ms. A bare number is
 * seconds, as Azure OpenAI sends it; a sign makes it unknown.
 */
export function readGoDuration(text: string | undefined): number | undefined {
  if (text === undefined || text.length > 64) return undefined;
  if (DIGITS.test(text)) return clampWait(Number(text) * 1000);
  if (text.length === 0) return undefined;
  let total = 0;
  let rest = text;
  while (rest.length > 0) {
    const part = GO_PART.exec(rest);
    if (!part) return undefined;
    total += Number(part[1]) * (GO_UNIT_MS[part[2] as string] as number);
    rest = rest.slice(part[0].length);
  }
  return clampWait(total);
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/** Epoch ms from the parts of a date and time, or `undefined` if a part is out of range. */
function utc(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number | undefined {
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) return undefined;
  const ms = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59));
  // Date.UTC rolls 31 April into 1 May; a date that rolled over is not a date.
  return new Date(ms).getUTCDate() === day ? ms : undefined;
}

/** An RFC 3339 timestamp (`2025-08-21T12:40:59Z`, `...59.5+02:00`) as epoch ms. */
export function readRfc3339(text: string | undefined): number | undefined {
  const m = text === undefined ? null : RFC3339.exec(text);
  if (!m) return undefined;
  const n = (i: number) => Number(m[i]);
  const base = utc(n(1), n(2), n(3), n(4), n(5), n(6));
  if (base === undefined) return undefined;
  const millis = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  if (m[8] === undefined) return base + millis;
  if (n(9) > 23 || n(10) > 59) return undefined;
  // A local time ahead of UTC (+02:00) is that much later than the same clock reading in UTC.
  const offset = (n(9) * 60 + n(10)) * 60_000;
  return base + millis - (m[8] === '+' ? offset : -offset);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = MONTHS.join('|');
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
/** RFC 9110 §5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must accept. */
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) (${MONTH}) (\\d{4}) ${TIME} GMT$`);
const RFC850 = new RegExp(
  `^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-(${MONTH})-(\\d{2}) ${TIME} GMT$`,
);
const ASCTIME = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (${MONTH}) ([ \\d]\\d) ${TIME} (\\d{4})$`);

/** An HTTP-date as epoch ms. RFC 850's two-digit year is read as the nearest past century's. */
export function readHttpDate(text: string | undefined, nowMs: number): number | undefined {
  if (text === undefined) return undefined;
  const month = (name: string | undefined) => MONTHS.indexOf(name as string) + 1;
  let m = IMF_FIXDATE.exec(text);
  if (m) return utc(Number(m[3]), month(m[2]), Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  m = ASCTIME.exec(text);
  if (m) return utc(Number(m[6]), month(m[1]), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]));
  m = RFC850.exec(text);
  if (!m) return undefined;
  // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
  const thisYear = new Date(nowMs).getUTCFullYear();
  let year = Math.floor(thisYear / 100) * 100 + Number(m[3]);
  if (year > thisYear + 50) year -= 100;
  return utc(year, month(m[2]), Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
}

/** A wait until an absolute time (epoch ms), clamped; a time in the past is no wait. */
export function waitUntil(epochMs: number | undefined, nowMs: number): number | undefined {
  return epochMs === undefined ? undefined : clampWait(epochMs - nowMs);
}

const DECIMAL = /^\d+(?:\.\d+)?$/;

/**
 * The pause a response asks for: `retry-after-ms` (milliseconds, as OpenAI's clients read it),
 * else `Retry-After` as delay seconds or an HTTP-date (RFC 9110 §10.2.3).
 */
export function readRetryAfter(get: (name: string) => string | undefined, nowMs: number): number | undefined {
  const ms = get('retry-after-ms');
  if (ms !== undefined && DECIMAL.test(ms)) return clampWait(Number(ms));
  const value = get('retry-after');
  return readDelaySeconds(value) ?? waitUntil(readHttpDate(value, nowMs), nowMs);
}
