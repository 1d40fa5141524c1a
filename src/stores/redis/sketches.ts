/**
 * The fleet's heavy-hitter sketches on Redis (see stores/types.ts FleetSketches): each merge or
 * read is one call of the sketch script (sketch-script.ts) on the prefix's own hash tag,
 * `<prefix>:{#top:<prefix>}` (`#` never starts an encoded user key, so no key's state shares it).
 * Replies may hold Buffers (the store's client asks for them): keys are read through String().
 */
import type { FleetSketches, Sketch, TopBy, TopEntry } from '../types.js';
import type { Run } from './calls.js';
import { SKETCH_SCRIPT } from './sketch-script.js';

/** The five keys of one measure's sketches: the hash, then two pairs of counts and errors. */
export function sketchKeys(prefix: string, by: TopBy): string[] {
  const base = `${prefix}:{#top:${prefix}}:${by}`;
  return [base, `${base}:0`, `${base}:0:errors`, `${base}:1`, `${base}:1:errors`];
}

/** A sketch's part of the merge's arguments: floor, count of entries, then each entry. */
function sketchArgs(sketch: Sketch): string[] {
  const args = [String(sketch.floor), String(sketch.entries.length)];
  // Redis stores UTF-8: a lone surrogate would not come back as it went in.
  for (const { key, count, error } of sketch.entries)
    args.push(key.toWellFormed(), String(count), String(error));
  return args;
}

/** `{ floor, key, count, error, ... }` as the script answers a read. */
function decodedSketch(reply: unknown): Sketch {
  const flat = Array.isArray(reply) ? reply : [];
  const entries: TopEntry[] = [];
  for (let i = 1; i + 2 < flat.length; i += 3) {
    entries.push({ key: String(flat[i]), count: Number(flat[i + 1]), error: Number(flat[i + 2]) });
  }
  return { floor: Number(flat[0] ?? 0), entries };
}

/** The Redis store's `sketches`, over its script calls, on its clock (`now`: '-1' for the server's TIME). */
export function redisSketches(run: Run, now: () => string): FleetSketches {
  return {
    async merge(prefix, periodMs, capacity, checked, denied) {
      const keys = [...sketchKeys(prefix, 'checked'), ...sketchKeys(prefix, 'denied')];
      const args = [
        'm',
        now(),
        String(periodMs),
        String(capacity),
        ...sketchArgs(checked),
        ...sketchArgs(denied),
      ];
      await run(SKETCH_SCRIPT, keys, args);
    },
    async read(prefix, by, periodMs) {
      const reply = await run(SKETCH_SCRIPT, sketchKeys(prefix, by), ['r', now(), String(periodMs)]);
      return (Array.isArray(reply) ? reply : []).map(decodedSketch);
    },
  };
}
