/** Store factories' option checks: a misspelt option must fail loudly, not fall back to a default. */
import { describe } from '../duration.js';

/** Throws a TypeError naming the first option of `options` that `known` does not list. */
export function rejectUnknownOptions(factory: string, options: object, known: readonly string[]): void {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`${factory}: expected an options object, got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new TypeError(`${factory}: unknown option '${key}'; the options are ${known.join(', ')}`);
    }
  }
}
