/**
 * Command-line plumbing shared by every command: option parsing on node:util parseArgs with
 * errors turned into one-line usage errors, the exit codes scripts rely on, and small parsers
 * for the values the commands take (integers, durations, `120/1m` limits).
 */
import { parseArgs } from 'node:util';
import { parseDuration } from '../index.js';

/** Exit codes: 0 ok, 1 runtime failure (Redis unreachable, upstream down at start...), 2 usage or config error. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A mistake by the user (bad flag, bad value, bad config): printed as one line, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A runtime failure the user can act on (e.g. Redis unreachable): printed as one line, exit code 1. */
export class RuntimeFailure extends Error {
  override readonly name = 'RuntimeFailure';
}

export type OptionSpec = Record<
  string,
  { type: 'string' | 'boolean'; short?: string; multiple?: boolean; default?: string | boolean }
>;

/** The result of parsing: option values by name and the positional arguments. */
export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/**
 * Parses `argv` strictly against `options` (plus `--help`). Unknown options, missing values and
 * extra positionals become a UsageError that names the command.
 */
export function parseCommandArgs(
  command: string,
  argv: readonly string[],
  options: OptionSpec,
  maxPositionals: number,
): Parsed {
  let parsed: Parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    }) as Parsed;
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new UsageError(`floodgate ${command}: ${tidyParseArgsMessage(message ?? '')}`);
  }
  if (!parsed.values.help && parsed.positionals.length > maxPositionals) {
    const extra = parsed.positionals.slice(maxPositionals).join(' ');
    throw new UsageError(`floodgate ${command}: unexpected argument '${extra}'`);
  }
  return parsed;
}

function tidyParseArgsMessage(message: string): string {
  // node's messages end with hints meant for programmers ("To specify a positional argument...").
  return message
    .replace(/\. To specify .*$/, '')
    .replace(/^Option '(.*?)' argument missing$/, "'$1' needs a value");
}

/** A string option, or undefined. */
export function stringOption(parsed: Parsed, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** Parses an integer option in [min, max], naming the flag on error. */
export function integerOption(value: string, flag: string, min: number, max: number): number {
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < min || number > max) {
    throw new UsageError(`${flag}: '${value}' must be an integer from ${min} to ${max}`);
  }
  return number;
}

/** Parses a duration option ('500ms', '10s', '1m', or milliseconds), naming the flag on error. */
export function durationOption(value: string, flag: string): number {
  return asUsageError(() => parseDuration(/^\d+$/.test(value) ? Number(value) : value, flag));
}

/**
 * Parses a limit written as `<count>/<window>`: `120/1m`, `10/s`, `5000/1h`, `100/500ms`.
 * A bare unit means one of it (`10/s` = 10 per second).
 */
export function parseRate(value: string, option: string): { limit: number; windowMs: number } {
  const match = /^\s*(\d+)\s*\/\s*(\d*(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(value);
  if (!match) {
    throw new UsageError(
      `${option}: '${value}' is not a limit; write <count>/<window>, e.g. 120/1m, 10/s or 5000/1h`,
    );
  }
  const limit = Number(match[1]);
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new UsageError(`${option}: '${value}' needs a count of at least 1`);
  }
  const windowMs = asUsageError(() => parseDuration(`${match[2] || '1'}${match[3]}`, option));
  return { limit, windowMs };
}

/** Runs `fn`, turning the core's validation errors (TypeError/RangeError) into UsageErrors. */
export function asUsageError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) throw new UsageError(error.message);
    throw error;
  }
}
