/**
 * The hello-world HTTP servers of the HTTP scenario, all in one child process so the load
 * generator (autocannon, in the parent) does not share their event loop; only one is loaded at a
 * time, the others sit idle:
 *   node --import tsx bench/support/http-server.ts <redis port>
 * Prints one JSON line once listening: `{"<variant>": {"port": N} | {"skipped": "..."}, ...}`;
 * a Floodgate variant is skipped while its adapter module does not exist. Every limiter admits
 * every request (the limit is far above what a run sends): what is measured is the cost of
 * checking, on one key (the client IP), each variant with its own Redis connection.
 */
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import type { Limiter } from '../../src/index.js';
import { DIST_HTTP_ADAPTERS, floodgate } from './floodgate.js';

const { createAdaptiveLimit, createLimiter, redisStore } = floodgate;

export const HTTP_VARIANTS = [
  'fastify',
  'fastify+@fastify/rate-limit',
  'fastify+floodgate',
  'express',
  'express+express-rate-limit',
  'express+floodgate',
] as const;
/**
 * Floodgate's adapters with an adaptive limit that sheds nothing (its limit fixed far above the
 * load): what the limit costs a request it lets through. Served beside the others; the report's
 * HTTP table does not list them (bench/http-cpu.ts measures them).
 */
export const ADAPTIVE_VARIANTS = ['fastify+floodgate+adaptive', 'express+floodgate+adaptive'] as const;
export type HttpVariant = (typeof HTTP_VARIANTS)[number] | (typeof ADAPTIVE_VARIANTS)[number];

const LIMIT = 1_000_000_000;
const WINDOW_MS = 60_000;
/** Same semantics as both peers (a fixed-window counter); override with BENCH_HTTP_ALGORITHM. */
const ALGORITHM = (process.env.BENCH_HTTP_ALGORITHM ?? 'fixed-window') as 'fixed-window';
/** Where the Floodgate adapters are (the built ones); BENCH_HTTP_ADAPTERS overrides it (a directory of express/fastify .ts or .js). */
const ADAPTERS = process.env.BENCH_HTTP_ADAPTERS ?? DIST_HTTP_ADAPTERS;

class AdapterMissing extends Error {}

async function adapter(name: 'express' | 'fastify'): Promise<Record<string, unknown>> {
  const base = ADAPTERS.includes('://') ? ADAPTERS : pathToFileURL(`${ADAPTERS.replace(/\/?$/, '/')}`).href;
  // Absent means skipped; present but broken must fail loudly, so look for the file, not at the error.
  const source = ['ts', 'js'].map((ext) => new URL(`${name}.${ext}`, base)).find((url) => existsSync(url));
  if (source === undefined) {
    const shown = relative(process.cwd(), fileURLToPath(new URL(`${name}.ts`, base)));
    throw new AdapterMissing(`adapter not present (${shown})`);
  }
  return (await import(new URL(`${name}.js`, base).href)) as Record<string, unknown>;
}

function floodgateLimiter(redis: Redis): Limiter {
  return createLimiter({
    prefix: 'http',
    rules: { name: 'http', algorithm: ALGORITHM, limit: LIMIT, window: WINDOW_MS },
    store: redisStore({ client: redis }),
  });
}

/** The adapters' `adaptive` option for the +adaptive variants: a limit fixed far above the load. */
function adaptiveOption(variant: HttpVariant): { adaptive?: unknown } {
  if (!variant.endsWith('+adaptive')) return {};
  return { adaptive: createAdaptiveLimit({ min: 100_000, initial: 100_000, max: 100_000 }) };
}

async function fastifyApp(variant: HttpVariant, redis: Redis): Promise<{ listen(): Promise<number> }> {
  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: false });
  if (variant === 'fastify+@fastify/rate-limit') {
    const { default: rateLimit } = await import('@fastify/rate-limit');
    await app.register(rateLimit, { max: LIMIT, timeWindow: WINDOW_MS, redis });
  } else if (variant === 'fastify+floodgate' || variant === 'fastify+floodgate+adaptive') {
    const { floodgate } = await adapter('fastify');
    // biome-ignore lint/suspicious/noExplicitAny: the adapter's type is not known until it exists.
    await app.register(floodgate as any, { limiter: floodgateLimiter(redis), ...adaptiveOption(variant) });
  }
  app.get('/', async () => ({ hello: 'world' }));
  return {
    async listen() {
      await app.listen({ port: 0, host: '127.0.0.1' });
      const address = app.server.address();
      return typeof address === 'object' && address !== null ? address.port : 0;
    },
  };
}

async function expressApp(variant: HttpVariant, redis: Redis): Promise<{ listen(): Promise<number> }> {
  const { default: express } = await import('express');
  const app = express();
  if (variant === 'express+express-rate-limit') {
    const { rateLimit } = await import('express-rate-limit');
    const { RedisStore } = await import('rate-limit-redis');
    app.use(
      rateLimit({
        windowMs: WINDOW_MS,
        limit: LIMIT,
        store: new RedisStore({
          sendCommand: (command: string, ...args: string[]) =>
            redis.call(command, ...args) as Promise<number | string>,
        }),
      }),
    );
  } else if (variant === 'express+floodgate' || variant === 'express+floodgate+adaptive') {
    const { rateLimit } = await adapter('express');
    // biome-ignore lint/suspicious/noExplicitAny: the adapter's type is not known until it exists.
    app.use((rateLimit as any)({ limiter: floodgateLimiter(redis), ...adaptiveOption(variant) }));
  }
  app.get('/', (_req, res) => {
    res.json({ hello: 'world' });
  });
  return {
    listen: () =>
      new Promise((resolve, reject) => {
        const server = app.listen(0, '127.0.0.1', (error?: Error) => {
          if (error) return reject(error);
          const address = server.address();
          resolve(typeof address === 'object' && address !== null ? address.port : 0);
        });
      }),
  };
}

export type Started = { port: number; skipped?: undefined } | { port?: undefined; skipped: string };

async function start(variant: HttpVariant, redisPort: number): Promise<Started> {
  const redis = new Redis({ port: redisPort, host: '127.0.0.1' });
  try {
    const app = variant.startsWith('fastify')
      ? await fastifyApp(variant, redis)
      : await expressApp(variant, redis);
    return { port: await app.listen() };
  } catch (error) {
    redis.disconnect();
    if (!(error instanceof AdapterMissing)) throw error;
    return { skipped: error.message };
  }
}

async function main(): Promise<void> {
  const redisPort = Number(process.argv[2]);
  const started: Record<string, Started> = {};
  for (const variant of [...HTTP_VARIANTS, ...ADAPTIVE_VARIANTS])
    started[variant] = await start(variant, redisPort);
  process.stdout.write(`${JSON.stringify(started)}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.on('SIGTERM', () => process.exit(0));
  await main();
}
