/** The recency list under the memory store, against a plain array model. */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { createLruMap, type LruEntry } from '../../src/stores/lru.js';

type Op = { op: 'set' | 'touch' | 'delete'; key: string; value: number };

it('keeps entries and their order of use exactly like an array model', () => {
  const op = fc.record({
    op: fc.constantFrom('set' as const, 'touch' as const, 'delete' as const),
    key: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
    value: fc.integer(),
  });
  fc.assert(
    fc.property(fc.array(op, { maxLength: 60 }), (ops: Op[]) => {
      const lru = createLruMap<number>();
      const model: [string, number][] = [];
      for (const { op, key, value } of ops) {
        const at = model.findIndex(([k]) => k === key);
        const found = at === -1 ? undefined : (model.splice(at, 1)[0] as [string, number]);
        if (op === 'set') {
          lru.set(key, value);
          model.push([key, value]);
        } else if (op === 'touch') {
          const entry = lru.get(key);
          expect(entry?.value).toBe(found?.[1]);
          if (entry) lru.touch(entry);
          if (found) model.push(found);
        } else {
          lru.delete(key);
        }
        expect(walk(lru.oldest)).toEqual(model);
        expect(lru.size).toBe(model.length);
      }
    }),
  );
});

/** Walks oldest to newest, checking that the links agree in both directions. */
function walk(oldest: LruEntry<number> | undefined): [string, number][] {
  const seen: [string, number][] = [];
  let previous: LruEntry<number> | undefined;
  for (let entry = oldest; entry !== undefined; entry = entry.newer) {
    expect(entry.older).toBe(previous);
    seen.push([entry.key, entry.value]);
    previous = entry;
  }
  return seen;
}
