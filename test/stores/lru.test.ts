/** The LRU map under the memory store and the deny cache, against a plain array model. */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { createLru } from '../../src/lru.js';

type Op = { op: 'set' | 'get' | 'delete'; key: string; value: number };

it('keeps entries, their order of use and its bound exactly like an array model', () => {
  const op = fc.record({
    op: fc.constantFrom('set' as const, 'get' as const, 'delete' as const),
    key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
    value: fc.integer(),
  });
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 5 }), fc.array(op, { maxLength: 80 }), (maxSize, ops: Op[]) => {
      const lru = createLru<number>(maxSize);
      const model: [string, number][] = [];
      for (const { op, key, value } of ops) {
        const at = model.findIndex(([k]) => k === key);
        const found = at === -1 ? undefined : (model.splice(at, 1)[0] as [string, number]);
        if (op === 'set') {
          lru.set(key, value);
          model.push([key, value]);
          if (model.length > maxSize) model.shift();
        } else if (op === 'get') {
          expect(lru.get(key)).toBe(found?.[1]);
          if (found) model.push(found);
        } else {
          lru.delete(key);
        }
        expect(lru.size).toBe(model.length);
        const oldest = lru.oldest();
        expect(oldest === undefined ? undefined : [oldest.key, oldest.value]).toEqual(model[0]);
      }
    }),
    { numRuns: 300 },
  );
});
