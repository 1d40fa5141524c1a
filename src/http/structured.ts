/**
 * The small part of RFC 9651 (Structured Field Values) the rate-limit headers need: Integers,
 * Strings, parameters and Lists. Written here rather than loading a library at run time; the
 * tests hold it to the `structured-headers` parser, so every field we emit parses.
 */

/** RFC 9651 §3.3.1: Integers have at most 15 decimal digits. */
export const MAX_SF_INTEGER = 999_999_999_999_999;

/** A bare item we serialise: an Integer (a JS number) or a String (a JS string). */
export type BareItem = number | string;

/** Serialises an Integer, clamped into the range RFC 9651 allows (non-integers are rounded up). */
export function sfInteger(value: number): string {
  if (Number.isNaN(value)) throw new RangeError(`sfInteger: NaN is not an Integer`);
  const clamped = Math.min(MAX_SF_INTEGER, Math.max(-MAX_SF_INTEGER, Math.ceil(value)));
  return String(clamped === 0 ? 0 : clamped);
}

const SF_STRING = /^[\x20-\x7E]*$/;

/** Serialises a String: printable ASCII only, `"` and `\` escaped; anything else is refused. */
export function sfString(value: string): string {
  if (!SF_STRING.test(value)) {
    throw new RangeError(
      `sfString: ${JSON.stringify(value)} has characters a Structured Field String cannot carry`,
    );
  }
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}

const SF_KEY = /^[a-z*][a-z0-9_.*-]*$/;

function bare(value: BareItem): string {
  return typeof value === 'number' ? sfInteger(value) : sfString(value);
}

/** Serialises an Item with its parameters: `"name";q=10;w=60`. */
export function sfItem(value: BareItem, parameters: ReadonlyArray<readonly [string, BareItem]> = []): string {
  let out = bare(value);
  for (const [key, parameter] of parameters) {
    if (!SF_KEY.test(key)) throw new RangeError(`sfItem: ${JSON.stringify(key)} is not a parameter key`);
    out += `;${key}=${bare(parameter)}`;
  }
  return out;
}

/** Joins serialised members into a List. */
export function sfList(members: readonly string[]): string {
  return members.join(', ');
}
