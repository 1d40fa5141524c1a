/**
 * A ShouldRateLimit request, checked and bounded before anything reaches a limiter: it comes
 * decoded from gRPC (proto-loader, camelCase) or parsed from JSON (`POST /json`, which also
 * accepts the proto's snake_case names). Anything malformed is an InvalidRequest (gRPC
 * INVALID_ARGUMENT, HTTP 400) naming the field; nothing a client sends can throw anything else.
 */
import { describe } from '../../../internal.js';
import type { Entry } from './match.js';

/** A request the service refuses: answered INVALID_ARGUMENT (gRPC) or 400 (JSON). */
export class InvalidRequest extends Error {}

export interface RlsDescriptor {
  readonly entries: readonly Entry[];
  /** The descriptor's own hits_addend (overrides the request's); 0 checks without counting. */
  readonly hitsAddend: number | undefined;
}

export interface RlsRequest {
  readonly domain: string;
  readonly descriptors: readonly RlsDescriptor[];
  /** The request's hits_addend; 0 (unset) counts 1, as Envoy documents. */
  readonly hitsAddend: number;
}

/** Bounds on what one request may carry: far above what Envoy sends, low enough to bound the work. */
export const REQUEST_BOUNDS = {
  descriptors: 64,
  entries: 32,
  /** Characters of a domain, an entry key or an entry value. */
  text: 1024,
  /** Envoy's own bound on hits_addend. */
  hits: 1_000_000_000,
} as const;

type Fields = Record<string, unknown>;

export function parseRlsRequest(input: unknown): RlsRequest {
  const fields = objectAt(input, 'request');
  const domain = textAt(fields.domain, 'domain');
  const list = fields.descriptors;
  if (!Array.isArray(list) || list.length === 0)
    invalid('descriptors', 'at least one descriptor is required');
  if (list.length > REQUEST_BOUNDS.descriptors) {
    invalid(
      'descriptors',
      `at most ${REQUEST_BOUNDS.descriptors} descriptors per request, got ${list.length}`,
    );
  }
  const descriptors = list.map((item, i) => parseDescriptor(item, `descriptors[${i}]`));
  const hits = hitsAt(field(fields, 'hitsAddend', 'hits_addend'), 'hits_addend');
  return { domain, descriptors, hitsAddend: hits === undefined || hits === 0 ? 1 : hits };
}

function parseDescriptor(input: unknown, where: string): RlsDescriptor {
  const fields = objectAt(input, where);
  const list = fields.entries;
  if (!Array.isArray(list) || list.length === 0)
    invalid(`${where}.entries`, 'at least one entry is required');
  if (list.length > REQUEST_BOUNDS.entries) {
    invalid(
      `${where}.entries`,
      `at most ${REQUEST_BOUNDS.entries} entries per descriptor, got ${list.length}`,
    );
  }
  const entries = list.map((item, i) => {
    const entry = objectAt(item, `${where}.entries[${i}]`);
    return {
      key: textAt(entry.key, `${where}.entries[${i}].key`),
      value: textAt(entry.value, `${where}.entries[${i}].value`),
    };
  });
  const limit = fields.limit;
  if (limit !== undefined && limit !== null) {
    invalid(
      `${where}.limit`,
      'limit overrides in the request are not supported; configure the limit in the YAML',
    );
  }
  const hits = field(fields, 'hitsAddend', 'hits_addend');
  // google.protobuf.UInt64Value: `{ value }` from gRPC, a bare number (or string) in JSON.
  const value = typeof hits === 'object' && hits !== null ? ((hits as Fields).value ?? 0) : hits;
  return { entries, hitsAddend: hitsAt(value, `${where}.hits_addend`) };
}

function field(fields: Fields, camel: string, snake: string): unknown {
  return fields[camel] ?? fields[snake];
}

function objectAt(value: unknown, where: string): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    invalid(where, `expected an object, got ${describe(value)}`);
  }
  return value as Fields;
}

function textAt(value: unknown, where: string): string {
  if (typeof value !== 'string' || value.length === 0)
    invalid(where, `expected a non-empty string, got ${describe(value)}`);
  if (value.length > REQUEST_BOUNDS.text)
    invalid(where, `at most ${REQUEST_BOUNDS.text} characters, got ${value.length}`);
  return value;
}

function hitsAt(value: unknown, where: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const number = typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : value;
  if (
    typeof number !== 'number' ||
    !Number.isSafeInteger(number) ||
    number < 0 ||
    number > REQUEST_BOUNDS.hits
  ) {
    invalid(
      where,
      `${describe(typeof value === 'string' ? value.slice(0, 32) : value)} must be an integer from 0 to ${REQUEST_BOUNDS.hits}`,
    );
  }
  return number;
}

function invalid(where: string, message: string): never {
  throw new InvalidRequest(`${where}: ${message}`);
}
