/**
 * The shape check every options object goes through (limiter, rules, stores, adapters, check
 * options): a misspelt option must fail loudly at construction, not fall back to a default.
 */
import { describe } from './describe.js';

export interface OptionsShape {
  /** Starts every message: the factory or option path (`createLimiter`, `rules[0]`). */
  readonly owner: string;
  /** What a valid value looks like, for "<owner>: expected <expected>, got <value>". */
  readonly expected: string;
  /** The option names allowed. */
  readonly known: ReadonlySet<string>;
  /** Rejects arrays too, where a list is a likely mistake for the object. */
  readonly rejectArrays?: boolean;
  /** The message for an unknown name (default: "<owner>: unknown option '<name>'; the options are …"). */
  readonly unknown?: (name: string, known: string) => string;
}

/** Throws a TypeError unless `input` is an object whose every own name `shape.known` lists. */
export function checkOptions(input: unknown, shape: OptionsShape): asserts input is object {
  if (typeof input !== 'object' || input === null || (shape.rejectArrays === true && Array.isArray(input))) {
    throw new TypeError(`${shape.owner}: expected ${shape.expected}, got ${describe(input)}`);
  }
  for (const name of Object.keys(input)) {
    if (!shape.known.has(name)) {
      const list = [...shape.known].join(', ');
      throw new TypeError(
        shape.unknown?.(name, list) ?? `${shape.owner}: unknown option '${name}'; the options are ${list}`,
      );
    }
  }
}
