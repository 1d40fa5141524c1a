/**
 * Keys a client might choose, for the slot-spread tests: ordinary ids and hostile ones (brace
 * injection, very long, binary-looking). Generated from a fixed seed so a failure reproduces.
 */
import { ALGORITHMS } from '../../src/algorithms/index.js';
import { keyHead } from '../../src/base/key-encoding.js';
import { mulberry32 } from '../../src/cli/compare/scenarios.js';
import type { Limiter } from '../../src/index.js';

/** The key whose slot the injection family tries to reach. */
export const VICTIM = 'victim';

export interface KeyFamily {
  readonly name: string;
  readonly keys: string[];
}

/** 10,000 keys in four families. */
export function clientKeys(seed = 20_261_129): KeyFamily[] {
  const random = mulberry32(seed);
  const int = (max: number) => Math.floor(random() * max);
  const hex = (length: number) => Array.from({ length }, () => int(16).toString(16)).join('');

  const ids = Array.from({ length: 4000 }, (_, i) => {
    switch (i % 5) {
      case 0:
        return `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
      case 1:
        return `user_${int(10_000_000)}`;
      case 2:
        return `${int(256)}.${int(256)}.${int(256)}.${int(256)}`;
      case 3:
        return `2001:db8::${hex(4)}:${hex(4)}`;
      default:
        return `org-${int(1000)}:key-${hex(16)}`;
    }
  });

  const injections = Array.from({ length: 2000 }, (_, i) => {
    const forms = [
      `${VICTIM}}${i}`,
      `{${VICTIM}}${i}`,
      `${i}{${VICTIM}}`,
      `x${i}}{${VICTIM}`,
      `{}${i}`,
      `}{${i}`,
      `{${i}}`,
      `{{${VICTIM}}}${i}`,
      `%7B${VICTIM}%7D${i}`,
      `${VICTIM}${'}'.repeat((i % 5) + 1)}${i}`,
    ];
    return forms[i % forms.length] as string;
  });

  const long = Array.from({ length: 1000 }, (_, i) => {
    switch (i % 3) {
      case 0:
        return 'a'.repeat(129 + i);
      case 1:
        return `{${VICTIM}}${'x'.repeat(200)}${i}`;
      default:
        return Array.from({ length: 150 + int(2000) }, () => String.fromCharCode(32 + int(95))).join('');
    }
  });

  const binary = Array.from({ length: 3000 }, (_, i) => {
    const length = 1 + int(40);
    switch (i % 3) {
      case 0:
        // Bytes as Latin-1: NUL, CR, LF, DEL, 0x80-0xFF.
        return Array.from({ length }, () => String.fromCharCode(int(256))).join('');
      case 1:
        // Any UTF-16 code units, lone surrogates included.
        return Array.from({ length }, () => String.fromCharCode(int(65536))).join('');
      default:
        return `\u0000${i}\r\n{\u00ff}🔥`;
    }
  });

  return [
    { name: 'ids', keys: ids },
    { name: 'brace injection', keys: injections },
    { name: 'very long', keys: long },
    { name: 'binary-looking', keys: binary },
  ];
}

/** Names of the Redis keys `limiter` writes for `key`. */
export function redisKeys(limiter: Limiter, key: string): string[] {
  const head = keyHead(limiter.prefix, key);
  return limiter.rules.flatMap((rule) => {
    const algorithm = ALGORITHMS[rule.algorithm];
    return algorithm.keySuffixes.map((suffix) => `${head}:${rule.name}:${algorithm.tag}${suffix}`);
  });
}
