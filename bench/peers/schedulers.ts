/**
 * Job schedulers for the scheduler scenario: Floodgate's `createScheduler` (memory store, and a
 * Redis store per simulated process), p-queue (one process only: it has no shared store) and
 * Bottleneck (its local mode, and its Redis "clustering" mode). Each is configured to the same
 * limit, `limit` jobs per `windowMs`, the way its documentation says to.
 */
import Bottleneck from 'bottleneck';
import { Redis } from 'ioredis';
import PQueue from 'p-queue';
import type { RedisServer } from '../support/redis.js';
import type { Role } from './types.js';

/** One job: it calls the upstream and hands back its answer, which a scheduler may learn from. */
export type Job = () => { status: number; headers: Record<string, string> };

/** One simulated process's scheduler. */
export interface ScheduleInstance {
  schedule(job: Job): Promise<unknown>;
  close(): Promise<void>;
}

export interface SchedulerSetup {
  limit: number;
  windowMs: number;
  server: RedisServer;
  /** Distinct per run, so no run sees another's state. */
  prefix: string;
  /** Whether the run needs the limit held in every window (Floodgate's sliding log) or only its cost (fixed window). */
  exact: boolean;
}

export interface SchedulerContender {
  name: string;
  role: Role;
  /** Whether instances share one limit through Redis (then several simulated processes run). */
  shared: boolean;
  /** A reason this build or peer cannot run, or undefined. */
  unavailable?(): Promise<string | undefined>;
  create(setup: SchedulerSetup): Promise<ScheduleInstance>;
}

interface FloodgateScheduler {
  schedule<T>(fn: (grant: { observe(response: unknown): void }) => T, options?: object): Promise<T>;
  close(): Promise<void>;
}
type CreateScheduler = (options: object) => FloodgateScheduler;

async function floodgateModule() {
  return (await import('../support/floodgate.js')).floodgate;
}

async function createSchedulerOf(): Promise<CreateScheduler | undefined> {
  const module = (await floodgateModule()) as unknown as { createScheduler?: CreateScheduler };
  return module.createScheduler;
}

function floodgate(name: string, store: 'memory' | 'redis'): SchedulerContender {
  return {
    name,
    role: 'floodgate',
    shared: store === 'redis',
    async unavailable() {
      return (await createSchedulerOf()) ? undefined : 'createScheduler not in this build';
    },
    async create({ limit, windowMs, server, prefix, exact }) {
      const { memoryStore, redisStore } = await floodgateModule();
      const createScheduler = (await createSchedulerOf()) as CreateScheduler;
      const client = store === 'redis' ? new Redis({ port: server.port, host: '127.0.0.1' }) : undefined;
      const scheduler = createScheduler({
        store: client ? redisStore({ client }) : memoryStore(),
        prefix,
        // The exact log never starts more than the limit in any window, however the upstream's windows fall.
        rules: {
          name: 'upstream',
          algorithm: exact ? 'sliding-log' : 'fixed-window',
          limit,
          window: windowMs,
        },
        headers: 'openai',
      });
      return {
        schedule: (job) =>
          scheduler.schedule((grant) => {
            const answer = job();
            grant.observe(answer);
            return answer;
          }),
        async close() {
          await scheduler.close();
          client?.disconnect();
        },
      };
    },
  };
}

function pQueue(strict: boolean): SchedulerContender {
  return {
    name: strict ? 'p-queue (strict)' : 'p-queue',
    role: 'peer',
    shared: false,
    async create({ limit, windowMs }) {
      const queue = new PQueue({ intervalCap: limit, interval: windowMs, strict });
      return {
        schedule: (job) => queue.add(job),
        async close() {
          queue.clear();
          await queue.onIdle();
        },
      };
    },
  };
}

function bottleneck(redis: boolean): SchedulerContender {
  return {
    name: redis ? 'Bottleneck (Redis clustering)' : 'Bottleneck (local)',
    role: 'peer',
    shared: redis,
    async create(setup) {
      const limiter = new Bottleneck(bottleneckOptions(redis, setup));
      await limiter.ready();
      return {
        schedule: (job) => limiter.schedule(async () => job()),
        async close() {
          await limiter.disconnect(false);
        },
      };
    },
  };
}

/** floodgate/bottleneck from the built package, or undefined in a build without it. */
async function floodgateBottleneck(): Promise<typeof Bottleneck | undefined> {
  try {
    return (await import(new URL('../../dist/esm/bottleneck/index.js', import.meta.url).href)).default;
  } catch {
    return undefined;
  }
}

/** Bottleneck's options for the scenario's limit: a reservoir refilled every window, shared by `id` on Redis. */
function bottleneckOptions(redis: boolean, { limit, windowMs, server, prefix }: SchedulerSetup) {
  return {
    reservoir: limit,
    reservoirRefreshAmount: limit,
    reservoirRefreshInterval: windowMs,
    ...(redis
      ? { id: prefix, datastore: 'ioredis', clientOptions: { host: '127.0.0.1', port: server.port } }
      : {}),
  };
}

/** floodgate/bottleneck configured exactly as Bottleneck above, local or clustering on Redis. */
function floodgateBottleneckContender(redis: boolean): SchedulerContender {
  return {
    name: redis ? 'floodgate/bottleneck (Redis clustering)' : 'floodgate/bottleneck (local)',
    role: 'floodgate',
    shared: redis,
    async unavailable() {
      return (await floodgateBottleneck()) ? undefined : 'floodgate/bottleneck not in this build';
    },
    async create(setup) {
      const Class = (await floodgateBottleneck()) as typeof Bottleneck;
      const limiter = new Class(bottleneckOptions(redis, setup));
      await limiter.ready();
      return {
        schedule: (job) => limiter.schedule(async () => job()),
        async close() {
          await limiter.disconnect(false);
        },
      };
    },
  };
}

export const SCHEDULER_CONTENDERS: readonly SchedulerContender[] = [
  floodgate('floodgate createScheduler (memory)', 'memory'),
  floodgate('floodgate createScheduler (Redis)', 'redis'),
  pQueue(false),
  pQueue(true),
  bottleneck(false),
  bottleneck(true),
  floodgateBottleneckContender(false),
  floodgateBottleneckContender(true),
];
