import fc from 'fast-check';
import {
  type BareItem,
  DisplayString,
  type InnerList,
  type Item,
  type Parameters,
  parseDictionary,
  parseList,
  Token,
} from 'structured-headers';
import { describe, expect, it } from 'vitest';
import {
  MAX_FIELD_LENGTH,
  parseSfDictionary,
  parseSfItem,
  parseSfList,
  type SfBare,
  type SfMember,
  type SfParameters,
} from '../../src/scheduler/structured-parse.js';

/** Both parsers' answers in one plain shape, so they compare with toEqual. */
function plainOurs(bare: SfBare): unknown {
  if (bare.type === 'integer' || bare.type === 'decimal' || bare.type === 'string' || bare.type === 'boolean')
    return bare.value;
  if (bare.type === 'bytes') return `bytes:${Buffer.from(bare.value, 'base64').toString('hex')}`;
  return `${bare.type}:${bare.value}`;
}
function plainTheirs(bare: BareItem): unknown {
  if (bare instanceof Token) return `token:${bare.toString()}`;
  if (bare instanceof DisplayString) return `display:${bare.toString()}`;
  if (bare instanceof Date) return `date:${bare.getTime() / 1000}`;
  if (bare instanceof ArrayBuffer) return `bytes:${Buffer.from(bare).toString('hex')}`;
  return bare;
}
const oursParams = (params: SfParameters) => [...params].map(([k, v]) => [k, plainOurs(v)]);
const theirsParams = (params: Parameters) => [...params].map(([k, v]) => [k, plainTheirs(v as BareItem)]);
function oursMember(member: SfMember): unknown {
  if ('value' in member) return [plainOurs(member.value), oursParams(member.params)];
  return [member.items.map(oursMember), oursParams(member.params)];
}
function theirsMember(member: Item | InnerList): unknown {
  if (Array.isArray(member[0])) return [(member[0] as Item[]).map(theirsMember), theirsParams(member[1])];
  return [plainTheirs(member[0] as BareItem), theirsParams(member[1])];
}
function theirs<T>(parse: () => T): T | 'malformed' {
  try {
    return parse();
  } catch {
    return 'malformed';
  }
}
function compareList(text: string): void {
  const expected = theirs(() => parseList(text));
  const actual = parseSfList(text);
  if (expected === 'malformed') expect(actual, text).toBeUndefined();
  else expect(actual?.map(oursMember), text).toEqual(expected.map(theirsMember));
}
function compareDictionary(text: string): void {
  const expected = theirs(() => parseDictionary(text));
  const actual = parseSfDictionary(text);
  if (expected === 'malformed') expect(actual, text).toBeUndefined();
  else
    expect(actual && [...actual].map(([k, m]) => [k, oursMember(m)]), text).toEqual(
      [...expected].map(([k, m]) => [k, theirsMember(m)]),
    );
}

const SAMPLES = [
  '"default";r=50;t=30',
  // Byte sequences that are not decodable base64 (a property run found the first).
  ':/:',
  'a;pk=:abcde:',
  'a;pk=:abcd=:',
  'a;pk=:ab==:',
  'burst;q=100;w=60,"daily";q=1000;w=86400',
  '"permin";q=50;w=60;qu="request";pk=:cHsdsRa894==:',
  '10;w=1, 50;w=60',
  '  "a";r=1 ,  "b";r=2  ',
  '("a" "b");x=1, ?1;y=?0, 1.5, -3, %"caf%c3%a9", @1659578233',
  'limit=100, remaining=25, reset=5',
  'a, b;c, d=?0',
  '"a";r=1,',
  '"a";r=1,,"b"',
  '"a";R=1',
  '"unterminated',
  '"bad\\x"',
  '1234567890123456',
  '123456789012.123',
  '1234567890123.1',
  '1.1234',
  '1.',
  ':not base64!:',
  '%"caf%C3%A9"',
  '%"%ff"',
  '?2',
  '@1.5',
  '( "a""b")',
  '"a";r=1;r=2',
  '',
  ' ',
  '\t"a"',
  '"é"',
];

describe('structured field parser, held to the structured-headers parser', () => {
  it('agrees on real and edge-case RateLimit fields, as Lists and as Dictionaries', () => {
    for (const text of SAMPLES) {
      compareList(text);
      compareDictionary(text);
    }
  });

  it('agrees on random fields made of structured-field characters', () => {
    const alphabet = fc.constantFrom(...' ,;=()"\\:?%*-._/!#abqrtwyz019AZé\t'.split(''));
    const field = fc.string({ unit: alphabet, maxLength: 24 });
    fc.assert(
      fc.property(field, (text) => {
        compareList(text);
        compareDictionary(text);
      }),
      { numRuns: 3000 },
    );
  });

  it('agrees on random well-formed-looking RateLimit lists', () => {
    const name = fc.oneof(fc.stringMatching(/^[a-z][a-z0-9-]{0,6}$/), fc.stringMatching(/^"[ -!#-~]{0,6}"$/));
    const param = fc.tuple(
      fc.constantFrom('q', 'r', 't', 'w', 'pk', 'qu'),
      fc.integer({ min: -99, max: 1e6 }),
    );
    const item = fc
      .tuple(name, fc.array(param, { maxLength: 4 }))
      .map(([n, ps]) => `${n}${ps.map(([k, v]) => `;${k}=${v}`).join('')}`);
    fc.assert(
      fc.property(fc.array(item, { minLength: 1, maxLength: 5 }), (items) => compareList(items.join(', '))),
      { numRuns: 500 },
    );
  });

  it('reads a Date anywhere in a list (structured-headers 2.1.0 refuses anything after one, against RFC 9651)', () => {
    expect(parseSfList('@1659578233, 2')?.map(oursMember)).toEqual([
      ['date:1659578233', []],
      [2, []],
    ]);
    expect(parseSfList('@1.5')).toBeUndefined();
  });

  it('reads a single Item, and nothing from a list of two or an inner list', () => {
    expect(parseSfItem('42')).toEqual({ value: { type: 'integer', value: 42 }, params: new Map() });
    expect(parseSfItem('42;w=1')?.params.get('w')).toEqual({ type: 'integer', value: 1 });
    expect(parseSfItem('1, 2')).toBeUndefined();
    expect(parseSfItem('(1 2)')).toBeUndefined();
    expect(parseSfItem('')).toBeUndefined();
    expect(parseSfItem(undefined)).toBeUndefined();
  });

  it('ignores a field longer than its cap whole, and parses a long run of spaces quickly', () => {
    const long = Array.from({ length: 2000 }, (_, i) => `"p${i}";r=1`).join(', ');
    expect(long.length).toBeGreaterThan(MAX_FIELD_LENGTH);
    expect(parseSfList(long)).toBeUndefined();
    expect(parseSfList(`${' '.repeat(MAX_FIELD_LENGTH - 2)}1`)).toHaveLength(1);
    expect(parseSfList(`1${' '.repeat(MAX_FIELD_LENGTH - 1)}`)).toHaveLength(1);
    expect(parseSfList(`1${' '.repeat(MAX_FIELD_LENGTH - 2)}x`)).toBeUndefined();
  });
});
