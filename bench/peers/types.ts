/**
 * What the scenarios drive: a named contender that, given a Redis client and a policy, yields a
 * `check(key)` resolving to "allowed". Floodgate, its peers and the physical ceilings all have
 * this one shape, so every scenario treats them alike.
 */
import type { Redis, RedisOptions } from 'ioredis';

/** `floodgate` rows are the subject; `peer` rows are what they are compared with; `ceiling` rows bound both. */
export type Role = 'floodgate' | 'peer' | 'ceiling';

/** The same limit for everyone: `limit` units per `windowMs` (whole seconds, for peers that count in seconds). */
export interface Policy {
  limit: number;
  windowMs: number;
}

export type Check = (key: string) => Promise<boolean>;

export interface Contender {
  /** Row label in the report. */
  name: string;
  /** Column label when this contender is a ratio's denominator. */
  short: string;
  role: Role;
  /** Builds a check on `client` (a fresh plain ioredis connection) for `policy`. */
  create(client: Redis, policy: Policy): Promise<Check> | Check;
  /** Ceilings only: the work is the same whatever the key, so one run serves every workload. */
  keyIndependent?: boolean;
  /** Options for this contender's client; default: none (a plain client). */
  clientOptions?: RedisOptions;
}

/** An in-process limiter: no Redis at all. */
export interface MemoryContender {
  name: string;
  short: string;
  role: Role;
  create(policy: Policy): { check: Check; close?: () => void };
}
