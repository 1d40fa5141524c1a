import fc from 'fast-check';
import { type Item, parseItem, parseList } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { MAX_SF_INTEGER, sfInteger, sfItem, sfList, sfString } from '../../src/http/structured.js';

describe('structured field serializer, held to the structured-headers parser', () => {
  it('serialises any safe integer as a parsable Integer, clamped to 15 digits', () => {
    fc.assert(
      fc.property(fc.oneof(fc.maxSafeInteger(), fc.integer({ min: -1000, max: 1000 })), (value) => {
        const [parsed] = parseItem(sfInteger(value)) as Item;
        expect(parsed).toBe(Math.max(-MAX_SF_INTEGER, Math.min(MAX_SF_INTEGER, value)));
      }),
    );
    expect(sfInteger(Number.MAX_SAFE_INTEGER)).toBe('999999999999999');
    expect(sfInteger(Number.POSITIVE_INFINITY)).toBe('999999999999999');
    expect(sfInteger(-0)).toBe('0');
    expect(sfInteger(1.2)).toBe('2');
    expect(() => sfInteger(Number.NaN)).toThrow(RangeError);
  });

  it('serialises any printable ASCII string as a parsable String', () => {
    const printable = fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    });
    fc.assert(
      fc.property(printable, (value) => {
        const [parsed] = parseItem(sfString(value)) as Item;
        expect(parsed).toBe(value);
      }),
    );
    expect(sfString('a"b\\c')).toBe('"a\\"b\\\\c"');
  });

  it('refuses control characters and non-ASCII in Strings', () => {
    for (const bad of ['a\nb', 'a\rb', '\x00', '\x7f', 'é', '\u2028', 'ключ']) {
      expect(() => sfString(bad)).toThrow(RangeError);
    }
  });

  it('serialises lists of parameterised items that parse back to the same members', () => {
    const name = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/);
    const member = fc.tuple(name, fc.nat(), fc.integer({ min: 1, max: 10 ** 9 }));
    fc.assert(
      fc.property(fc.array(member, { minLength: 1, maxLength: 5 }), (members) => {
        const text = sfList(
          members.map(([n, q, w]) =>
            sfItem(n, [
              ['q', q],
              ['w', w],
            ]),
          ),
        );
        const parsed = parseList(text).map((entry) => {
          const [value, params] = entry as Item;
          return [value, params.get('q'), params.get('w')];
        });
        expect(parsed).toEqual(members.map(([n, q, w]) => [n, Math.min(q, MAX_SF_INTEGER), w]));
      }),
    );
  });

  it('refuses parameter keys RFC 9651 does not allow', () => {
    expect(() => sfItem(1, [['Q', 1]])).toThrow(RangeError);
    expect(() => sfItem(1, [['1a', 1]])).toThrow(RangeError);
  });
});
