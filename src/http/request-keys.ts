/**
 * Rate-limit keys of requests: the client address by default (a header anyone can invent never
 * buys a fresh bucket), an API key only where the application opts in (`apiKeyOrAddress`, or
 * `apiKeyHeader`, which trusts any key). API keys are hashed (SHA-256, or HMAC-SHA-256 with `apiKeySecret`) before they reach
 * the store, so they never sit in Redis or in logs in clear. The two kinds of key live in
 * separate namespaces (`key:` and `ip:`), so no address can collide with an API key.
 */
import { base64url, hmacSha256, sha256, utf8 } from '../base/sha256.js';
import { DEFAULT_IPV6_SUBNET, ipIdentity } from './ip.js';

/** API keys longer than this are treated as malformed (no real key is kilobytes long). */
export const MAX_API_KEY_LENGTH = 1024;
/** Visible ASCII only: control characters, spaces and non-ASCII bytes are never part of a real key. */
const API_KEY = /^[\x21-\x7E]+$/;
/** The key of every request whose address is unknown or malformed: they share one bucket. */
export const UNKNOWN_CLIENT = 'ip:unknown';

export interface KeyPolicy {
  /** Header whose every well-formed value is a key of its own (lowercase), or `undefined`: address only. */
  readonly apiKeyHeader: string | undefined;
  /** HMAC secret for API keys; without one, a plain SHA-256 with a fixed label. */
  readonly apiKeySecret: Uint8Array | undefined;
  /** IPv6 grouping prefix length. */
  readonly ipv6Subnet: number;
}

export const DEFAULT_KEY_POLICY: KeyPolicy = {
  apiKeyHeader: undefined,
  apiKeySecret: undefined,
  ipv6Subnet: DEFAULT_IPV6_SUBNET,
};

/**
 * The API key in a header value, or `undefined` when there is none or it is malformed.
 * Repeated header lines arrive joined by `,`: the same key repeated counts as that key;
 * different keys, over-long values, control characters or non-ASCII bytes count as no key, so
 * the request falls back to its address rather than to a fresh bucket of its own making.
 */
export function apiKeyFrom(value: string | undefined): string | undefined {
  if (value === undefined || value.length > MAX_API_KEY_LENGTH * 4) return undefined;
  let key: string | undefined;
  for (const part of value.split(',')) {
    const candidate = part.trim();
    if (candidate === '') continue;
    if (key !== undefined && candidate !== key) return undefined;
    key = candidate;
  }
  if (key === undefined || key.length > MAX_API_KEY_LENGTH || !API_KEY.test(key)) return undefined;
  return key;
}

/** What a plain (secret-less) API key digest starts with, so it is never some other SHA-256 use's. */
const PLAIN_LABEL = utf8('floodgate api key\0');

/** A one-way digest of an API key, safe to store and log: `key:<base64url SHA-256>`. */
export function hashApiKey(apiKey: string, secret: Uint8Array | undefined): string {
  const digest = secret === undefined ? sha256(PLAIN_LABEL, utf8(apiKey)) : hmacSha256(secret, utf8(apiKey));
  return `key:${base64url(digest)}`;
}

/** The address part of a key: `ip:192.0.2.1`, `ip:2001:db8:1:2::/64`, or `ip:unknown`. */
export function addressKey(address: string | undefined, ipv6Subnet: number): string {
  const identity = ipIdentity(address, ipv6Subnet);
  return identity === undefined ? UNKNOWN_CLIENT : `ip:${identity}`;
}

/** The key of a request under `policy`: its API key only when `policy.apiKeyHeader` trusts any, else its address. */
export function defaultKey(
  apiKeyHeaderValue: string | undefined,
  address: string | undefined,
  policy: KeyPolicy,
): string {
  const apiKey = apiKeyFrom(apiKeyHeaderValue);
  if (apiKey !== undefined) return hashApiKey(apiKey, policy.apiKeySecret);
  return addressKey(address, policy.ipv6Subnet);
}
