/**
 * Floodgate as its users run it: the built package in dist/ (`npm run bench` builds it first),
 * typed by its sources. Running the sources through tsx instead adds a `__name` wrapper to every
 * function expression (esbuild's keepNames), which measured ~2x slower on the memory store's
 * per-check closures: a handicap no user has.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type * as Floodgate from '../../src/index.js';

const DIST = new URL('../../dist/esm/', import.meta.url);

if (!existsSync(new URL('index.js', DIST))) {
  throw new Error(
    `bench: ${fileURLToPath(DIST)} is missing; run \`npm run build\` first (npm run bench does)`,
  );
}

/** The built package's directory of HTTP adapters (express.js, fastify.js, ...). */
export const DIST_HTTP_ADAPTERS = new URL('http/', DIST).href;

export const floodgate: typeof Floodgate = await import(new URL('index.js', DIST).href);
