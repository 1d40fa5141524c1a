/**
 * Durations: one parser for every option that takes a length of time, so every such option
 * accepts the same forms and fails with the same kind of message.
 */
import { describe } from './describe.js';

/** A duration: a whole number of milliseconds, or a string such as `'500ms'`, `'10s'`, `'1m'`, `'1h'`, `'1d'`. */
export type Duration = number | `${number}${DurationUnit}` | `${number} ${DurationUnit}`;
export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

const UNIT_MS: Record<DurationUnit, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;

/**
 * Parses a duration into whole milliseconds.
 *
 * @param option the option's name, used in the error message (e.g. `rules[1].window`).
 * @param allowZero whether `0` is a valid value (timeouts may be zero, windows may not).
 * @throws RangeError naming the option, the value and the allowed forms.
 * @example parseDuration('10s', 'window') // 10000
 */
export function parseDuration(value: unknown, option: string, allowZero = false): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const match = DURATION_PATTERN.exec(value.trim());
    if (!match) {
      throw new RangeError(
        `${option}: ${JSON.stringify(value)} is not a duration; use a number of milliseconds or a string such as '500ms', '10s', '1m', '1h', '1d'`,
      );
    }
    ms = Number(match[1]) * UNIT_MS[match[2] as DurationUnit];
  } else {
    throw new TypeError(
      `${option}: expected a duration (milliseconds or a string such as '10s'), got ${describe(value)}`,
    );
  }
  const min = allowZero ? 0 : 1;
  if (!Number.isSafeInteger(ms) || ms < min) {
    throw new RangeError(
      `${option}: ${describe(value)} must be a whole number of milliseconds >= ${min} and at most ${Number.MAX_SAFE_INTEGER}`,
    );
  }
  return ms;
}
