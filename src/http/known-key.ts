/**
 * `apiKeyOrAddress`: a `key` option that counts a request under its API key only when the
 * application knows that key, and under its client address otherwise, exactly as a request
 * without one. An invented, revoked or malformed key therefore never buys a fresh bucket.
 */
import { describe } from '../describe.js';
import { addressKey, apiKeyFrom, DEFAULT_KEY_POLICY, hashApiKey } from './request-keys.js';

type MaybePromise<T> = T | Promise<T>;

export interface ApiKeyOrAddressOptions {
  /** The header carrying the API key, e.g. `'x-api-key'` or `'authorization'`. */
  header: string;
  /** Whether `key` (the header's value, in clear) is a real API key; sync or async. Only `true` counts. */
  known: (key: string) => MaybePromise<boolean>;
}

/** The adapter's key settings (its KeyPolicy), declared here so that public types need no Node types. */
export interface KeySettings {
  readonly apiKeySecret: Uint8Array | undefined;
  readonly ipv6Subnet: number;
}

/** How an adapter resolves the key with what it knows: the header's value, the address, its settings. */
export interface KnownKeyResolver {
  /** The header to read (lowercase). */
  readonly header: string;
  resolve(
    headerValue: string | undefined,
    address: string | undefined,
    policy: KeySettings,
  ): MaybePromise<string>;
}

/** The adapters find the resolver under this symbol (registered, so ESM and CJS copies agree). */
export const KNOWN_KEY_RESOLVER = Symbol.for('floodgate.apiKeyOrAddress');

/** A key function made by `apiKeyOrAddress`. */
export interface ApiKeyOrAddress {
  (req: unknown): MaybePromise<string>;
  readonly [KNOWN_KEY_RESOLVER]: KnownKeyResolver;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Keys a request by its API key when `known(key)` says so, else by its client address (IPv6
 * grouped by the adapter's `ipv6Subnet`). Known keys are hashed (with `apiKeySecret` if set)
 * before they reach the store. As an adapter's `key`, the adapter supplies the address (its
 * trust-proxy rules applied); called directly, it reads `req.headers` and `req.ip` (else the
 * socket's peer) with the default policy.
 * @example
 * app.use(rateLimit({ limiter, key: apiKeyOrAddress({ header: 'x-api-key', known: (key) => apiKeys.has(key) }) }));
 */
export function apiKeyOrAddress(options: ApiKeyOrAddressOptions): ApiKeyOrAddress {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`apiKeyOrAddress: expected options { header, known }, got ${describe(options)}`);
  }
  const { header, known } = options;
  if (typeof header !== 'string' || !HEADER_NAME.test(header)) {
    throw new RangeError(
      `apiKeyOrAddress header: ${describe(header)} must be a header name such as 'x-api-key'`,
    );
  }
  if (typeof known !== 'function') {
    throw new TypeError(
      `apiKeyOrAddress known: expected a function (key) => boolean, got ${describe(known)}`,
    );
  }
  const name = header.toLowerCase();

  function resolve(
    headerValue: string | undefined,
    address: string | undefined,
    policy: KeySettings,
  ): MaybePromise<string> {
    const apiKey = apiKeyFrom(headerValue);
    if (apiKey === undefined) return addressKey(address, policy.ipv6Subnet);
    const answer = known(apiKey);
    const pick = (isKnown: boolean) =>
      isKnown === true ? hashApiKey(apiKey, policy.apiKeySecret) : addressKey(address, policy.ipv6Subnet);
    // Sync answers stay sync (no promise per request); anything else is awaited, thenables included.
    return typeof answer === 'boolean' ? pick(answer) : Promise.resolve(answer).then(pick);
  }

  const keyOf = function apiKeyOrAddressKey(req: unknown): MaybePromise<string> {
    const request = req as { headers?: unknown; ip?: unknown; socket?: { remoteAddress?: unknown } };
    const address = request.ip ?? request.socket?.remoteAddress;
    return resolve(
      headerOf(request.headers, name),
      typeof address === 'string' ? address : undefined,
      DEFAULT_KEY_POLICY,
    );
  };
  return Object.assign(keyOf, { [KNOWN_KEY_RESOLVER]: { header: name, resolve } });
}

/** A header of a Node request (`headers` object) or a Fetch `Headers`, repeated lines joined. */
function headerOf(headers: unknown, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  if (typeof headers !== 'object' || headers === null) return undefined;
  const value = (headers as Record<string, unknown>)[name];
  if (Array.isArray(value)) return value.join(', ');
  return typeof value === 'string' ? value : undefined;
}

/** The resolver behind a key function made by `apiKeyOrAddress`, if it is one. */
export function knownKeyResolver(key: unknown): KnownKeyResolver | undefined {
  return typeof key === 'function' ? (key as Partial<ApiKeyOrAddress>)[KNOWN_KEY_RESOLVER] : undefined;
}
