/** The LRU map under the memory store and the deny cache, against a plain array model. */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { createLru, type LruEntry } from '../../src/base/lru.js';

type Op = { op: 'set' | 'get' | 'delete' | 'entry' | 'touch'; key: string; value: number };

it('keeps entries, their order of use and its bound exactly like an array model', () => {
  const op = fc.record({
    op: fc.constantFrom(
      'set' as const,
      'get' as const,
      'delete' as const,
      'entry' as const,
      'touch' as const,
    ),
    key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
    value: fc.integer(),
  });
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 5 }), fc.array(op, { maxLength: 80 }), (maxSize, ops: Op[]) => {
      const lru = createLru<number>(maxSize);
      const model: [string, number][] = [];
      // Handles from entry(), live while their key stays in the map; stale ones once it left it.
      const handles = new Map<string, LruEntry<number>>();
      const stale: LruEntry<number>[] = [];
      const drop = (key: string) => {
        const handle = handles.get(key);
        if (handle !== undefined) stale.push(handle);
        handles.delete(key);
      };
      for (const { op, key, value } of ops) {
        const at = model.findIndex(([k]) => k === key);
        const found = at === -1 ? undefined : (model.splice(at, 1)[0] as [string, number]);
        if (op === 'set') {
          lru.set(key, value);
          model.push([key, value]);
          if (model.length > maxSize) drop((model.shift() as [string, number])[0]);
        } else if (op === 'get') {
          expect(lru.get(key)).toBe(found?.[1]);
          if (found) model.push(found);
        } else if (op === 'entry') {
          const handle = lru.entry(key);
          expect(handle?.value).toBe(found?.[1]);
          if (found) {
            model.push(found);
            handles.set(key, handle as LruEntry<number>);
          }
        } else if (op === 'touch') {
          const handle = handles.get(key);
          if (handle !== undefined) {
            expect(lru.touch(handle)).toBe(true);
            expect(handle.value).toBe(found?.[1]);
            model.push(found as [string, number]);
          } else if (found) {
            model.splice(at, 0, found); // nothing to touch: it stays where it was
          }
          // A handle to an entry removed since is refused, even when its key is back.
          for (const old of stale) expect(lru.touch(old)).toBe(false);
        } else {
          lru.delete(key);
          drop(key);
        }
        expect(lru.size).toBe(model.length);
        const oldest = lru.oldest();
        expect(oldest === undefined ? undefined : [oldest.key, oldest.value]).toEqual(model[0]);
      }
    }),
    { numRuns: 300 },
  );
});
