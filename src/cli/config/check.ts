/**
 * Small validators for the gateway's config file. Each names the exact field it rejects
 * (`routes[2].limit: ...`), so a bad config fails at start with a message that points at it.
 */
import { parseDuration } from '../../index.js';
import { describe } from '../../internal.js';
import { UsageError } from '../args.js';

/** A configuration mistake: exit code 2, one line naming the field. */
export class ConfigError extends UsageError {}

export function fail(path: string, message: string): never {
  throw new ConfigError(`${path}: ${message}`);
}

export type Fields = Record<string, unknown>;

/** Field → label for fields that came from a flag, so errors name the flag. */
export type Labels = Partial<Record<string, string>>;

/** An HTTP header name (RFC 9110 token). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** An object with only the given keys. */
export function objectAt(value: unknown, path: string, keys: readonly string[]): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(path, `expected an object, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!keys.includes(key)) fail(join(path, key), `unknown field; expected one of ${keys.join(', ')}`);
  }
  return value as Fields;
}

/** `parent.key`, or `key` at the top level. */
export function join(path: string, key: string): string {
  const safe = /^[A-Za-z_$][\w$-]*$/.test(key) ? key : JSON.stringify(key);
  if (path === '') return safe;
  return safe.startsWith('"') ? `${path}[${safe}]` : `${path}.${safe}`;
}

export function stringAt(value: unknown, path: string, pattern?: RegExp, hint?: string): string {
  if (typeof value !== 'string' || value.length === 0)
    fail(path, `expected a non-empty string, got ${describe(value)}`);
  if (pattern !== undefined && !pattern.test(value))
    fail(path, `${describe(value)} ${hint ?? `must match ${pattern}`}`);
  return value;
}

export function booleanAt(value: unknown, path: string): boolean {
  if (typeof value !== 'boolean') fail(path, `expected true or false, got ${describe(value)}`);
  return value;
}

export function integerAt(value: unknown, path: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    fail(path, `${describe(value)} must be an integer from ${min} to ${max}`);
  }
  return value;
}

export function durationAt(value: unknown, path: string, allowZero = false): number {
  try {
    return parseDuration(value, path, allowZero);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}

export function oneOf<T extends string>(value: unknown, path: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    fail(path, `${describe(value)} is not one of ${allowed.map((item) => `'${item}'`).join(', ')}`);
  }
  return value as T;
}

export function arrayAt(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) fail(path, `expected a list, got ${describe(value)}`);
  return value;
}

/** Runs a core validator (which throws TypeError/RangeError naming the option) as a ConfigError. */
export function core<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) throw new ConfigError(error.message);
    throw error;
  }
}
