/**
 * A strict parser for RFC 9651 (Structured Field Values) Lists and Dictionaries, for reading an
 * upstream's RateLimit fields. Written here because the library has no runtime dependencies; the
 * tests hold it to the `structured-headers` parser. Any syntax error fails the whole field
 * (`undefined`), as RFC 9651 §4.2 requires: a malformed field is ignored, never half-read.
 */

/** A Bare Item with its type, so a String `"5"` is never mistaken for the Integer `5`. */
export type SfBare =
  | { readonly type: 'integer' | 'decimal' | 'date'; readonly value: number }
  | { readonly type: 'string' | 'token' | 'bytes' | 'display'; readonly value: string }
  | { readonly type: 'boolean'; readonly value: boolean };

export type SfParameters = ReadonlyMap<string, SfBare>;
export interface SfItem {
  readonly value: SfBare;
  readonly params: SfParameters;
}
export interface SfInnerList {
  readonly items: readonly SfItem[];
  readonly params: SfParameters;
}
export type SfMember = SfItem | SfInnerList;

/** A field longer than this is ignored whole: Node's default limit on all of a response's headers. */
export const MAX_FIELD_LENGTH = 16_384;

const KEY_START = /[a-z*]/;
const KEY_CHAR = /[a-z0-9_.*-]/;
const TOKEN_START = /[A-Za-z*]/;
const TOKEN_CHAR = /[!#$%&'*+.^_`|~0-9A-Za-z:/-]/;
const BASE64_CHAR = /[A-Za-z0-9+/=]/;
/** Decodable base64: padded to a multiple of 4, or unpadded and not one character past one. */
const isBase64 = (text: string): boolean =>
  text.includes('=') ? /^[A-Za-z0-9+/]*={1,2}$/.test(text) && text.length % 4 === 0 : text.length % 4 !== 1;
const DIGIT = /[0-9]/;
const LOWER_HEX = /^[0-9a-f]{2}$/;

class Malformed extends Error {}

/** One pass over a field's text; every parse step throws `Malformed` on the first bad character. */
function cursor(text: string) {
  let at = 0;
  const peek = (): string => text[at] ?? '';
  const fail = (): never => {
    throw new Malformed();
  };
  const take = (expected: string): void => {
    if (text[at] !== expected) fail();
    at += 1;
  };
  const skip = (chars: string): void => {
    while (at < text.length && chars.includes(text[at] as string)) at += 1;
  };

  function key(): string {
    if (!KEY_START.test(peek())) fail();
    const start = at;
    while (at < text.length && KEY_CHAR.test(peek())) at += 1;
    return text.slice(start, at);
  }

  function number(): { type: 'integer' | 'decimal'; value: number } {
    const start = at;
    if (peek() === '-') at += 1;
    if (!DIGIT.test(peek())) fail();
    let digits = 0;
    let point = -1;
    while (at < text.length) {
      const char = peek();
      if (DIGIT.test(char)) digits += 1;
      else if (char === '.' && point < 0 && digits <= 12) point = digits;
      else break;
      at += 1;
      if (digits > 15) fail();
    }
    if (point < 0) return { type: 'integer', value: Number(text.slice(start, at)) };
    const fraction = digits - point;
    if (fraction < 1 || fraction > 3) fail();
    return { type: 'decimal', value: Number(text.slice(start, at)) };
  }

  function string(): string {
    take('"');
    let out = '';
    while (at < text.length) {
      const char = text[at++] as string;
      if (char === '"') return out;
      if (char === '\\') {
        const next = text[at++];
        if (next !== '"' && next !== '\\') fail();
        out += next;
      } else if (char < '\x20' || char > '\x7e') fail();
      else out += char;
    }
    return fail();
  }

  function delimited(open: string, close: string, allowed: (char: string) => boolean): string {
    take(open);
    const start = at;
    while (at < text.length && text[at] !== close) {
      if (!allowed(text[at] as string)) fail();
      at += 1;
    }
    const inside = text.slice(start, at);
    take(close);
    return inside;
  }

  function display(): string {
    take('%');
    const encoded = delimited('"', '"', (char) => char >= '\x20' && char <= '\x7e');
    const bytes: number[] = [];
    for (let i = 0; i < encoded.length; i += 1) {
      if (encoded[i] !== '%') {
        bytes.push(encoded.charCodeAt(i));
        continue;
      }
      const hex = encoded.slice(i + 1, i + 3);
      if (!LOWER_HEX.test(hex)) fail();
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    }
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(bytes));
    } catch {
      return fail();
    }
  }

  function bare(): SfBare {
    const char = peek();
    if (char === '-' || DIGIT.test(char)) return number();
    if (char === '"') return { type: 'string', value: string() };
    if (char === ':') {
      const value = delimited(':', ':', (c) => BASE64_CHAR.test(c));
      if (!isBase64(value)) fail();
      return { type: 'bytes', value };
    }
    if (char === '%') return { type: 'display', value: display() };
    if (char === '?') {
      at += 1;
      const bit = text[at++];
      if (bit !== '0' && bit !== '1') fail();
      return { type: 'boolean', value: bit === '1' };
    }
    if (char === '@') {
      at += 1;
      const date = number();
      if (date.type !== 'integer') fail();
      return { type: 'date', value: date.value };
    }
    if (!TOKEN_START.test(char)) fail();
    const start = at;
    while (at < text.length && TOKEN_CHAR.test(peek())) at += 1;
    return { type: 'token', value: text.slice(start, at) };
  }

  function params(): SfParameters {
    const out = new Map<string, SfBare>();
    while (peek() === ';') {
      at += 1;
      skip(' ');
      const name = key();
      let value: SfBare = { type: 'boolean', value: true };
      if (peek() === '=') {
        at += 1;
        value = bare();
      }
      out.set(name, value);
    }
    return out;
  }

  function item(): SfItem {
    return { value: bare(), params: params() };
  }

  function member(): SfMember {
    if (peek() !== '(') return item();
    at += 1;
    const items: SfItem[] = [];
    for (;;) {
      skip(' ');
      if (peek() === ')') {
        at += 1;
        return { items, params: params() };
      }
      items.push(item());
      if (peek() !== ' ' && peek() !== ')') fail();
    }
  }

  /** Members separated by commas, then the end of the text; `entry` parses one member. */
  function members(entry: () => void): void {
    skip(' ');
    while (at < text.length) {
      entry();
      skip(' \t');
      if (at >= text.length) return;
      take(',');
      skip(' \t');
      if (at >= text.length) fail();
    }
  }

  return { key, member, params, members, peek, next: () => (at += 1) };
}

function guarded<T>(text: string | undefined, parse: (text: string) => T): T | undefined {
  if (text === undefined || text.length > MAX_FIELD_LENGTH) return undefined;
  try {
    let end = text.length;
    while (end > 0 && text[end - 1] === ' ') end -= 1;
    return parse(text.slice(0, end));
  } catch (error) {
    if (error instanceof Malformed) return undefined;
    throw error;
  }
}

/** Parses a List field, or `undefined` when it is absent, too long or malformed anywhere. */
export function parseSfList(text: string | undefined): SfMember[] | undefined {
  return guarded(text, (field) => {
    const read = cursor(field);
    const out: SfMember[] = [];
    read.members(() => out.push(read.member()));
    return out;
  });
}

/** Parses a Dictionary field, or `undefined` when it is absent, too long or malformed anywhere. */
export function parseSfDictionary(text: string | undefined): Map<string, SfMember> | undefined {
  return guarded(text, (field) => {
    const read = cursor(field);
    const out = new Map<string, SfMember>();
    read.members(() => {
      const name = read.key();
      if (read.peek() === '=') {
        read.next();
        out.set(name, read.member());
      } else {
        out.set(name, { value: { type: 'boolean', value: true }, params: read.params() });
      }
    });
    return out;
  });
}

/** Parses a single Item field (draft-6's `RateLimit-Remaining: 5`), or `undefined`. */
export function parseSfItem(text: string | undefined): SfItem | undefined {
  const list = parseSfList(text);
  const only = list?.length === 1 ? list[0] : undefined;
  return only && 'value' in only ? only : undefined;
}
